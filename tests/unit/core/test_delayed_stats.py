"""R-DELAY stats: ``msgDelayed`` counts what the dispatcher holds back, as Pulsar's does."""

import pytest

from pulsarlab.broker import SubType

T = "delayed-stats"


def _delayed(h, subscription: str) -> int:
    return h.service.topic_stats(T)["subscriptions"][subscription]["msgDelayed"]


@pytest.mark.parametrize("sub_type", [SubType.Shared, SubType.Key_Shared])
def test_msg_delayed_counts_held_back_messages_until_due(harness, sub_type):
    h = harness
    c = h.subscribe(T, "s", "c", sub_type, permits=10)
    now = h.clock.now_ms()
    h.publish(T, 2, deliver_at=now + 5000)
    (m,) = h.publish(T, 1)
    assert h.take(c) == [m]
    assert _delayed(h, "s") == 2
    h.advance(4000)  # due one tick early (non-strict)
    assert len(h.take(c)) == 2
    assert _delayed(h, "s") == 0


@pytest.mark.parametrize("sub_type", [SubType.Exclusive, SubType.Failover])
def test_msg_delayed_is_zero_where_delays_are_ignored(harness, sub_type):
    h = harness
    h.subscribe(T, "s", "c", sub_type, permits=10)
    h.publish(T, 1, deliver_at=h.clock.now_ms() + 60_000)
    assert _delayed(h, "s") == 0
