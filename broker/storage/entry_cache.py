"""The broker-wide entry cache: recently written entries of every managed ledger, bounded.

Like Pulsar's ``managedLedgerCacheSizeMB``, one budget covers all topics of a storage (not
one per topic), so a hundred topics cost no more memory than one. Its size counts each
entry's bytes plus an estimate of the Python objects around it (key tuple, dict slot,
``bytes`` header), so the budget bounds real memory even for small entries. The least
recently added entries go first. Keys are ``(ledger_id, entry_id)``: ledger ids are unique
within a storage, so entries of different topics never collide.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict

from .base import Position

# Bytes of Python objects per cached entry beyond its data, measured with tracemalloc on
# CPython 3.11: the (ledger, entry) key tuple, its ints and the ordered dict's slot and
# link (~225), and the bytes object's header (33).
ENTRY_OVERHEAD = 260


class EntryCache:
    """Entries by position, least recently added evicted first, within ``capacity`` bytes."""

    def __init__(self, capacity: int = 0) -> None:
        self.capacity = capacity
        self.size = 0
        self._entries: OrderedDict[Position, bytes] = OrderedDict()
        self._per_ledger: defaultdict[int, int] = defaultdict(int)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, position: Position) -> bytes | None:
        return self._entries.get(position)

    def get_run(self, ledger_id: int, first: int, last: int) -> list[bytes | None]:
        """Entries ``first..last`` of ``ledger_id``, ``None`` where not cached."""
        get = self._entries.get
        return [get((ledger_id, entry_id)) for entry_id in range(first, last + 1)]

    def put(self, position: Position, data: bytes) -> None:
        cost = len(data) + ENTRY_OVERHEAD
        if cost > self.capacity:
            return
        entries = self._entries
        old = entries.get(position)
        if old is not None:
            self.size -= len(old) + ENTRY_OVERHEAD
        else:
            self._per_ledger[position[0]] += 1
        entries[position] = data
        self.size += cost
        while self.size > self.capacity:
            evicted, data = entries.popitem(last=False)
            self.size -= len(data) + ENTRY_OVERHEAD
            self._forget(evicted[0])

    def put_run(self, ledger_id: int, first: int, run: list[bytes]) -> None:
        """Cache ``run[k]`` as entry ``first + k`` of ``ledger_id``, then evict down to the
        budget once: the cheap path for a group of entries just made durable."""
        entries, capacity, overhead = self._entries, self.capacity, ENTRY_OVERHEAD
        size = self.size
        added = 0
        for entry_id, data in enumerate(run, first):
            cost = len(data) + overhead
            if cost > capacity:
                continue
            position = (ledger_id, entry_id)
            if position in entries:
                old = entries.pop(position)
                size -= len(old) + overhead
                added -= 1
            entries[position] = data
            size += cost
            added += 1
        if added:
            self._per_ledger[ledger_id] += added
        if size > capacity:
            per_ledger, popitem = self._per_ledger, entries.popitem
            while size > capacity:
                (evicted, _), data = popitem(last=False)
                size -= len(data) + overhead
                left = per_ledger[evicted] - 1
                if left:
                    per_ledger[evicted] = left
                else:
                    del per_ledger[evicted]
        self.size = size

    def drop(self, position: Position) -> None:
        data = self._entries.pop(position, None)
        if data is not None:
            self.size -= len(data) + ENTRY_OVERHEAD
            self._forget(position[0])

    def drop_ledger(self, ledger_id: int) -> None:
        """Forget every cached entry of one ledger (deleted, or its topic closed)."""
        if not self._per_ledger.get(ledger_id):
            return
        for position in [p for p in self._entries if p[0] == ledger_id]:
            self.drop(position)

    def _forget(self, ledger_id: int) -> None:
        left = self._per_ledger[ledger_id] - 1
        if left:
            self._per_ledger[ledger_id] = left
        else:
            del self._per_ledger[ledger_id]
