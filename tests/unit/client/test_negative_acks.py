"""The simple negative-ack / ack-timeout tracker."""

from __future__ import annotations

from pulsarlab.broker.client.negative_acks import NegativeAcksTracker


def test_due_after_the_delay():
    t = NegativeAcksTracker(delay_ms=1000)
    t.add((1, 2), now_ms=0)
    t.add((1, 1), now_ms=500)
    assert t.next_deadline() == 1000
    assert t.take_due(999) == []
    assert t.take_due(1000) == [(1, 2)]
    assert t.take_due(1500) == [(1, 1)]
    assert len(t) == 0 and t.next_deadline() is None


def test_replace_or_keep():
    t = NegativeAcksTracker(delay_ms=100)
    t.add((1, 1), 0)
    t.add((1, 1), 50, replace=False)
    assert t.next_deadline() == 100
    t.add((1, 1), 50)
    assert t.next_deadline() == 150
    t.remove((1, 1))
    assert t.take_due(10**9) == []
