"""Topic compaction (``TwoPhaseCompactor``, ``CompactedTopicImpl``) and read_compacted
consumers, on the core."""

import pytest

from pulsarlab.broker import SubType
from pulsarlab.broker.compaction import COMPACTION_SUBSCRIPTION
from pulsarlab.broker.errors import NotAllowed
from pulsarlab.broker.events import EventType
from pulsarlab.broker.message_id import MessageId

T = "persistent://public/default/table"


def publish_table(h):
    """k1=a, k2=b, k1=c, k3=d, k2=<tombstone>, (no key), k3=e: latest are k1@2, k3@6."""
    pos = []
    for key, value in [("k1", b"a"), ("k2", b"b"), ("k1", b"c"), ("k3", b"d"), ("k2", b""),
                       (None, b"n"), ("k3", b"e")]:
        pos += h.publish(T, 1, key=key, payload=value)
    return pos


def test_status_is_not_run_until_compacted_then_success(harness):
    h = harness
    pos = publish_table(h)
    assert h.service.compaction_status(T) == {"status": "NOT_RUN", "lastError": ""}
    assert h.service.compact_topic(T) == {"status": "SUCCESS", "lastError": ""}
    compacted = h.service.topics[T].compacted
    assert [p for p, _ in compacted.entries] == [pos[2], pos[6]]
    assert compacted.horizon == pos[-1] and compacted.removed == 5
    (event,) = h.events_of(EventType.COMPACTED)
    assert event.data["kept"] == 2 and event.data["removed"] == 5
    # The __compaction subscription's mark-delete is the horizon; it names the ledger.
    cursor = h.service.topics[T].subscriptions[COMPACTION_SUBSCRIPTION].cursor
    assert cursor.mark_delete_position == pos[-1]
    assert cursor.properties["CompactedTopicLedger"] == compacted.ledger_id


def test_read_compacted_consumer_sees_latest_per_key_then_the_tail(harness):
    h = harness
    pos = publish_table(h)
    h.service.compact_topic(T)
    tail = h.publish(T, 1, key="k1", payload=b"f") + h.publish(T, 1, key="k2", payload=b"")
    c = h.subscribe(T, "s", "c", permits=100, initial_position_earliest=True,
                    read_compacted=True)
    assert h.take(c) == [pos[2], pos[6], *tail]
    # A consumer without read_compacted sees the whole log.
    full = h.subscribe(T, "full", "f", permits=100, initial_position_earliest=True)
    assert h.take(full) == [*pos, *tail]


def test_read_compacted_reads_in_permit_sized_steps_and_acks_move_the_cursor(harness):
    h = harness
    pos = publish_table(h)
    h.service.compact_topic(T)
    c = h.subscribe(T, "s", "c", permits=1, initial_position_earliest=True,
                    read_compacted=True)
    assert h.take(c) == [pos[2]]
    h.ack(c, [pos[2]])
    h.flow(c, 1)
    assert h.take(c) == [pos[6]]
    h.ack(c, [pos[6]], cumulative=True)
    sub = h.service.topics[T].subscriptions["s"]
    assert sub.cursor.mark_delete_position == pos[6]
    h.flow(c, 5)
    assert h.take(c) == []


def test_a_rewind_reads_the_compacted_ledger_again(harness):
    h = harness
    pos = publish_table(h)
    h.service.compact_topic(T)
    c = h.subscribe(T, "s", "c", permits=10, initial_position_earliest=True,
                    read_compacted=True)
    assert h.take(c) == [pos[2], pos[6]]
    h.service.redeliver_unacknowledged(c.consumer_id)
    h.drain()
    assert h.take(c) == [pos[2], pos[6]]


def test_compaction_keeps_earlier_results_after_trimming_and_recompacts(harness):
    h = harness
    pos = publish_table(h)
    h.service.compact_topic(T)
    first_ledger = h.service.topics[T].compacted.ledger_id
    more = h.publish(T, 1, key="k3", payload=b"g") + h.publish(T, 1, key="k4", payload=b"h")
    h.service.compact_topic(T)
    compacted = h.service.topics[T].compacted
    assert [p for p, _ in compacted.entries] == [pos[2], *more]
    assert compacted.ledger_id not in (-1, first_ledger)
    stats = h.service.internal_stats(T)["compactedLedger"]
    assert (stats["ledgerId"], stats["entries"]) == (compacted.ledger_id, 3)


