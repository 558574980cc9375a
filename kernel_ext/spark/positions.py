"""Positions in a partition and the arithmetic of offset ranges (pure, no I/O).

A :class:`Position` ``(ledger, entry, partition, batch)`` says how far a partition has been
read, *inclusive*: everything at or before it is consumed. ``batch == -1`` means the whole
entry ``(ledger, entry)`` (every message of a batched entry); ``batch >= 0`` means the messages
``0..batch`` of that entry. ``(-1, -1, partition, -1)`` is "nothing read" (earliest). A range
``(start, end]`` is what a Spark partition reads: the messages after ``start`` up to and
including ``end``.

Admission control counts *entries* (a batched entry is one unit, as Pulsar's own
``maxEntries`` read limits do) using the ledger list of the topic's internal stats.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

__all__ = [
    "Position",
    "advance",
    "count_entries",
    "past_end",
    "reaches_end",
    "split_budget",
]

_WHOLE = 1 << 62  # sorts after every batch index


class Position(NamedTuple):
    """How far a partition is read (inclusive); see the module docstring."""

    ledger: int
    entry: int
    partition: int = -1
    batch: int = -1

    @staticmethod
    def earliest(partition: int = -1) -> Position:
        return Position(-1, -1, partition, -1)

    @property
    def is_earliest(self) -> bool:
        return self.ledger < 0

    @property
    def key(self) -> tuple[int, int, int]:
        """Ordering key: ledger, entry, then batch index (the whole entry sorts last)."""
        return (self.ledger, self.entry, self.batch if self.batch >= 0 else _WHOLE)

    def to_json(self) -> list[int]:
        return [self.ledger, self.entry, self.partition, self.batch]

    @staticmethod
    def from_json(value: Sequence[int]) -> Position:
        ledger, entry, partition, batch = (int(v) for v in value)
        return Position(ledger, entry, partition, batch)


def past_end(ledger: int, entry: int, batch_index: int, end: Position) -> bool:
    """Whether the message ``(ledger, entry, batch_index)`` lies after ``end``."""
    if (ledger, entry) != (end.ledger, end.entry):
        return (ledger, entry) > (end.ledger, end.entry)
    return end.batch >= 0 and batch_index > end.batch


def reaches_end(ledger: int, entry: int, batch_index: int, batch_size: int, end: Position) -> bool:
    """Whether the message ``(ledger, entry, batch_index)`` is the last one of ``(..., end]``."""
    if (ledger, entry) != (end.ledger, end.entry):
        return (ledger, entry) > (end.ledger, end.entry)
    if end.batch < 0:
        return batch_index < 0 or batch_index >= batch_size - 1
    return batch_index >= end.batch


Ledgers = Sequence[tuple[int, int]]  # (ledger id, number of entries), oldest first


def _span(ledger_id: int, entries: int, start: Position, end: Position) -> tuple[int, int]:
    """First and last entry of ``ledger_id`` that lie after ``start`` and not after ``end``."""
    if ledger_id < start.ledger:
        first = entries
    elif ledger_id == start.ledger:
        first = start.entry + 1
    else:
        first = 0
    if ledger_id < end.ledger:
        last = entries - 1
    elif ledger_id == end.ledger:
        last = min(end.entry, entries - 1)
    else:
        last = -1
    return first, last


def count_entries(start: Position, end: Position, ledgers: Ledgers) -> int:
    """Entries in ``(start, end]``; the rest of a partly read entry counts as one."""
    if end.key <= start.key:
        return 0
    units = 1 if start.batch >= 0 else 0
    for ledger_id, entries in ledgers:
        first, last = _span(ledger_id, entries, start, end)
        units += max(0, last - first + 1)
    return max(units, 1)


def advance(start: Position, n: int, end: Position, ledgers: Ledgers) -> Position:
    """The position ``n`` entries after ``start``, never beyond ``end``."""
    if n <= 0 or end.key <= start.key:
        return start
    remaining = n
    candidate: Position | None = None
    if start.batch >= 0:
        remaining -= 1
        candidate = Position(start.ledger, start.entry, end.partition, -1)
    if remaining > 0:
        candidate = None
        for ledger_id, entries in ledgers:
            first, last = _span(ledger_id, entries, start, end)
            available = last - first + 1
            if available <= 0:
                continue
            if remaining <= available:
                candidate = Position(ledger_id, first + remaining - 1, end.partition, -1)
                break
            remaining -= available
    if candidate is None or candidate.key >= end.key:
        return end
    return candidate


def split_budget(available: Mapping[str, int], budget: int) -> dict[str, int]:
    """Share ``budget`` entries among partitions in proportion to what each has available.

    Deterministic: floors first, then the leftover units by largest remainder (ties by name).
    """
    total = sum(available.values())
    if total <= budget:
        return dict(available)
    shares = {name: budget * count // total for name, count in available.items()}
    left = budget - sum(shares.values())
    order = sorted(
        available,
        key=lambda name: (-((budget * available[name]) % total), name),
    )
    for name in order:
        if left <= 0:
            break
        if shares[name] < available[name]:
            shares[name] += 1
            left -= 1
    return shares
