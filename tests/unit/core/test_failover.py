"""R-FAILOVER: active consumer per partition, priorities, the ring, delay and rewind."""

from pulsarlab.broker import SubType
from pulsarlab.broker.events import EventType


def _subscribe_all(h, topic, partitions, names, priorities=None):
    """Each consumer subscribes to every partition, as a partitioned consumer does."""
    consumers = {}
    for name in names:
        for p in range(partitions):
            consumers[(name, p)] = h.subscribe(
                f"{topic}-partition-{p}", "fo", name, SubType.Failover,
                priority_level=(priorities or {}).get(name, 0),
            )
    return consumers


def _active(h, topic, p):
    sub = h.service.topics[f"persistent://public/default/{topic}-partition-{p}"].subscriptions["fo"]
    active = sub.dispatcher.active_consumer
    return active.consumer_name if active else None


def test_two_partitions_four_consumers_then_a_and_b_leave(harness):
    h = harness
    h.service.create_partitioned_topic("fo2", 2)
    consumers = _subscribe_all(h, "fo2", 2, ["A", "B", "C", "D"])
    assert [_active(h, "fo2", p) for p in range(2)] == ["A", "B"]
    for name in ("A", "B"):
        for p in range(2):
            h.close(consumers[(name, p)])
    assert [_active(h, "fo2", p) for p in range(2)] == ["C", "D"]


def test_nine_partitions_three_consumers(harness):
    h = harness
    h.service.create_partitioned_topic("fo9", 9)
    _subscribe_all(h, "fo9", 9, ["C", "A", "B"])  # subscription order does not matter
    owners = [_active(h, "fo9", p) for p in range(9)]
    assert owners == ["A", "B", "C"] * 3


def test_priority_levels(harness):
    h = harness
    h.service.create_partitioned_topic("fop", 4)
    _subscribe_all(h, "fop", 4, ["A", "B", "C", "D"], {"A": 1, "B": 0, "C": 0, "D": 2})
    assert [_active(h, "fop", p) for p in range(4)] == ["B", "C", "B", "C"]


def test_consumers_are_told_who_is_active(harness):
    """``notifyActiveConsumerChanged`` runs when the (delayed) switch completes and tells
    every consumer; a consumer whose arrival changes nothing is told at once
    (``internalAddConsumer``)."""
    h = harness
    a = h.subscribe("fo-notify", "fo", "A", SubType.Failover)
    assert h.active == {}  # the first pick waits for the failover delay too
    h.advance(1000)
    assert h.active == {a.consumer_id: True}
    h.active.clear()
    b = h.subscribe("fo-notify", "fo", "B", SubType.Failover)  # A stays active
    assert h.active == {b.consumer_id: False}
    assert h.events_of(EventType.ACTIVE_CONSUMER_CHANGED)


def test_non_partitioned_uses_the_consumer_ring_not_join_order(make_harness):
    from pulsarlab.broker.selectors import pick_active_consumer

    picks = set()
    for order in (["A", "B", "C"], ["C", "B", "A"]):
        h = make_harness()
        for name in order:
            h.subscribe("ring-topic", "fo", name, SubType.Failover)
        sub = h.service.topics["persistent://public/default/ring-topic"].subscriptions["fo"]
        picks.add(sub.dispatcher.active_consumer.consumer_name)
        expected = pick_active_consumer(
            sub.consumers, -1, "persistent://public/default/ring-topic"
        )
        assert sub.dispatcher.active_consumer is expected
    assert len(picks) == 1


def test_switch_waits_for_failover_delay_then_rewinds_with_duplicates(harness):
    h = harness
    h.service.create_partitioned_topic("fod", 1)
    t = "fod-partition-0"
    b = h.subscribe(t, "fo", "B", SubType.Failover, permits=100)
    h.advance(1000)
    msgs = h.publish(t, 4)
    assert h.take(b) == msgs
    h.ack(b, [msgs[0], msgs[2]])  # 1 and 3 stay unacked at B
    h.active.clear()
    a = h.subscribe(t, "fo", "A", SubType.Failover, permits=100)  # A sorts first: switch
    h.advance(999)
    assert h.take(a) == []  # still inside the failover delay
    assert h.active == {}  # nobody is told before the switch completes
    h.advance(1)
    assert h.active[a.consumer_id] is True and h.active[b.consumer_id] is False
    # Rewound to after the mark-delete: everything not acked goes to A again.
    assert h.take(a) == [msgs[1], msgs[3]]
    assert h.events_of(EventType.CURSOR_REWOUND)


