"""R-STORE through the broker core: receipts only after sync, recovery after a crash."""

from pulsarlab.broker import ManualClock, SubType

T = "durable"


def test_receipt_and_dispatch_wait_for_commit(harness):
    h = harness
    c = h.subscribe(T, "s", "c", SubType.Exclusive, permits=10)
    (pos,) = h.publish(T, 1, commit=False)
    h.drain()
    assert h.receipts == [] and h.take(c) == []
    h.commit()
    assert [(r.ledger_id, r.entry_id) for r in h.receipts] == [pos]
    assert h.take(c) == [pos]


def test_group_commit_releases_all_receipts_in_order(harness):
    h = harness
    positions = h.publish(T, 10, commit=False)
    h.commit()
    assert [(r.ledger_id, r.entry_id) for r in h.receipts] == positions


def test_crash_then_restart_keeps_confirmed_messages_and_cursor(
    make_harness, durable_storage_factory
):
    clock = ManualClock()
    h = make_harness(storage=durable_storage_factory(), clock=clock)
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=100)
    msgs = h.publish(T, 6)
    h.take(c)
    h.ack(c, [msgs[0], msgs[3]])
    h.advance(1000)  # the cursor is persisted at most once a second
    # Crash: the first broker is abandoned without close().
    h2 = make_harness(storage=durable_storage_factory(), clock=clock)
    c2 = h2.subscribe(T, "s", "c2", SubType.Shared, permits=100)
    assert sorted(h2.take(c2)) == [msgs[1], msgs[2], msgs[4], msgs[5]]
    new = h2.publish(T, 1)
    assert new[0][0] > msgs[-1][0]  # a new ledger after recovery
    assert h2.take(c2) == new


def test_clean_close_persists_cursor_immediately(make_harness, durable_storage_factory):
    clock = ManualClock()
    h = make_harness(storage=durable_storage_factory(), clock=clock)
    c = h.subscribe(T, "s", "c", SubType.Exclusive, permits=100)
    msgs = h.publish(T, 3)
    h.take(c)
    h.ack(c, [msgs[1]], cumulative=True)
    h.service.close()
    h2 = make_harness(storage=durable_storage_factory(), clock=clock)
    c2 = h2.subscribe(T, "s", "c", SubType.Exclusive, permits=100)
    assert h2.take(c2) == [msgs[2]]


def test_partitioned_topic_metadata_survives_restart(make_harness, durable_storage_factory):
    clock = ManualClock()
    h = make_harness(storage=durable_storage_factory(), clock=clock)
    h.service.create_partitioned_topic("parts", 3)
    h.service.close()
    h2 = make_harness(storage=durable_storage_factory(), clock=clock)
    assert h2.service.get_partitioned_topic_metadata("parts") == 3
    assert h2.service.list_topics() == ["persistent://public/default/parts"]


def test_fully_acked_ledgers_are_trimmed(make_harness):
    h = make_harness(managed_ledger_max_entries_per_ledger=2)
    c = h.subscribe(T, "s", "c", SubType.Exclusive, permits=100)
    msgs = h.publish(T, 6)
    h.take(c)
    ledger = h.service.topics[f"persistent://public/default/{T}"].ledger
    before = [info.ledger_id for info in ledger.ledgers]
    assert len(before) >= 3
    h.ack(c, [msgs[3]], cumulative=True)
    h.advance(h.service.settings.retention_check_interval_ms)
    after = [info.ledger_id for info in ledger.ledgers]
    assert msgs[0][0] not in after and msgs[2][0] not in after
    assert msgs[4][0] in after


def test_caught_up_consumer_survives_a_ledger_rollover(make_harness):
    """Regression: after a rollover the cursor pointed past the old ledger and the
    dispatcher looped forever reading nothing."""
    h = make_harness(managed_ledger_max_entries_per_ledger=3)
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=100)
    first = h.publish(T, 3)
    assert h.take(c) == first
    h.ack(c, first)
    h.advance(h.service.settings.retention_check_interval_ms)  # rollover + trim
    h.flow(c, 1)  # used to hang here
    more = h.publish(T, 2)
    assert h.take(c) == more


def test_rollover_by_time_with_a_caught_up_exclusive_consumer(make_harness):
    h = make_harness(managed_ledger_max_ledger_rollover_time_minutes=1,
                     managed_ledger_min_ledger_rollover_time_minutes=0)
    c = h.subscribe(T, "s", "c", SubType.Exclusive, permits=100)
    first = h.publish(T, 2)
    assert h.take(c) == first
    h.advance(61_000)
    h.ack(c, [first[-1]], cumulative=True)
    assert h.publish(T, 1) == h.take(c)
