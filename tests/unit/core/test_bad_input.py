"""Bad input gets a clear one-line error and changes nothing."""

import pytest

from pulsarlab.broker import BrokerSettings, MessageMetadata, SubType
from pulsarlab.broker.errors import (
    ConsumerNotFound,
    InvalidArgument,
    InvalidTopicName,
    MessageTooBig,
    NotAllowed,
    TopicAlreadyExists,
    TopicNotFound,
)


def test_oversize_message_rejected_and_nothing_stored(harness):
    producer = harness.producer("big")
    limit = harness.service.settings.max_message_size
    assert limit == 5 * 1024 * 1024
    with pytest.raises(MessageTooBig, match="exceeds max_message_size"):
        harness.service.send(producer, MessageMetadata(), b"x" * (limit + 1))
    harness.commit()
    ledger = harness.service.topics["persistent://public/default/big"].ledger
    assert ledger.number_of_entries == 0
    harness.service.send(producer, MessageMetadata(), b"x" * limit)
    harness.commit()
    assert ledger.number_of_entries == 1


def test_bad_topic_name(harness):
    with pytest.raises(InvalidTopicName):
        harness.service.create_producer("persistent://only/two")


def test_unknown_setting_and_wrong_type():
    with pytest.raises(InvalidArgument, match="unknown broker setting 'max_msg_size'"):
        BrokerSettings.from_kwargs(max_msg_size=1)
    with pytest.raises(InvalidArgument, match="must be an int"):
        BrokerSettings.from_kwargs(max_message_size="big")


def test_flow_with_bad_permits(harness):
    c = harness.subscribe("t", "s", "c")
    for bad in (0, -1, "5", True):
        with pytest.raises(InvalidArgument, match="flow permits"):
            harness.service.flow(c.consumer_id, bad)
    assert c.permits == 0


def test_unknown_consumer(harness):
    with pytest.raises(ConsumerNotFound):
        harness.service.flow(12345, 1)


def test_partitioned_topic_rules(harness):
    s = harness.service
    s.create_partitioned_topic("pt", 2)
    with pytest.raises(TopicAlreadyExists):
        s.create_partitioned_topic("pt", 2)
    with pytest.raises(NotAllowed, match="partitioned topic with 2 partitions"):
        s.create_producer("pt")
    with pytest.raises(TopicNotFound, match="partition 5 does not exist"):
        s.create_producer("pt-partition-5")
    with pytest.raises(InvalidArgument, match="partitions must be an int >= 1"):
        s.create_partitioned_topic("other", 0)


def test_auto_creation_can_be_turned_off(make_harness):
    h = make_harness(allow_auto_topic_creation=False)
    with pytest.raises(TopicNotFound, match="does not exist"):
        h.subscribe("nope", "s", "c")
    h.service.create_topic("yes")
    h.subscribe("yes", "s", "c")


def test_key_hash_ranges_refused_on_shared(harness):
    with pytest.raises(InvalidArgument, match="Exclusive/Failover"):
        harness.subscribe("t", "s", "c", SubType.Shared, key_hash_ranges=[(0, 10)])
    assert "persistent://public/default/t" not in harness.service.topics


def test_bad_position_in_ack(harness):
    c = harness.subscribe("t", "s", "c")
    with pytest.raises(InvalidArgument, match="not a message id"):
        harness.service.ack(c.consumer_id, ["1:2"])


def test_service_keeps_serving_after_errors(harness):
    c = harness.subscribe("ok", "s", "c", permits=10)
    with pytest.raises(MessageTooBig):
        harness.service.send(harness.producer("ok"), MessageMetadata(), b"x" * (6 << 20))
    msgs = harness.publish("ok", 2)
    assert harness.take(c) == msgs
