"""The core's tick and a publish under a backlog quota ask the managed ledger queries
(current ledger, estimated backlog) and never copy its ledger list (``ledgers``): a tick
runs up to once per millisecond on every topic."""

from __future__ import annotations

import pytest

from pulsarlab.broker import SubType
from pulsarlab.broker.events import EventType
from pulsarlab.broker.storage.memory import LedgerSequence

T = "no-copies"
NS = "public/default"


@pytest.fixture
def copies(monkeypatch) -> list[str]:
    """Each read of any managed ledger's ``ledgers`` snapshot, by the test's code or not."""
    seen: list[str] = []
    original = LedgerSequence.ledgers

    def counted(self):
        seen.append(self.name)
        return original.fget(self)

    monkeypatch.setattr(LedgerSequence, "ledgers", property(counted))
    return seen


def test_ticks_copy_no_ledger_list(make_harness, copies):
    h = make_harness(managed_ledger_max_entries_per_ledger=2)
    h.subscribe(T, "s", "c", SubType.Exclusive, permits=100)
    h.publish(T, 5)
    h.advance(1)
    copies.clear()
    for _ in range(50):
        h.advance(1)
    assert copies == []


def test_a_rollover_in_housekeeping_reports_the_closed_and_opened_ledgers(make_harness):
    h = make_harness(managed_ledger_max_ledger_rollover_time_minutes=10,
                     managed_ledger_min_ledger_rollover_time_minutes=0)
    h.subscribe(T, "s", "c", SubType.Exclusive, permits=100)
    h.publish(T, 1)
    ledger = h.service.topics[f"persistent://{NS}/{T}"].ledger
    before = ledger.current_ledger_id
    h.advance(10 * 60_000)
    after = ledger.current_ledger_id
    assert after != before
    [rolled] = h.events_of(EventType.LEDGER_ROLLED_OVER)
    assert (rolled.closed, rolled.opened) == (before, after)


def test_publishing_under_a_backlog_quota_copies_no_ledger_list(harness, copies):
    h = harness
    h.service.set_namespace_policy(NS, "backlog_quota",
                                   {"limitSize": 10_000_000, "policy": "producer_exception"})
    h.subscribe(T, "s", "c", SubType.Exclusive, permits=0)
    h.publish(T, 1)
    copies.clear()
    h.publish(T, 20)
    assert copies == []
    topic = h.service.topics[f"persistent://{NS}/{T}"]
    assert topic.backlog_size_bytes() > 0
