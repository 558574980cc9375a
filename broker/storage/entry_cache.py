"""The broker-wide entry cache: recently written entries of every managed ledger, bounded.

Like Pulsar's ``managedLedgerCacheSizeMB``, one budget covers all topics of a storage (not
one per topic), so a hundred topics cost no more memory than one. Entries are kept in runs:
the entries of one group commit of one ledger, joined into one ``bytes`` with their
boundaries in an ``array`` (8 bytes per entry), so small entries cost little beyond their
bytes and adding a group is one join. A run's size counts its bytes, its boundaries and an
estimate of the Python objects around it, so the budget bounds real memory. The least
recently added runs go first. Ledger ids are unique within a storage, so entries of
different topics never collide.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import Iterator
from itertools import accumulate

from .base import Position

# Bytes of Python objects per cached run beyond its data and boundaries, measured with
# tracemalloc on CPython 3.11 (~425 for a one-entry run of a new ledger) and rounded up: the
# run object, the joined bytes' and the array's headers, its slots in the order and
# per-ledger lists (and those lists, for a ledger's first run).
RUN_OVERHEAD = 448
# Per entry: its boundary in the run's array.
ENTRY_OVERHEAD = 8


class _Run:
    """Entries ``first .. first + count - 1`` of a ledger: entry ``first + k`` is
    ``data[bounds[k] : bounds[k + 1]]``."""

    __slots__ = ("bounds", "cost", "count", "data", "first", "ledger_id")

    def __init__(self, ledger_id: int, first: int, data: bytes, bounds: array[int]) -> None:
        self.ledger_id = ledger_id
        self.first = first
        self.data = data
        self.bounds = bounds
        self.count = len(bounds) - 1
        self.cost = len(data) + ENTRY_OVERHEAD * self.count + RUN_OVERHEAD

    @property
    def end(self) -> int:
        return self.first + self.count


class _LedgerRuns:
    """One ledger's cached runs by first entry id; the oldest ones are removed by moving
    ``head`` (the lists are compacted now and then), so eviction costs O(1)."""

    __slots__ = ("firsts", "head", "runs")

    def __init__(self) -> None:
        self.runs: list[_Run] = []
        self.firsts: list[int] = []
        self.head = 0

    def add(self, run: _Run) -> None:
        if len(self.runs) == self.head or self.firsts[-1] < run.first:
            self.runs.append(run)
            self.firsts.append(run.first)
        else:
            at = bisect_right(self.firsts, run.first, self.head)
            self.runs.insert(at, run)
            self.firsts.insert(at, run.first)

    def remove(self, run: _Run) -> bool:
        """Take ``run`` out; whether none is left."""
        runs = self.runs
        if runs[self.head] is run:
            runs[self.head] = None  # type: ignore[call-overload]  # released, never read
            self.head += 1
            if self.head * 2 > len(runs):
                del runs[: self.head], self.firsts[: self.head]
                self.head = 0
        else:
            i = runs.index(run, self.head)
            del runs[i], self.firsts[i]
        return self.head == len(runs)


class EntryCache:
    """Entries by position in runs, least recently added evicted first, within
    ``capacity`` bytes."""

    def __init__(self, capacity: int = 0) -> None:
        self.capacity = capacity
        self.size = 0
        self._count = 0
        self._order: deque[_Run] = deque()  # oldest first
        # Per ledger: its runs ordered by first entry id, and those first ids (for bisect).
        self._ledgers: dict[int, _LedgerRuns] = {}

    def __len__(self) -> int:
        return self._count

    def positions(self) -> Iterator[Position]:
        """Every cached entry's position (oldest run first)."""
        for run in self._order:
            for entry_id in range(run.first, run.end):
                yield (run.ledger_id, entry_id)

    def get(self, position: Position) -> bytes | None:
        return self.get_run(position[0], position[1], position[1])[0]

    def get_run(self, ledger_id: int, first: int, last: int) -> list[bytes | None]:
        """Entries ``first..last`` of ``ledger_id``, ``None`` where not cached."""
        result: list[bytes | None] = [None] * (last - first + 1)
        ledger = self._ledgers.get(ledger_id)
        if ledger is None:
            return result
        runs, head = ledger.runs, ledger.head
        i = max(bisect_right(ledger.firsts, first, head) - 1, head)
        while i < len(runs) and runs[i].first <= last:
            run = runs[i]
            lo, hi = max(first, run.first), min(last + 1, run.end)
            if lo < hi:
                data, bounds, base = run.data, run.bounds, run.first
                result[lo - first : hi - first] = [
                    data[bounds[k] : bounds[k + 1]] for k in range(lo - base, hi - base)
                ]
            i += 1
        return result

    def put(self, position: Position, data: bytes) -> None:
        self.put_run(position[0], position[1], [data])

    def put_run(self, ledger_id: int, first: int, run: list[bytes]) -> None:
        """Cache ``run[k]`` as entry ``first + k`` of ``ledger_id`` (replacing whatever was
        cached for those positions), then evict the oldest runs down to the budget."""
        if not run:
            return
        if len(run) == 1:
            data = run[0]
            new = _Run(ledger_id, first, data, array("Q", (0, len(data))))
        else:
            bounds = array("Q", accumulate(map(len, run), initial=0))
            new = _Run(ledger_id, first, b"".join(run), bounds)
        self._drop_overlapping(ledger_id, first, new.end)
        if new.cost > self.capacity:
            return
        ledger = self._ledgers.get(ledger_id)
        if ledger is None:
            ledger = self._ledgers[ledger_id] = _LedgerRuns()
        ledger.add(new)
        self._order.append(new)
        self.size += new.cost
        self._count += new.count
        while self.size > self.capacity:
            self._forget(self._order.popleft())

    def drop(self, position: Position) -> None:
        """Forget the entry at ``position`` (with the rest of its run)."""
        self._drop_overlapping(position[0], position[1], position[1] + 1)

    def drop_ledger(self, ledger_id: int) -> None:
        """Forget every cached entry of one ledger (deleted, or its topic closed)."""
        ledger = self._ledgers.pop(ledger_id, None)
        if ledger is None:
            return
        for run in ledger.runs[ledger.head :]:
            self.size -= run.cost
            self._count -= run.count
        self._order = deque(run for run in self._order if run.ledger_id != ledger_id)

    def _drop_overlapping(self, ledger_id: int, first: int, end: int) -> None:
        ledger = self._ledgers.get(ledger_id)
        if ledger is None or ledger.runs[-1].end <= first:
            return  # the common case: appending after everything cached
        for run in [r for r in ledger.runs[ledger.head :] if r.first < end and first < r.end]:
            self._order.remove(run)
            self._forget(run)

    def _forget(self, run: _Run) -> None:
        """Take ``run`` out of its ledger's list and the accounting (not out of the order)."""
        ledger = self._ledgers[run.ledger_id]
        if ledger.remove(run):
            del self._ledgers[run.ledger_id]
        self.size -= run.cost
        self._count -= run.count
