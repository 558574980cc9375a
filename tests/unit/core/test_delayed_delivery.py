"""R-DELAY: deliver_at honoured on Shared/Key_Shared only, with the tick and strict rules."""

import pytest

from pulsarlab.broker import SubType
from pulsarlab.broker.delayed_delivery import DelayedDeliveryTracker
from pulsarlab.broker.events import EventType

T = "delayed"


@pytest.mark.parametrize("sub_type", [SubType.Shared, SubType.Key_Shared])
def test_non_strict_delivers_up_to_one_tick_early(harness, sub_type):
    h = harness
    c = h.subscribe(T, "s", "c", sub_type, permits=10)
    now = h.clock.now_ms()
    (m,) = h.publish(T, 1, deliver_at=now + 5000)
    assert h.take(c) == []
    assert h.events_of(EventType.DELAYED)[0].data["deliver_at"] == now + 5000
    h.advance(3999)
    assert h.take(c) == []
    h.advance(1)  # now + tick >= deliver_at: due one tick early
    assert h.take(c) == [m]


def test_strict_never_delivers_early(make_harness):
    h = make_harness(is_delayed_delivery_deliver_at_time_strict=True)
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=10)
    now = h.clock.now_ms()
    (m,) = h.publish(T, 1, deliver_at=now + 5000)
    h.advance(4999)
    assert h.take(c) == []
    h.advance(1)
    assert h.take(c) == [m]


def test_strict_rounds_up_to_the_tick(make_harness):
    h = make_harness(is_delayed_delivery_deliver_at_time_strict=True)
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=10)
    now = h.clock.now_ms()
    (m,) = h.publish(T, 1, deliver_at=now + 2500)
    assert h.service.next_deadline() == now + 3000  # next tick boundary after 2500
    h.advance(2999)
    assert h.take(c) == []
    h.advance(1)
    assert h.take(c) == [m]


@pytest.mark.parametrize("sub_type", [SubType.Exclusive, SubType.Failover])
def test_ignored_on_exclusive_and_failover(harness, sub_type):
    h = harness
    c = h.subscribe(T, "s", "c", sub_type, permits=10)
    h.advance(1000)  # a Failover consumer reads after the failover delay
    (m,) = h.publish(T, 1, deliver_at=h.clock.now_ms() + 60_000)
    assert h.take(c) == [m]


def test_other_messages_flow_past_a_delayed_one(harness):
    h = harness
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=10)
    (late,) = h.publish(T, 1, deliver_at=h.clock.now_ms() + 10_000)
    now_msgs = h.publish(T, 2)
    assert h.take(c) == now_msgs
    h.advance(10_000)
    assert h.take(c) == [late]


def test_delayed_message_keeps_its_ledger_alive(make_harness):
    h = make_harness(managed_ledger_max_entries_per_ledger=2)
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=100)
    (late,) = h.publish(T, 1, deliver_at=h.clock.now_ms() + 3_600_000)
    others = h.publish(T, 5)
    h.ack(c, h.take(c))
    h.advance(h.service.settings.retention_check_interval_ms)
    ledger = h.service.topics[f"persistent://public/default/{T}"].ledger
    assert late[0] in [info.ledger_id for info in ledger.ledgers]
    assert others[-1][0] in [info.ledger_id for info in ledger.ledgers]


def test_disabled_setting_delivers_immediately(make_harness):
    h = make_harness(delayed_delivery_enabled=False)
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=10)
    (m,) = h.publish(T, 1, deliver_at=h.clock.now_ms() + 60_000)
    assert h.take(c) == [m]


def test_tracker_rules():
    tracker = DelayedDeliveryTracker(tick_ms=1000, strict=False)
    assert not tracker.add((1, 0), 1500, now_ms=1000)  # due within one tick
    assert tracker.add((1, 1), 2500, now_ms=1000)
    assert tracker.get_scheduled_messages(1499, 10) == []
    assert tracker.get_scheduled_messages(1500, 10) == [(1, 1)]
    strict = DelayedDeliveryTracker(tick_ms=1000, strict=True)
    assert strict.add((1, 0), 1500, now_ms=1000)
    assert strict.next_wakeup(1000) == 2000
    with pytest.raises(ValueError):
        DelayedDeliveryTracker(tick_ms=0)
