"""R-SUB: Exclusive, Shared and subscription-type rules."""

import pytest

from pulsarlab.broker import SubType
from pulsarlab.broker.errors import ConsumerBusy, SubscriptionTypeMismatch
from pulsarlab.broker.events import EventType

T = "subs"


def test_exclusive_rejects_second_consumer_and_keeps_state(harness):
    first = harness.subscribe(T, "s", "A", SubType.Exclusive, permits=10)
    harness.publish(T, 2)
    with pytest.raises(ConsumerBusy, match="Exclusive consumer is already connected"):
        harness.subscribe(T, "s", "B", SubType.Exclusive)
    sub = harness.service.topics[f"persistent://public/default/{T}"].subscriptions["s"]
    assert [c.consumer_name for c in sub.consumers] == ["A"]
    assert len(harness.take(first)) == 2


def test_type_fixed_while_consumers_present(harness):
    harness.subscribe(T, "s", "A", SubType.Shared)
    with pytest.raises(SubscriptionTypeMismatch, match="cannot join while it has consumers"):
        harness.subscribe(T, "s", "B", SubType.Failover)
    sub = harness.service.topics[f"persistent://public/default/{T}"].subscriptions["s"]
    assert sub.sub_type is SubType.Shared and len(sub.consumers) == 1


def test_type_can_change_when_no_consumers(harness):
    a = harness.subscribe(T, "s", "A", SubType.Shared)
    harness.close(a)
    harness.subscribe(T, "s", "B", SubType.Failover)
    sub = harness.service.topics[f"persistent://public/default/{T}"].subscriptions["s"]
    assert sub.sub_type is SubType.Failover


def test_initial_position_latest_and_earliest(harness):
    harness.publish(T, 3)
    latest = harness.subscribe(T, "late", "L", SubType.Exclusive, permits=10)
    earliest = harness.subscribe(
        T, "early", "E", SubType.Exclusive, permits=10, initial_position_earliest=True
    )
    assert harness.take(latest) == []
    assert len(harness.take(earliest)) == 3
    harness.publish(T, 1)
    assert len(harness.take(latest)) == 1


def test_shared_round_robin_over_consumers_with_permits(harness):
    a = harness.subscribe(T, "s", "A", SubType.Shared, permits=2)
    b = harness.subscribe(T, "s", "B", SubType.Shared, permits=2)
    msgs = harness.publish(T, 1) + harness.publish(T, 1) + harness.publish(T, 1)
    got_a, got_b = harness.take(a), harness.take(b)
    assert sorted(got_a + got_b) == msgs
    assert got_a and got_b  # both were used
    harness.publish(T, 3)
    # A and B had 2 permits each: only one more message fits.
    assert len(harness.take(a)) + len(harness.take(b)) == 1


def test_shared_consumer_leaving_hands_unacked_to_others(harness):
    a = harness.subscribe(T, "s", "A", SubType.Shared, permits=10)
    msgs = harness.publish(T, 4)
    assert harness.take(a) == msgs
    harness.ack(a, [msgs[0]])
    b = harness.subscribe(T, "s", "B", SubType.Shared, permits=10)
    harness.close(a)
    got = harness.take_full(b)
    assert [p for p, _, _ in got] == msgs[1:]
    # Pulsar does not count a consumer's disconnection as a redelivery.
    assert all(count == 0 for _, count, _ in got)
    removed = harness.events_of(EventType.REDELIVERY_REQUESTED)
    assert removed and removed[-1].data["reason"] == "consumer_removed"


def test_shared_redeliver_counts_per_message(harness):
    a = harness.subscribe(T, "s", "A", SubType.Shared, permits=10)
    (m,) = harness.publish(T, 1)
    harness.take(a)
    for expected in (1, 2, 3):
        harness.service.redeliver_unacknowledged(a.consumer_id, [m])
        harness.drain()
        assert harness.take_full(a) == [(m, expected, None)]


def test_shared_prefers_higher_priority_consumers(harness):
    low = harness.subscribe(T, "s", "low", SubType.Shared, permits=100, priority_level=1)
    high = harness.subscribe(T, "s", "high", SubType.Shared, permits=5, priority_level=0)
    harness.publish(T, 7)
    assert len(harness.take(high)) == 5
    assert len(harness.take(low)) == 2


def test_non_durable_subscription_goes_away_with_its_consumer(harness):
    c = harness.subscribe(T, "reader", "r", SubType.Exclusive, durable=False)
    topic = harness.service.topics[f"persistent://public/default/{T}"]
    assert "reader" in topic.subscriptions
    harness.close(c)
    assert "reader" not in topic.subscriptions
    assert "reader" not in harness.storage.metadata.get_cursors(topic.name)


def test_shared_gives_one_consumer_at_most_20_entries_per_turn(harness):
    # Pulsar's dispatcherMaxRoundRobinBatchSize (20): one read of 100 entries is spread over
    # the consumers in turns of 20, not handed whole to the first one with permits.
    a = harness.subscribe(T, "s", "A", SubType.Shared, permits=1000)
    b = harness.subscribe(T, "s", "B", SubType.Shared, permits=1000)
    msgs = harness.publish(T, 100)
    got_a, got_b = harness.take(a), harness.take(b)
    turns = [msgs[i:i + 20] for i in range(0, 100, 20)]
    first, second = (got_a, got_b) if got_a[0] == msgs[0] else (got_b, got_a)
    assert first == turns[0] + turns[2] + turns[4]
    assert second == turns[1] + turns[3]


def test_shared_round_robin_turn_size_is_a_setting(make_harness):
    harness = make_harness(dispatcher_max_round_robin_batch_size=5)
    a = harness.subscribe(T, "s", "A", SubType.Shared, permits=1000)
    b = harness.subscribe(T, "s", "B", SubType.Shared, permits=1000)
    harness.publish(T, 20)
    assert len(harness.take(a)) == len(harness.take(b)) == 10
    with pytest.raises(Exception, match="dispatcher_max_round_robin_batch_size must be > 0"):
        make_harness(dispatcher_max_round_robin_batch_size=0)


def test_shared_round_robin_turns_count_messages_not_entries(harness):
    """``PersistentDispatcherMultipleConsumers.trySendMessagesToConsumers``: a turn is
    ``min(remainingMessages, permits, dispatcherMaxRoundRobinBatchSize)`` messages divided
    by the read's ``avgBatchSizePerMsg`` — 20 / 10 = 2 batches of 10 per consumer."""
    a = harness.subscribe(T, "s", "A", SubType.Shared, permits=1000)
    b = harness.subscribe(T, "s", "B", SubType.Shared, permits=1000)
    msgs = harness.publish(T, 10, batch=10, commit=False)
    harness.commit()
    got_a, got_b = harness.take(a), harness.take(b)
    first, second = (got_a, got_b) if got_a[0] == msgs[0] else (got_b, got_a)
    assert first == msgs[0:2] + msgs[4:6] + msgs[8:10]
    assert second == msgs[2:4] + msgs[6:8]


def test_shared_turn_is_at_least_one_entry(harness):
    """``messagesForC = Math.max(messagesForC / avgBatchSizePerMsg, 1)``: a consumer with
    fewer permits than a batch still gets one whole batch."""
    a = harness.subscribe(T, "s", "A", SubType.Shared, permits=3)
    msgs = harness.publish(T, 2, batch=10, commit=False)
    harness.commit()
    assert harness.take(a) == msgs[:1]
    assert a.permits == 3 - 10
