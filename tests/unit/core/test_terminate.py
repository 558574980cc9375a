"""Topic termination (``PersistentTopic.terminate``) and REACHED_END_OF_TOPIC, on the core."""

import pytest

from pulsarlab.broker import ManualClock, MessageMetadata, SubType
from pulsarlab.broker.errors import NotAllowed, TopicNotFound, TopicTerminated
from pulsarlab.broker.events import EventType
from pulsarlab.broker.message_id import MessageId

T = "persistent://public/default/t"


def test_terminate_returns_the_last_position_and_closes_producers(harness):
    h = harness
    positions = h.publish(T, 3)
    producer_id = h.producer(T)
    assert h.service.terminate_topic(T) == positions[-1]
    h.drain()
    assert [(p.producer_id, p.reason) for p in h.producers_closed] == [
        (producer_id, "terminated")
    ]
    assert producer_id not in h.service.producers
    # Terminating again answers the same position and changes nothing.
    assert h.service.terminate_topic(T) == positions[-1]
    assert h.service.internal_stats(T)["state"] == "Terminated"
    (event,) = h.events_of(EventType.TOPIC_TERMINATED)
    assert (event.topic, event.data["position"]) == (T, list(positions[-1]))


def test_terminate_commits_appended_messages_first(harness):
    h = harness
    (pos,) = h.publish(T, 1, commit=False)
    assert h.service.terminate_topic(T) == pos
    h.drain()
    assert [(r.ledger_id, r.entry_id) for r in h.receipts] == [pos]


def test_empty_topic_terminates_at_entry_minus_one(harness):
    h = harness
    h.service.create_topic(T)
    ledger_id, entry_id = h.service.terminate_topic(T)
    assert entry_id == -1 and ledger_id >= 0


def test_producers_and_sends_are_refused_after_terminate(harness):
    h = harness
    h.publish(T, 1)
    h.service.terminate_topic(T)
    with pytest.raises(TopicTerminated, match="terminated"):
        h.service.create_producer(T, "late")
    with pytest.raises(TopicTerminated):
        h.service.topics[T].ledger.add_entry(b"x", 0)


def test_a_send_that_raced_terminate_gets_topic_terminated(harness):
    h = harness
    producer = h.service.create_producer(T, "p")
    h.service.topics[T].ledger.terminate(h.clock.now_ms())
    with pytest.raises(TopicTerminated) as info:
        h.service.send(producer.producer_id, MessageMetadata(sequence_id=7), b"x")
    assert info.value.code == "TopicTerminatedError"


def test_consumer_hears_the_end_only_after_acking_everything(harness):
    h = harness
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=10)
    positions = h.publish(T, 3)
    assert h.take(c) == positions
    h.service.terminate_topic(T)
    h.drain()
    assert h.reached_end == []  # three messages still unacknowledged
    h.ack(c, positions[:2])
    assert h.reached_end == []
    h.ack(c, positions[2:])
    assert h.reached_end == [c.consumer_id]
    h.ack(c, positions[2:])
    assert h.reached_end == [c.consumer_id]  # told once


def test_every_consumer_of_a_drained_subscription_hears_it_at_terminate(harness):
    h = harness
    c1 = h.subscribe(T, "s", "c1", SubType.Failover, permits=10)
    c2 = h.subscribe(T, "s", "c2", SubType.Failover, permits=10)
    positions = h.publish(T, 2)
    h.ack(c1, positions[-1:], cumulative=True)
    h.service.terminate_topic(T)
    h.drain()
    assert sorted(h.reached_end) == sorted([c1.consumer_id, c2.consumer_id])


def test_subscribing_at_the_end_of_a_terminated_topic_hears_it_at_once(harness):
    h = harness
    h.publish(T, 2)
    h.service.terminate_topic(T)
    late = h.subscribe(T, "latest", "c", SubType.Exclusive)
    assert h.reached_end == [late.consumer_id]
    early = h.subscribe(T, "from-start", "c", SubType.Exclusive, initial_position_earliest=True)
    assert h.reached_end == [late.consumer_id]  # two messages to consume first
    h.flow(early, 10)
    h.ack(early, h.take(early)[-1:], cumulative=True)
    assert h.reached_end == [late.consumer_id, early.consumer_id]


