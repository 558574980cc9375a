"""The ledger-list queries the core asks per tick and per publish (current ledger, entry and
byte counts, the estimated backlog) answer what the ``ledgers`` snapshot says, on both
backends, while ``ledgers`` itself stays a copy its caller may change."""

from __future__ import annotations

from pulsarlab.broker.storage import LedgerInfo, ManagedLedger


def backlog_from_snapshot(ledgers: list[LedgerInfo], mark_delete: tuple[int, int]) -> int:
    """``getEstimatedBacklogSize`` spelled out over the snapshot."""
    size = 0
    for info in ledgers:
        if info.ledger_id > mark_delete[0]:
            size += info.size
        elif info.ledger_id == mark_delete[0] and info.entries:
            size += info.size * max(0, info.entries - 1 - mark_delete[1]) // info.entries
    return size


def assert_queries_match(ml: ManagedLedger) -> None:
    ledgers = ml.ledgers
    assert ml.current_ledger_id == ledgers[-1].ledger_id
    assert ml.number_of_entries == sum(info.entries for info in ledgers)
    assert ml.total_size == sum(info.size for info in ledgers)
    ids = [info.ledger_id for info in ledgers]
    marks = [(ids[0] - 1, 0), (ids[-1] + 1, -1)]
    for info in ledgers:
        marks += [(info.ledger_id, e) for e in range(-1, info.entries + 1)]
    for mark in marks:
        assert ml.estimated_backlog_size(mark) == backlog_from_snapshot(ledgers, mark), mark


def test_queries_follow_adds_rollovers_and_trims(backend) -> None:
    ml = backend.open(max_entries_per_ledger=3)
    assert_queries_match(ml)
    for i in range(8):  # entries of different sizes over three ledgers
        ml.add_entry(b"x" * (i + 1), 0)
    ml.sync()
    assert len(ml.ledgers) == 3
    assert_queries_match(ml)
    first = ml.current_ledger_id
    assert ml.maybe_rollover(10**9)  # the current ledger is old: a new one
    assert ml.current_ledger_id != first
    assert_queries_match(ml)
    ml.trim(ml.ledgers[1] and (ml.ledgers[1].ledger_id, ml.ledgers[1].entries - 1))
    assert len(ml.ledgers) == 2
    assert_queries_match(ml)


def test_ledgers_is_a_copy_the_caller_may_change(backend) -> None:
    ml = backend.open()
    ml.add_entry(b"abc", 0)
    ml.sync()
    snapshot = ml.ledgers
    snapshot[-1].entries = 99
    snapshot.clear()
    assert ml.ledgers[-1].entries == 1 and ml.number_of_entries == 1