@pytest.mark.parametrize("sub_type", [SubType.Shared, SubType.Key_Shared])
def test_read_compacted_is_refused_on_shared_subscriptions(harness, sub_type):
    h = harness
    h.publish(T, 1, key="k")
    with pytest.raises(NotAllowed, match="readCompacted only allowed on failover or exclusive"):
        h.subscribe(T, "s", "c", sub_type, read_compacted=True)
    assert "s" not in h.service.topics[T].subscriptions


def test_compaction_of_non_persistent_or_partitioned_topics_is_refused(harness):
    h = harness
    h.service.create_partitioned_topic("persistent://public/default/p", 2)
    with pytest.raises(NotAllowed, match="partitioned"):
        h.service.compact_topic("persistent://public/default/p")
    h.publish("non-persistent://public/default/np", 1)
    with pytest.raises(NotAllowed, match="non-persistent"):
        h.service.compact_topic("non-persistent://public/default/np")


def test_last_message_id_for_a_read_compacted_reader_is_the_last_compacted_entry(harness):
    h = harness
    pos = publish_table(h)
    h.publish(T, 1, key="k1", payload=b"")  # the last message is a tombstone
    h.service.compact_topic(T)
    reader = h.subscribe(T, "r", "r", durable=False, is_reader=True,
                         start_message_id=MessageId.earliest, read_compacted=True)
    topic = h.service.topics[T]
    assert topic.last_message_id_for(reader) == (*pos[6], -1)
    plain = h.subscribe(T, "p", "p", durable=False, is_reader=True,
                        start_message_id=MessageId.earliest)
    assert topic.last_message_id_for(plain)[:2] != pos[6]


def test_threshold_triggers_compaction_at_housekeeping(make_harness):
    h = make_harness(broker_service_compaction_threshold_in_bytes=1000,
                     broker_service_compaction_monitor_interval_in_seconds=60)
    h.publish(T, 3, key="k", payload=b"v" * 10)
    h.advance(61_000)
    assert h.service.topics[T].compacted.status == "NOT_RUN"  # below the threshold
    h.publish(T, 3, key="k", payload=b"v" * 400)
    h.advance(61_000)
    compacted = h.service.topics[T].compacted
    assert compacted.status == "SUCCESS" and len(compacted.entries) == 1


def test_namespace_compaction_threshold_overrides_the_broker_setting(harness):
    h = harness
    h.service.set_namespace_policy("public/default", "compaction_threshold", 50)
    h.publish(T, 2, key="k", payload=b"v" * 100)
    h.advance(61_000)
    assert h.service.topics[T].compacted.status == "SUCCESS"


def test_the_compacted_ledger_survives_a_restart(durable_storage_factory, make_harness):
    h = make_harness(storage=durable_storage_factory())
    pos = publish_table(h)
    h.service.compact_topic(T)
    h.service.close()
    h2 = make_harness(storage=durable_storage_factory())
    compacted = h2.service.get_topic(T).compacted
    assert [p for p, _ in compacted.entries] == [pos[2], pos[6]]
    assert h2.service.compaction_status(T)["status"] == "SUCCESS"
    c = h2.subscribe(T, "s", "c", permits=10, initial_position_earliest=True,
                     read_compacted=True)
    assert h2.take(c) == [pos[2], pos[6]]
    h2.service.close()


def test_deleting_the_topic_forgets_its_compacted_ledger(harness):
    h = harness
    publish_table(h)
    h.service.compact_topic(T)
    h.service.delete_topic(T, force=True)
    h.publish(T, 1, key="k", payload=b"v", producer_name="again")
    assert h.service.topics[T].compacted.entries == []
    assert h.service.compaction_status(T)["status"] == "NOT_RUN"