def test_first_failover_pick_waits_for_the_delay(harness):
    """``pickAndScheduleActiveConsumer`` treats the first pick (no previous active consumer)
    as a change: ``scheduleReadOnActiveConsumer`` delays the first read on Failover too."""
    h = harness
    c = h.subscribe("fo-first", "fo", "A", SubType.Failover, permits=10)
    msgs = h.publish("fo-first", 2)
    h.advance(999)
    assert h.take(c) == []
    h.advance(1)
    assert h.take(c) == msgs


def test_exclusive_reads_at_once_and_is_never_told(harness):
    """``scheduleReadOnActiveConsumer`` skips the delay for Exclusive, and
    ``notifyActiveConsumerChanged`` only notifies Failover consumers."""
    h = harness
    c = h.subscribe("ex-now", "ex", "A", SubType.Exclusive, permits=10)
    msgs = h.publish("ex-now", 2)
    assert h.take(c) == msgs
    assert h.active == {}


def test_a_change_during_a_pending_switch_keeps_the_first_deadline(harness):
    """``readOnActiveConsumerTask != null``: a pending switch is not rescheduled; when it
    fires it rewinds and reads for whoever is active then."""
    h = harness
    t = "fo-pending"
    b = h.subscribe(t, "fo", "B", SubType.Failover, permits=10)
    h.advance(600)
    a = h.subscribe(t, "fo", "A", SubType.Failover, permits=10)  # A sorts first
    msgs = h.publish(t, 2)
    h.advance(400)  # 1000 ms after B's pick, not after A's
    assert h.take(a) == msgs and h.take(b) == []
    assert h.active == {a.consumer_id: True, b.consumer_id: False}


def test_redeliver_and_flow_wait_while_a_switch_is_pending(harness):
    """``internalRedeliverUnacknowledgedMessages`` and ``internalConsumerFlow`` ignore the
    request while the cursor waits to be rewound."""
    h = harness
    t = "fo-wait"
    c = h.subscribe(t, "fo", "A", SubType.Failover, permits=10)
    h.advance(1000)
    msgs = h.publish(t, 2)
    assert h.take(c) == msgs
    d = h.subscribe(t, "fo", "0-first", SubType.Failover)  # sorts first: a switch to it
    h.service.redeliver_unacknowledged(c.consumer_id)  # no longer active: ignored
    h.service.redeliver_unacknowledged(d.consumer_id)  # active, switch pending: ignored
    h.flow(d, 10)
    h.drain()
    assert h.take(c) == [] and h.take(d) == []
    assert not h.events_of(EventType.REDELIVERY_REQUESTED)
    h.advance(1000)
    assert h.take(d) == msgs  # the switch's rewind


def test_exclusive_or_zero_delay_switches_at_once(make_harness):
    h = make_harness(active_consumer_failover_delay_ms=0)
    b = h.subscribe("fo0", "fo", "B", SubType.Failover, permits=10)
    msgs = h.publish("fo0", 2)
    h.take(b)
    h.close(b)
    c = h.subscribe("fo0", "fo", "C", SubType.Failover, permits=10)
    assert h.take(c) == msgs


def test_redeliver_on_failover_redelivers_everything_unacked(harness):
    h = harness
    c = h.subscribe("fo-r", "fo", "A", SubType.Failover, permits=10)
    h.advance(1000)
    msgs = h.publish("fo-r", 3)
    h.take(c)
    h.ack(c, [msgs[1]])
    h.service.redeliver_unacknowledged(c.consumer_id, [msgs[0]])
    h.drain()
    got = h.take_full(c)
    assert [p for p, _, _ in got] == [msgs[0], msgs[2]]
    assert all(count == 0 for _, count, _ in got)  # not tracked on Failover, as in Pulsar


def test_key_hash_ranges_filter_on_exclusive(harness):
    from pulsarlab.broker.selectors import slot, sticky_key_hash

    h = harness
    keys = [f"k{i}" for i in range(1000)]
    low_key = next(k for k in keys if slot(sticky_key_hash(k.encode())) < 30000)
    high_key = next(k for k in keys if slot(sticky_key_hash(k.encode())) > 40000)
    c = h.subscribe("kr", "r", "reader", SubType.Exclusive, permits=10,
                    key_hash_ranges=[(0, 32767)], durable=False)
    (low,) = h.publish("kr", 1, key=low_key)
    h.publish("kr", 1, key=high_key)
    assert h.take(c) == [low]
    assert h.events_of(EventType.FILTERED)
