"""Received messages: fields read lazily from the batch item and the entry's delivery."""

from __future__ import annotations

from pulsarlab.broker import MessageId
from pulsarlab.broker.client.ack_grouping import AckGroupingTracker
from pulsarlab.broker.client.message import Delivery, Message, TopicMessageId, delivered
from pulsarlab.broker.format.batch import OutgoingMessage, batch_items, encode_batch

TOPIC = "persistent://public/default/t-partition-2"


def _received() -> list[Message]:
    outgoing = [
        OutgoingMessage(b"one", {"a": "1"}, "k1", b"o1", 111, 7),
        OutgoingMessage(b"", {}, None, None, 0, 8, null_value=True),
        OutgoingMessage(b"three", {}, "k3", None, 333, 9),
    ]
    items = batch_items(encode_batch(outgoing), 3)
    delivery = Delivery(TOPIC, 2, 5, 6, 3, 1_000, "prod", b"v1", 4, None)
    return [delivered(item, delivery, i, "owner") for i, item in enumerate(items)]


def _eager(data: bytes, index: int, **fields: object) -> Message:
    return Message(data, publish_time=1_000, producer_name="prod", schema_version=b"v1",
                   message_id=MessageId(2, 5, 6, index, 3), topic=TOPIC, redelivery_count=4,
                   **fields)  # type: ignore[arg-type]


def _fields(m: Message) -> tuple:
    return (m.data(), m.value(), m.properties(), m.partition_key(), m.ordering_key(),
            m.publish_timestamp(), m.event_timestamp(), m.message_id(), m.topic_name(),
            m.redelivery_count(), m.schema_version(), m.producer_name(), m.has_null_value(),
            m.sequence_id())


def test_a_lazily_read_message_has_the_fields_of_an_eager_one():
    lazy = _received()
    eager = [
        _eager(b"one", 0, properties={"a": "1"}, partition_key="k1", ordering_key=b"o1",
               event_time=111, sequence_id=7),
        _eager(b"", 1, null_value=True, sequence_id=8),
        _eager(b"three", 2, partition_key="k3", event_time=333, sequence_id=9),
    ]
    for got, want in zip(lazy, eager, strict=True):
        assert _fields(got) == _fields(want)
    assert lazy[1].value() is None and lazy[1].has_null_value()
    assert lazy[0].ordering_key() == "o1" and lazy[2].ordering_key() == ""


def test_the_message_id_is_made_once_and_knows_its_topic():
    m = _received()[2]
    mid = m.message_id()
    assert isinstance(mid, TopicMessageId) and mid.topic_name() == TOPIC
    assert (mid.partition(), mid.ledger_id(), mid.entry_id(), mid.batch_index(),
            mid.batch_size()) == (2, 5, 6, 2, 3)
    assert m.message_id() is mid


def test_properties_are_a_copy():
    m = _received()[0]
    m.properties()["a"] = "changed"
    assert m.properties() == {"a": "1"}


def test_a_message_built_by_hand_has_the_default_id():
    assert Message(b"x").message_id() == MessageId()
    assert Message(b"x").topic_name() == ""


def test_acking_a_message_is_acking_its_id():
    by_message, by_id = AckGroupingTracker(), AckGroupingTracker()
    received = _received()
    for tracker in (by_message, by_id):
        tracker.on_batch_received((5, 6), 3)
    for m in received[:2]:
        by_message.add_individual(m)
        by_id.add_individual(m.message_id())
    assert by_message.pending_batch_bits((5, 6)) == by_id.pending_batch_bits((5, 6)) == 0b100
    by_message.add_individual(received[2])
    by_id.add_individual(received[2].message_id())
    assert by_message.flush().individual == by_id.flush().individual == [(5, 6)]
