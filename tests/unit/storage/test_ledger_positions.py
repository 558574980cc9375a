"""Position, rollover, trim and reading semantics shared by the memory and durable backends."""

from __future__ import annotations

import pytest

from pulsarlab.broker.errors import StorageError
from pulsarlab.broker.storage import LedgerInfo, ManagedLedger


def fill(ml: ManagedLedger, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        ml.add_entry(b"%d" % i, 0)
    ml.sync()


def everything(ml: ManagedLedger) -> list[tuple[tuple[int, int], bytes | None]]:
    return ml.read_entries(ml.first_position(), 1_000_000)


@pytest.fixture
def three(backend) -> tuple[ManagedLedger, list[int]]:
    """Seven entries over three ledgers of at most three entries: [3, 3, 1]."""
    ml = backend.open(max_entries_per_ledger=3)
    fill(ml, 7)
    return ml, [info.ledger_id for info in ml.ledgers]


def test_new_managed_ledger_positions(backend) -> None:
    ml = backend.open()
    current, entry = ml.last_confirmed
    assert entry == -1
    assert ml.last_added == (current, -1)
    assert ml.first_position() == (current, 0)
    assert ml.next_position(ml.last_confirmed) == (current, 0)
    assert ml.previous_position(ml.first_position()) == (current, -1)
    assert ml.ledgers == [LedgerInfo(current, 0, 0, 0, closed=False)]
    assert ml.read_entries(ml.first_position(), 10) == []
    assert ml.count_entries((current, 0), (current, 99)) == 0
    assert backend.metadata.get_ledger_list(backend.topic) == ml.ledgers


def test_entries_are_readable_only_after_sync(backend) -> None:
    ml = backend.open()
    current = ml.last_confirmed[0]
    assert [ml.add_entry(b"m%d" % i, 0) for i in range(3)] == [(current, i) for i in range(3)]
    assert ml.last_added == (current, 2)
    assert ml.last_confirmed == (current, -1)
    assert ml.read_entries((current, 0), 10) == []
    with pytest.raises(KeyError):
        ml.read_entry((current, 0))
    assert ml.number_of_entries == 0

    assert ml.sync() == (current, 2) == ml.last_confirmed
    assert ml.read_entries((current, 0), 10) == [((current, i), b"m%d" % i) for i in range(3)]
    assert ml.read_entry((current, 1)) == b"m1"
    assert (ml.number_of_entries, ml.total_size) == (3, 6)

    ml.add_entry(b"m3", 0)
    assert ml.read_entries((current, 0), 10)[-1] == ((current, 2), b"m2")
    assert ml.count_entries((current, 0), (current, 9)) == 3


def test_rollover_by_entry_count_inside_add_entry(backend) -> None:
    ml = backend.open(max_entries_per_ledger=3)
    positions = [ml.add_entry(b"%d" % i, 0) for i in range(7)]
    ids = [info.ledger_id for info in ml.ledgers]
    assert ids == sorted(set(ids)) and len(ids) == 3
    assert positions == [(ids[i // 3], i % 3) for i in range(7)]
    # Closing a full ledger syncs it; the entry in the new ledger waits for sync().
    assert ml.last_confirmed == (ids[2], -1)
    assert ml.last_added == (ids[2], 0)
    assert len(everything(ml)) == 6
    ml.sync()
    assert [(i.entries, i.closed) for i in ml.ledgers] == [(3, True), (3, True), (1, False)]
    assert [data for _, data in everything(ml)] == [b"%d" % i for i in range(7)]
    assert backend.metadata.get_ledger_list(backend.topic)[:2] == ml.ledgers[:2]


def test_rollover_by_size(backend) -> None:
    ml = backend.open(max_size_per_ledger_bytes=10)
    for _ in range(3):
        ml.add_entry(b"12345", 0)
    ml.sync()
    assert [(i.entries, i.size) for i in ml.ledgers] == [(2, 10), (1, 5)]


def test_maybe_rollover_by_age_respects_the_minimum(backend) -> None:
    ml = backend.open(min_ledger_rollover_time_ms=100, max_ledger_rollover_time_ms=50)
    first = ml.last_confirmed[0]
    assert not ml.maybe_rollover(10_000)  # an empty ledger never rolls over by age
    ml.add_entry(b"a", 10)
    assert not ml.maybe_rollover(99)  # past the maximum age, not yet the minimum
    assert ml.maybe_rollover(100)
    closed, current = ml.ledgers
    assert closed == LedgerInfo(first, 1, 1, 100, closed=True)  # the pending entry was synced
    assert current == LedgerInfo(current.ledger_id, 0, 0, 100, closed=False)
    assert current.ledger_id > first
    assert ml.last_confirmed == (current.ledger_id, -1)
    assert backend.metadata.get_ledger_list(backend.topic) == ml.ledgers


def test_maybe_rollover_when_full_ignores_the_minimum_age(backend) -> None:
    ml = backend.open(max_entries_per_ledger=2, min_ledger_rollover_time_ms=10**9)
    ml.add_entry(b"a", 0)
    assert not ml.maybe_rollover(1)
    ml.add_entry(b"b", 0)
    assert ml.maybe_rollover(1)
    assert [info.entries for info in ml.ledgers] == [2, 0]


def test_next_and_previous_cross_ledgers(three: tuple[ManagedLedger, list[int]]) -> None:
    ml, (a, b, c) = three
    assert ml.next_position((a, -1)) == (a, 0)
    assert ml.next_position((a, 1)) == (a, 2)
    assert ml.next_position((a, 2)) == (b, 0)
    assert ml.next_position((b, 2)) == (c, 0)
    assert ml.next_position((c, 0)) == (c, 1)  # past the last confirmed entry
    assert ml.previous_position((a, 0)) == (a, -1)
    assert ml.previous_position((b, 0)) == (a, 2)
    assert ml.previous_position((c, 0)) == (b, 2)
    assert ml.previous_position((b, 2)) == (b, 1)
    assert ml.previous_position((b, 9)) == (b, 2)

    forward, position = [], ml.first_position()
    while position <= ml.last_confirmed:
        forward.append(position)
        position = ml.next_position(position)
    assert forward == [p for p, _ in everything(ml)]
    backward, position = [], ml.last_confirmed
    while position[1] >= 0:
        backward.append(position)
        position = ml.previous_position(position)
    assert backward == forward[::-1]
    assert position == (a, -1)


def test_reads_normalise_the_start_position(three: tuple[ManagedLedger, list[int]]) -> None:
    ml, (a, b, c) = three
    assert ml.read_entries((a, 3), 2) == [((b, 0), b"3"), ((b, 1), b"4")]
    assert ml.read_entries((a, -4), 1) == [((a, 0), b"0")]
    assert ml.read_entries((a, 2), 3) == [((a, 2), b"2"), ((b, 0), b"3"), ((b, 1), b"4")]
    assert ml.read_entries((c, 1), 5) == []
    assert ml.read_entries((c + 1, 0), 5) == []
    assert ml.read_entries((a, 0), 0) == []
    with pytest.raises(KeyError):
        ml.read_entry((a, 3))


def test_empty_current_ledger_after_rollover(backend) -> None:
    ml = backend.open(max_entries_per_ledger=2)
    fill(ml, 2)
    assert ml.maybe_rollover(0)
    (a, _), (c, _) = [(i.ledger_id, i.entries) for i in ml.ledgers]
    assert ml.last_confirmed == (c, -1)
    assert ml.first_position() == (a, 0)
    assert ml.next_position((a, 1)) == (c, 0)
    assert ml.previous_position((c, 0)) == (a, 1)
    assert ml.read_entries((a, 2), 5) == []


def test_trim_deletes_acknowledged_ledgers_but_never_the_current(
    backend, three: tuple[ManagedLedger, list[int]]
) -> None:
    ml, (a, b, c) = three
    assert ml.trim((a, 1)) == []
    assert ml.trim((b, 0)) == [a]
    assert ml.first_position() == (b, 0)
    assert ml.previous_position((b, 0)) == (b, -1)
    assert ml.next_position((a, 0)) == (b, 0)
    assert ml.read_entries((a, 0), 2) == [((b, 0), b"3"), ((b, 1), b"4")]
    with pytest.raises(KeyError):
        ml.read_entry((a, 0))

    assert ml.trim(ml.last_confirmed) == [b]
    assert [info.ledger_id for info in ml.ledgers] == [c]
    assert [info.ledger_id for info in backend.metadata.get_ledger_list(backend.topic)] == [c]
    assert everything(ml) == [((c, 0), b"6")]
    assert ml.number_of_entries == 1
    assert ml.trim((c + 100, 0)) == []


def test_count_entries(three: tuple[ManagedLedger, list[int]]) -> None:
    ml, (a, b, c) = three
    assert ml.count_entries((a, 0), (c, 0)) == 7
    assert ml.count_entries((-1, 0), (c + 5, 0)) == 7
    assert ml.count_entries((a, 1), (b, 1)) == 4
    assert ml.count_entries((a, 3), (b, 0)) == 1
    assert ml.count_entries((a, -5), (a, 99)) == 3
    assert ml.count_entries((b, 0), (a, 2)) == 0
    assert ml.count_entries((c, 1), (c, 9)) == 0
    ml.add_entry(b"unsynced", 0)
    assert ml.count_entries((a, 0), (c, 9)) == 7
    ml.trim((a, 2))
    assert ml.count_entries((a, 0), (c, 0)) == 4


def test_restart_keeps_entries_and_opens_a_new_ledger(backend) -> None:
    ml = backend.open(max_entries_per_ledger=3)
    fill(ml, 5)
    ml.add_entry(b"5", 0)  # close() syncs it
    old_ids = [info.ledger_id for info in ml.ledgers]
    backend.restart()

    ml = backend.open(max_entries_per_ledger=3, now_ms=500)
    ledgers = ml.ledgers
    assert [i.ledger_id for i in ledgers[:2]] == old_ids
    assert [(i.entries, i.closed) for i in ledgers] == [(3, True), (3, True), (0, False)]
    assert ledgers[2].ledger_id > max(old_ids)
    assert ledgers[1].timestamp_ms == 500  # the recovered last ledger is closed on open
    assert ml.last_confirmed == (ledgers[2].ledger_id, -1)
    assert [data for _, data in everything(ml)] == [b"%d" % i for i in range(6)]
    assert ml.add_entry(b"6", 600) == (ledgers[2].ledger_id, 0)


def test_restart_drops_empty_ledgers(backend) -> None:
    first = backend.open().last_confirmed[0]
    backend.restart()
    ml = backend.open()
    (only,) = ml.ledgers
    assert only.ledger_id > first
    assert backend.metadata.get_ledger_list(backend.topic) == [only]


def test_ledger_ids_are_unique_across_managed_ledgers(backend) -> None:
    one = backend.open("persistent://public/default/one", max_entries_per_ledger=1)
    two = backend.open("persistent://public/default/two", max_entries_per_ledger=1)
    for ml in (one, two, one, two):
        fill(ml, 1)
    ids = [info.ledger_id for ml in (one, two) for info in ml.ledgers]
    assert len(ids) == len(set(ids))
    assert sorted(backend.storage.managed_ledger_names()) == [
        "persistent://public/default/one",
        "persistent://public/default/two",
    ]


def test_open_twice_returns_the_open_ledger(backend) -> None:
    ml = backend.open()
    assert backend.open(max_entries_per_ledger=5) is ml
    ml.close()
    assert backend.open() is not ml


def test_closed_ledger_refuses_work(backend) -> None:
    ml = backend.open()
    fill(ml, 1)
    ml.close()
    ml.close()
    for call in (lambda: ml.add_entry(b"x", 0), ml.sync, lambda: ml.read_entries((0, 0), 1)):
        with pytest.raises(StorageError, match="is closed"):
            call()


def test_delete_removes_entries_ledger_list_and_cursors(backend) -> None:
    ml = backend.open()
    fill(ml, 3)
    backend.metadata.put_cursor(backend.topic, "sub", {"markDelete": [0, 0]})
    ml.delete()
    assert backend.metadata.get_ledger_list(backend.topic) is None
    assert backend.metadata.get_cursors(backend.topic) == {}
    assert list(backend.storage.managed_ledger_names()) == []
    with pytest.raises(StorageError):
        ml.add_entry(b"x", 0)
    again = backend.open()
    assert again.number_of_entries == 0
    assert everything(again) == []


def test_empty_entry_is_refused(backend):
    """Entries are never empty, so a zero-filled torn tail cannot pass for entries."""
    import pytest

    ml = backend.open("empty-entry")
    with pytest.raises(ValueError, match="cannot be empty"):
        ml.add_entry(b"", 0)
