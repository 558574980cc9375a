"""R-OPS2 stats: rates per stats interval and the counters around them, as Pulsar reports
them (``PersistentTopic.updateRates``, ``Consumer.updateRates``, ``Rate.calculateRate``,
``PersistentSubscription.getStats``)."""

from __future__ import annotations

import pytest

from pulsarlab.broker import SubType
from pulsarlab.broker.rates import Rate, date_string

T = "persistent://public/default/rates"
MINUTE = 60_000


def _stats(h) -> dict:
    return h.service.topic_stats(T)


def test_rates_are_zero_until_the_first_stats_interval_closes(harness):
    h = harness
    h.subscribe(T, "s", "c", SubType.Shared, permits=100)
    h.publish(T, 30)
    h.advance(MINUTE - 1)
    stats = _stats(h)
    assert stats["msgRateIn"] == 0.0 and stats["msgRateOut"] == 0.0
    assert stats["msgInCounter"] == 30 and stats["msgOutCounter"] == 30


def test_rates_are_what_the_last_interval_counted_per_second(harness):
    h = harness
    h.subscribe(T, "s", "c", SubType.Shared, permits=100)
    h.publish(T, 30, payload=b"abcd")
    h.advance(MINUTE)  # statsUpdateInitialDelayInSecs = 60: the first interval closes
    stats = _stats(h)
    assert stats["msgRateIn"] == pytest.approx(0.5)
    assert stats["msgThroughputIn"] == pytest.approx(30 * 4 / 60)
    assert stats["averageMsgSize"] == pytest.approx(4.0)
    (publisher,) = stats["publishers"]
    assert publisher["msgRateIn"] == pytest.approx(0.5)
    assert publisher["averageMsgSize"] == pytest.approx(4.0)
    sub = stats["subscriptions"]["s"]
    (consumer,) = sub["consumers"]
    assert consumer["msgRateOut"] == pytest.approx(0.5)
    assert consumer["msgThroughputOut"] == pytest.approx(consumer["bytesOutCounter"] / 60)
    assert sub["msgRateOut"] == pytest.approx(0.5)
    assert stats["msgRateOut"] == pytest.approx(0.5)
    assert stats["msgThroughputOut"] == pytest.approx(sub["msgThroughputOut"])
    # Nothing in the next interval: the rates read 0 again, the counters keep their totals.
    h.advance(MINUTE)
    stats = _stats(h)
    assert stats["msgRateIn"] == 0.0 and stats["msgRateOut"] == 0.0
    assert stats["averageMsgSize"] == 0.0
    assert stats["msgInCounter"] == 30


def test_the_stats_interval_follows_the_settings(make_harness):
    h = make_harness(stats_update_frequency_in_secs=10, stats_update_initial_delay_in_secs=5)
    h.subscribe(T, "s", "c", SubType.Exclusive, permits=100)
    h.advance(5_000)
    h.publish(T, 20)
    assert h.service.next_deadline() <= h.clock.now_ms() + 10_000
    h.advance(10_000)
    assert _stats(h)["msgRateIn"] == pytest.approx(2.0)


def test_subscription_out_counter_keeps_what_closed_consumers_received(harness):
    h = harness
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=100)
    h.publish(T, 2, batch=3)  # two entries of three messages each: six messages
    assert h.take(c)
    h.close(c)
    sub = _stats(h)["subscriptions"]["s"]
    assert sub["msgOutCounter"] == 6 and sub["bytesOutCounter"] > 0
    assert _stats(h)["msgOutCounter"] == 6


def test_topic_out_counter_keeps_what_deleted_subscriptions_received(harness):
    h = harness
    c = h.subscribe(T, "gone", "c", SubType.Exclusive, permits=100)
    h.subscribe(T, "kept", "k", SubType.Exclusive, permits=100)
    h.publish(T, 3)
    h.close(c)
    h.service.delete_subscription(T, "gone")
    stats = _stats(h)
    assert stats["subscriptions"]["kept"]["msgOutCounter"] == 3
    assert stats["msgOutCounter"] == 6
    assert stats["bytesOutCounter"] == 2 * stats["subscriptions"]["kept"]["bytesOutCounter"]


def test_redelivery_rate(harness):
    h = harness
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=100)
    h.publish(T, 6)
    assert len(h.take(c)) == 6
    h.service.redeliver_unacknowledged(c.consumer_id)
    h.drain()
    h.advance(MINUTE)
    sub = _stats(h)["subscriptions"]["s"]
    assert sub["consumers"][0]["msgRateRedeliver"] == pytest.approx(0.1)
    assert sub["msgRateRedeliver"] == pytest.approx(0.1)


