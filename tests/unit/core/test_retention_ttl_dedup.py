"""R-RETENTION and de-duplication: retention keeps acked ledgers, TTL acks old messages,
repeated (producer, sequence id) pairs are dropped with their original receipt."""

import pytest

from pulsarlab.broker import ManualClock, MessageMetadata, SubType
from pulsarlab.broker.errors import InvalidArgument
from pulsarlab.broker.events import EventType

T = "policy"
NS = "public/default"


def _ledger_ids(h):
    return [i.ledger_id for i in h.service.topics[f"persistent://{NS}/{T}"].ledger.ledgers]


def test_no_retention_deletes_consumed_ledgers(make_harness):
    h = make_harness(managed_ledger_max_entries_per_ledger=2)
    c = h.subscribe(T, "s", "c", SubType.Exclusive, permits=100)
    msgs = h.publish(T, 6)
    h.ack(c, [msgs[-1]], cumulative=True)
    h.advance(h.service.settings.retention_check_interval_ms)
    assert _ledger_ids(h) == [_ledger_ids(h)[-1]]


def test_retention_time_keeps_acked_ledgers_until_it_passes(make_harness):
    h = make_harness(managed_ledger_max_entries_per_ledger=2)
    h.service.set_namespace_policy(
        NS, "retention_policies", {"retentionTimeInMinutes": 60, "retentionSizeInMB": -1}
    )
    c = h.subscribe(T, "s", "c", SubType.Exclusive, permits=100)
    msgs = h.publish(T, 6)
    h.ack(c, [msgs[-1]], cumulative=True)
    h.advance(h.service.settings.retention_check_interval_ms)
    kept = _ledger_ids(h)
    assert msgs[0][0] in kept
    h.advance(60 * 60_000)
    assert msgs[0][0] not in _ledger_ids(h)


def test_retention_size_keeps_the_newest_within_quota(make_harness):
    h = make_harness(managed_ledger_max_entries_per_ledger=1)
    h.service.set_namespace_policy(
        NS, "retention_policies", {"retentionTimeInMinutes": -1, "retentionSizeInMB": 1}
    )
    c = h.subscribe(T, "s", "c", SubType.Exclusive, permits=100)
    msgs = h.publish(T, 4, payload=b"x" * 400_000)
    h.ack(c, [msgs[-1]], cumulative=True)
    h.advance(h.service.settings.retention_check_interval_ms)
    kept = _ledger_ids(h)
    assert msgs[0][0] not in kept and msgs[-1][0] in kept
    ledger = h.service.topics[f"persistent://{NS}/{T}"].ledger
    assert ledger.total_size - ledger.ledgers[-1].size <= 1024 * 1024


def test_ttl_acks_expired_messages_including_delayed(make_harness):
    h = make_harness()
    h.service.set_namespace_policy(NS, "message_ttl_in_seconds", 60)
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=100)
    (delayed,) = h.publish(T, 1, deliver_at=h.clock.now_ms() + 3_600_000)
    old = h.publish(T, 2)
    h.take(c)
    h.advance(61_000)
    fresh = h.publish(T, 1)
    h.advance(5 * 60_000)  # the expiry check runs every 5 minutes
    sub = h.service.topics[f"persistent://{NS}/{T}"].subscriptions["s"]
    assert sub.cursor.is_deleted(delayed) and all(sub.cursor.is_deleted(m) for m in old)
    assert sub.cursor.is_deleted(fresh[0])  # also older than 60 s by now
    assert len(sub.dispatcher.delayed) == 0
    expired = h.events_of(EventType.EXPIRED)
    assert expired and expired[0].data["entries"] >= 3


def test_ttl_spares_young_messages(make_harness):
    h = make_harness()
    h.service.set_namespace_policy(NS, "message_ttl_in_seconds", 600)
    h.subscribe(T, "s", "c", SubType.Shared)
    msgs = h.publish(T, 2)
    h.advance(5 * 60_000)
    sub = h.service.topics[f"persistent://{NS}/{T}"].subscriptions["s"]
    assert not sub.cursor.is_deleted(msgs[0])


def _send(h, producer, seq):
    h.service.send(producer, MessageMetadata(sequence_id=seq), b"d")


def test_dedup_drops_repeats_and_answers_like_pulsar(make_harness):
    h = make_harness(broker_deduplication_enabled=True)
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=100)
    p = h.service.create_producer(T, "prod-1").producer_id
    for seq in (0, 1, 1, 2, 0):
        _send(h, p, seq)
    h.commit()
    receipts = [(r.sequence_id, (r.ledger_id, r.entry_id)) for r in h.receipts]
    assert [s for s, _ in receipts] == [0, 1, 1, 2, 0]
    # A duplicate's receipt carries message id -1:-1, as Pulsar's (never the original's).
    assert receipts[2][1] == receipts[4][1] == (-1, -1)
    assert receipts[1][1] >= (0, 0) and receipts[0][1] >= (0, 0)
    assert len(h.take(c)) == 3
    dedup = h.events_of(EventType.DEDUPLICATED)
    assert [e.data["original"] for e in dedup] == [list(receipts[1][1]), list(receipts[0][1])]
    assert len(h.events_of(EventType.PUBLISHED)) == 3


def test_dedup_survives_a_crash(make_harness, durable_storage_factory):
    clock = ManualClock()
    h = make_harness(storage=durable_storage_factory(), clock=clock)
    h.service.set_namespace_policy(NS, "deduplication_enabled", True)
    p = h.service.create_producer(T, "prod-1").producer_id
    for seq in range(3):
        _send(h, p, seq)
    h.commit()
    # crash without close; the restarted broker must know seq 0..2 already
    h2 = make_harness(storage=durable_storage_factory(), clock=clock)
    producer = h2.service.create_producer(T, "prod-1")
    assert producer.last_sequence_id == 2
    c = h2.subscribe(T, "s", "c", SubType.Shared, permits=100, initial_position_earliest=True)
    _send(h2, producer.producer_id, 2)
    _send(h2, producer.producer_id, 3)
    h2.commit()
    assert len(h2.take(c)) == 4


def test_dedup_off_by_default_keeps_repeats(harness):
    h = harness
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=100)
    p = h.service.create_producer(T, "prod-1").producer_id
    _send(h, p, 0)
    _send(h, p, 0)
    h.commit()
    assert len(h.take(c)) == 2


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("message_ttl_in_seconds", -1, "TTL"),
        ("retention_policies", {"retentionTimeInMinutes": -2, "retentionSizeInMB": 0}, "retention"),
        ("backlog_quota", {"limitSize": 10, "policy": "nope"}, "backlog quota policy"),
        ("deduplication_enabled", "yes", "bool"),
    ],
)
def test_bad_policies_are_refused(harness, key, value, message):
    with pytest.raises(InvalidArgument, match=message):
        harness.service.set_namespace_policy(NS, key, value)


def test_bad_namespace_is_refused(harness):
    with pytest.raises(InvalidArgument, match="tenant/namespace"):
        harness.service.set_namespace_policy("nons", "message_ttl_in_seconds", 5)
