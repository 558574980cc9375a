"""R-REDELIVER and R-DLQ timing and naming rules, exact, on a simulated clock."""

import pytest

from pulsarlab.broker.client.redelivery import (
    DeadLetterPolicy,
    MultiplierRedeliveryBackoff,
    NegativeAcksTracker,
    UnAckedMessageTracker,
    dead_letter_properties,
    retry_properties,
)


def test_backoff_builder_defaults_table():
    backoff = MultiplierRedeliveryBackoff()
    assert [backoff.next(n) // 1000 for n in range(-1, 8)] == [
        10, 10, 20, 40, 80, 160, 320, 600, 600,
    ]


def test_backoff_seed_table_min_1s_max_60s():
    """The seed's example: redeliveries 1..8 wait 1,2,4,8,16,32,60,60 s."""
    backoff = MultiplierRedeliveryBackoff(min_delay_ms=1000, max_delay_ms=60_000, multiplier=2)
    assert [backoff.next(count) for count in range(8)] == [
        1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000,
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [((-1, 10, 2.0), "min_delay_ms"), ((10, 5, 2.0), "max_delay_ms"), ((1, 5, 1.0), "multiplier")],
)
def test_backoff_validation(args, message):
    with pytest.raises(ValueError, match=message):
        MultiplierRedeliveryBackoff(*args)


def _run_nacks(tracker, nacks, until):
    """Drive the tracker's timer; return {id: time it was redelivered}."""
    redelivered = {}
    pending = sorted(nacks.items(), key=lambda kv: kv[1])
    now = 0
    while now <= until:
        while pending and pending[0][1] == now:
            mid, _ = pending.pop(0)
            tracker.add(mid, 0, now)
        for mid in tracker.on_timer(now):
            redelivered[mid] = now
        now += 100
    return redelivered


def test_nack_default_delay_lands_60_to_80_seconds_later():
    tracker = NegativeAcksTracker()
    assert tracker.timer_interval_ms == 20_000
    got = _run_nacks(tracker, {"a": 0, "b": 1000, "c": 19_900}, until=200_000)
    assert got == {"a": 60_000, "b": 80_000, "c": 80_000}
    assert all(60_000 <= got[m] - t <= 80_000 for m, t in {"a": 0, "b": 1000, "c": 19_900}.items())


def test_nacks_are_grouped_into_one_redelivery():
    tracker = NegativeAcksTracker(delay_ms=3000)
    for i in range(5):
        tracker.add(("m", i), 0, 0)
    assert tracker.on_timer(1000) == []
    assert tracker.on_timer(2000) == []
    assert sorted(tracker.on_timer(3000)) == [("m", i) for i in range(5)]
    assert tracker.next_timer_ms is None


def test_nack_with_backoff_uses_the_redelivery_count():
    backoff = MultiplierRedeliveryBackoff(1000, 60_000, 2)
    tracker = NegativeAcksTracker(backoff=backoff)
    assert tracker.timer_interval_ms == 333
    assert tracker.add("m", 3, now_ms=0) == 8000


def test_nack_delay_floor_is_100ms():
    assert NegativeAcksTracker(delay_ms=1).delay_ms == 100


@pytest.mark.parametrize("offset", [0, 1, 250, 500, 999])
def test_ack_timeout_time_wheel_bounds(offset):
    """Timeout 10 s, tick 1 s: 11 buckets; redelivered in (10 s, 11 s] after tracking."""
    tracker = UnAckedMessageTracker(10_000, now_ms=0, tick_ms=1000)
    assert len(tracker.buckets) == 11
    t = 0
    for t in range(0, offset + 1, 1):
        tracker.on_tick(t)
    tracker.add("m", now_ms=offset)
    fired_at = None
    for t in range(offset, 20_001):
        if "m" in tracker.on_tick(t):
            fired_at = t
            break
    assert fired_at is not None
    assert 10_000 < fired_at - offset <= 11_000


def test_ack_timeout_ignores_acked_and_untracked():
    tracker = UnAckedMessageTracker(10_000, now_ms=0)
    tracker.add("acked")
    tracker.add("kept")
    assert not tracker.add("kept")
    tracker.remove("acked")
    assert tracker.on_tick(11_000) == ["kept"]
    assert tracker.on_tick(30_000) == []


def test_ack_timeout_cumulative_removes_lower_ids():
    tracker = UnAckedMessageTracker(10_000, now_ms=0)
    for i in range(5):
        tracker.add((1, i))
    tracker.remove_up_to((1, 2))
    assert sorted(tracker.on_tick(11_000)) == [(1, 3), (1, 4)]


def test_ack_timeout_with_backoff_adds_to_the_timeout():
    backoff = MultiplierRedeliveryBackoff(1000, 60_000, 2)
    tracker = UnAckedMessageTracker(10_000, now_ms=0, tick_ms=1000, backoff=backoff)
    tracker.add("first", redelivery_count=0, now_ms=0)
    tracker.add("second", redelivery_count=1, now_ms=0)
    assert tracker.on_tick(10_999) == []
    assert tracker.on_tick(11_000) == ["first"]
    assert tracker.on_tick(12_000) == ["second"]


@pytest.mark.parametrize(("timeout", "tick"), [(9_999, 1000), (10_000, 99)])
def test_ack_timeout_validation(timeout, tick):
    with pytest.raises(ValueError, match=">="):
        UnAckedMessageTracker(timeout, now_ms=0, tick_ms=tick)


def test_dead_letter_policy_defaults_and_trigger():
    policy = DeadLetterPolicy.resolve("persistent://public/default/t", "sub", 3)
    assert policy.dead_letter_topic == "persistent://public/default/t-sub-DLQ"
    assert policy.retry_letter_topic == "persistent://public/default/t-sub-RETRY"
    assert policy.dlq_producer_name("persistent://public/default/t", "sub", "c1") == (
        "persistent://public/default/t-sub-c1-DLQ"
    )
    assert [policy.should_dead_letter(n) for n in range(5)] == [False, False, False, True, True]
    with pytest.raises(ValueError, match="max_redeliver_count"):
        DeadLetterPolicy.resolve("t", "s", 0)


def test_dead_letter_properties_keep_originals():
    props = dead_letter_properties({"a": "1", "REAL_TOPIC": "kept"}, "t", "(1,2,-1,-1)")
    assert props == {
        "a": "1",
        "REAL_TOPIC": "kept",
        "ORIGIN_MESSAGE_ID": "(1,2,-1,-1)",
        "ORIGIN_MESSAGE_IDY_TIME": "(1,2,-1,-1)",
    }


def test_retry_properties_count_up():
    props, times = retry_properties({"a": "1"}, "t", "id-1", 5000, {"why": "busy"})
    assert times == 1
    assert props["RECONSUMETIMES"] == "1" and props["DELAY_TIME"] == "5000"
    assert props["REAL_TOPIC"] == "t" and props["why"] == "busy"
    again, times = retry_properties(props, "t-RETRY", "id-2", -5)
    assert times == 2 and again["DELAY_TIME"] == "0"
    assert again["ORIGIN_MESSAGE_ID"] == "id-1"  # the first origin is kept


def test_custom_properties_cannot_replace_the_system_ones():
    props, times = retry_properties({}, "t", "id", 100, {"RECONSUMETIMES": "99", "x": "1"})
    assert times == 1 and props["RECONSUMETIMES"] == "1" and props["x"] == "1"