def test_expiry_counters_and_rate(harness):
    h = harness
    h.subscribe(T, "s", "c", SubType.Shared)
    h.publish(T, 4)
    h.clock.advance(10_000)
    h.service.expire_messages(T, "s", 5)
    expired_at = h.clock.now_ms()
    sub = _stats(h)["subscriptions"]["s"]
    assert sub["totalMsgExpired"] == 4 and sub["lastExpireTimestamp"] == expired_at
    assert sub["msgRateExpired"] == 0.0  # not before the interval closes
    h.advance(MINUTE - 10_000)
    assert _stats(h)["subscriptions"]["s"]["msgRateExpired"] == pytest.approx(4 / 60)


def test_backlog_size_follows_the_mark_delete(harness):
    h = harness
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=100)
    positions = h.publish(T, 5, payload=b"x" * 100)
    stats = _stats(h)
    sub = stats["subscriptions"]["s"]
    assert sub["backlogSize"] > 500 and stats["backlogSize"] == sub["backlogSize"]
    assert sub["msgBacklogNoDelayed"] == sub["msgBacklog"] == 5
    h.take(c)
    h.ack(c, positions)
    assert _stats(h)["subscriptions"]["s"]["backlogSize"] == 0


def test_consumer_and_publisher_identity_fields(harness):
    h = harness
    since = h.clock.now_ms()
    h.service.subscribe(
        T, "s", "c", SubType.Shared, address="/127.0.0.1:50123",
        client_version="Pulsar-CPP-v3.7.0",
    )
    h.service.create_producer(T, "p", address="/127.0.0.1:50124", client_version="v1")
    stats = _stats(h)
    (consumer,) = stats["subscriptions"]["s"]["consumers"]
    assert consumer["address"] == "/127.0.0.1:50123"
    assert consumer["clientVersion"] == "Pulsar-CPP-v3.7.0"
    assert consumer["connectedSince"] == date_string(since)
    (publisher,) = stats["publishers"]
    assert publisher["address"] == "/127.0.0.1:50124" and publisher["clientVersion"] == "v1"
    assert isinstance(publisher["connectedSince"], str)


@pytest.mark.parametrize(
    ("epoch_ms", "text"),
    [
        (1_700_000_000_000, "2023-11-14T22:13:20Z"),
        (1_700_000_000_120, "2023-11-14T22:13:20.12Z"),
        (1_700_000_000_005, "2023-11-14T22:13:20.005Z"),
    ],
)
def test_date_string_is_javas_iso_offset_date_time(epoch_ms, text):
    assert date_string(epoch_ms) == text


def test_rate_ignores_an_empty_interval():
    rate = Rate(1000)
    rate.calculate(10, 100, 1000)  # no time passed: nothing to divide by, nothing changes
    assert rate.rate == 0.0
    rate.calculate(10, 100, 3000)
    assert (rate.rate, rate.value_rate, rate.average_value) == (5.0, 50.0, 10.0)


@pytest.mark.parametrize("cumulative", [False, True])
def test_message_ack_rate_counts_acknowledged_messages(harness, cumulative):
    h = harness
    sub_type = SubType.Exclusive if cumulative else SubType.Shared
    c = h.subscribe(T, "s", "c", sub_type, permits=100)
    positions = h.publish(T, 3, batch=2)  # six messages in three entries
    assert h.take(c) == positions
    if cumulative:
        h.ack(c, [positions[-1]], cumulative=True)
    else:
        h.ack(c, positions)
    h.advance(MINUTE)
    sub = _stats(h)["subscriptions"]["s"]
    assert sub["consumers"][0]["messageAckRate"] == pytest.approx(0.1)
    assert sub["messageAckRate"] == pytest.approx(0.1)


def test_last_flow_consumed_acked_and_mark_delete_timestamps(harness):
    h = harness
    c = h.subscribe(T, "s", "c", SubType.Shared)
    before = _stats(h)["subscriptions"]["s"]
    assert before["consumers"][0]["lastAckedTime"] == "1970-01-01T00:00:00Z"
    h.clock.advance(1000)
    flow_at = h.clock.now_ms()
    h.flow(c, 10)
    h.clock.advance(1000)
    consumed_at = h.clock.now_ms()
    positions = h.publish(T, 2)
    h.clock.advance(1000)
    acked_at = h.clock.now_ms()
    h.ack(c, positions[1:])  # a hole: the mark-delete stays
    sub = _stats(h)["subscriptions"]["s"]
    (consumer,) = sub["consumers"]
    assert consumer["lastConsumedFlowTimestamp"] == sub["lastConsumedFlowTimestamp"] == flow_at
    assert consumer["lastConsumedTimestamp"] == sub["lastConsumedTimestamp"] == consumed_at
    assert consumer["lastAckedTimestamp"] == sub["lastAckedTimestamp"] == acked_at
    assert consumer["lastAckedTime"] == date_string(acked_at)
    assert sub["lastMarkDeleteAdvancedTimestamp"] == 0
    h.clock.advance(1000)
    h.ack(c, positions[:1])
    assert _stats(h)["subscriptions"]["s"]["lastMarkDeleteAdvancedTimestamp"] == h.clock.now_ms()