def test_reader_hears_the_end_after_reading_everything(harness):
    h = harness
    positions = h.publish(T, 2)
    h.service.terminate_topic(T)
    reader = h.subscribe(T, "reader-1", "r", SubType.Exclusive, permits=10, durable=False,
                         is_reader=True, start_message_id=MessageId.earliest)
    assert h.take(reader) == positions and h.reached_end == []
    h.ack(reader, positions[-1:], cumulative=True)
    assert h.reached_end == [reader.consumer_id]


def test_seek_back_and_drain_again_tells_again(harness):
    h = harness
    c = h.subscribe(T, "s", "c", SubType.Exclusive, permits=10)
    h.publish(T, 2)
    h.service.terminate_topic(T)
    h.ack(c, h.take(c)[-1:], cumulative=True)
    assert h.reached_end == [c.consumer_id]
    h.service.seek(c.consumer_id, message_id=MessageId.earliest)
    h.drain()
    # The seek disconnected the consumer (Pulsar's rule); its client subscribes again.
    again = h.subscribe(T, "s", "c", SubType.Exclusive, permits=10)
    h.ack(again, h.take(again)[-1:], cumulative=True)
    assert h.reached_end == [c.consumer_id, again.consumer_id]


def test_partitioned_topics_terminate_through_the_partitioned_path(harness):
    h = harness
    h.service.create_partitioned_topic(T, 2)
    with pytest.raises(NotAllowed, match="partitioned topic is not allowed"):
        h.service.terminate_topic(T)
    ends = h.service.terminate_partitioned_topic(T)
    assert sorted(ends) == [0, 1]
    assert all(entry == -1 for _ledger, entry in ends.values())
    with pytest.raises(TopicTerminated):
        h.service.create_producer(f"{T}-partition-1")
    h.service.create_topic("persistent://public/default/plain")
    with pytest.raises(NotAllowed, match="please use terminate commands"):
        h.service.terminate_partitioned_topic("persistent://public/default/plain")


def test_unknown_and_non_persistent_topics_are_refused(harness):
    with pytest.raises(TopicNotFound):
        harness.service.terminate_topic("persistent://public/default/nope")
    with pytest.raises(NotAllowed, match="non-persistent"):
        harness.service.terminate_topic("non-persistent://public/default/np")


def test_termination_survives_a_restart(make_harness, durable_storage_factory):
    clock = ManualClock()
    h = make_harness(storage=durable_storage_factory(), clock=clock)
    c = h.subscribe(T, "s", "c", SubType.Exclusive, permits=10)
    positions = h.publish(T, 3)
    end = h.service.terminate_topic(T)
    h.ack(c, h.take(c)[:1], cumulative=True)
    h.service.close()
    h2 = make_harness(storage=durable_storage_factory(), clock=clock)
    assert h2.service.last_message_id(T) == end
    assert h2.service.terminate_topic(T) == end
    with pytest.raises(TopicTerminated):
        h2.service.create_producer(T)
    c2 = h2.subscribe(T, "s", "c", SubType.Exclusive, permits=10)
    assert h2.take(c2) == positions[1:]
    h2.ack(c2, positions[-1:], cumulative=True)
    assert h2.reached_end == [c2.consumer_id]
    h2.advance(24 * 3600 * 1000)  # housekeeping opens no new ledger on a terminated one
    assert h2.service.last_message_id(T) == end


def test_empty_terminated_topic_survives_a_restart(make_harness, durable_storage_factory):
    clock = ManualClock()
    h = make_harness(storage=durable_storage_factory(), clock=clock)
    h.service.create_topic(T)
    end = h.service.terminate_topic(T)
    h.service.close()
    h2 = make_harness(storage=durable_storage_factory(), clock=clock)
    assert h2.service.last_message_id(T) == end
    c = h2.subscribe(T, "s", "c", SubType.Exclusive, initial_position_earliest=True)
    assert h2.reached_end == [c.consumer_id]


def test_a_deleted_terminated_topic_comes_back_open(harness):
    h = harness
    h.publish(T, 1)
    h.service.terminate_topic(T)
    h.service.delete_topic(T, force=True)
    h.service.create_producer(T, "again")
