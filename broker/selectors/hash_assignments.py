"""Who owns which hash range, and which ranges a consumer lost (Pulsar 4.0, PIP-379).

Pulsar 4.0's selectors keep a ``ConsumerHashAssignmentsSnapshot`` (the key hash space cut
into ``(range, consumer)`` assignments, sorted and non-overlapping) and, on every consumer
add or remove, compare the snapshot before with the one after
(``resolveImpactedConsumers``). The result, ``ImpactedConsumersResult``, lists for each
existing consumer the hash ranges it lost; the Key_Shared dispatcher marks that consumer's
pending acks in those ranges as *draining*. Both are plain data here: a snapshot is built
from any selector's ``consumer_key_hash_ranges()`` (or a selector's own
``hash_assignments()``), so the 3.x auto-split selector serves 4.0 unchanged.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from .base import HashRange

__all__ = [
    "ConsumerHashAssignmentsSnapshot",
    "HashRangeAssignment",
    "ImpactedConsumersResult",
    "merge_overlapping_ranges",
]


@dataclass(frozen=True, slots=True)
class HashRangeAssignment:
    """One inclusive hash range and the consumer that receives it."""

    start: int
    end: int
    consumer: Any


def merge_overlapping_ranges(ranges: Iterable[HashRange]) -> list[HashRange]:
    """Sorted ranges with overlapping or touching ones joined (``mergeOverlappingRanges``)."""
    merged: list[HashRange] = []
    for start, end in sorted(ranges):
        if merged and merged[-1][1] >= start - 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


class ImpactedConsumersResult:
    """The hash ranges each existing consumer lost in one add or remove."""

    def __init__(self, removed_hash_ranges: dict[Any, list[HashRange]]) -> None:
        self.removed_hash_ranges = removed_hash_ranges
        self._starts = {c: [r[0] for r in ranges] for c, ranges in removed_hash_ranges.items()}

    def contains_sticky_key(self, consumer: Any, sticky_key_hash: int) -> bool:
        """Whether ``consumer`` lost ``sticky_key_hash`` (``containsStickyKey``)."""
        ranges = self.removed_hash_ranges.get(consumer)
        if not ranges:
            return False
        index = bisect_right(self._starts[consumer], sticky_key_hash) - 1
        return index >= 0 and sticky_key_hash <= ranges[index][1]

    def __bool__(self) -> bool:
        return bool(self.removed_hash_ranges)

    def __repr__(self) -> str:
        shown = {getattr(c, "consumer_name", c): r for c, r in self.removed_hash_ranges.items()}
        return f"ImpactedConsumersResult({shown})"


class ConsumerHashAssignmentsSnapshot:
    """The assignments of a selector at one moment, sorted by range."""

    def __init__(self, assignments: Sequence[HashRangeAssignment]) -> None:
        previous_end = None
        for a in assignments:
            if a.start > a.end or (previous_end is not None and a.start <= previous_end):
                raise ValueError("ranges must be non-overlapping and sorted")
            previous_end = a.end
        self.assignments: tuple[HashRangeAssignment, ...] = tuple(assignments)

    @classmethod
    def empty(cls) -> ConsumerHashAssignmentsSnapshot:
        return cls(())

    @classmethod
    def of_selector(cls, selector: Any) -> ConsumerHashAssignmentsSnapshot:
        """A selector's snapshot: its ``hash_assignments()``, else its reported ranges."""
        own = getattr(selector, "hash_assignments", None)
        if own is not None:
            return cls(own())
        pairs = [
            HashRangeAssignment(start, end, consumer)
            for consumer, ranges in selector.consumer_key_hash_ranges().items()
            for start, end in ranges
        ]
        return cls(sorted(pairs, key=lambda a: a.start))

    def ranges_by_consumer(self) -> dict[Any, list[HashRange]]:
        """Each consumer's ranges, touching ones merged (``getRangesByConsumer``)."""
        grouped: dict[Any, list[HashRange]] = {}
        for a in self.assignments:
            grouped.setdefault(a.consumer, []).append((a.start, a.end))
        return {c: merge_overlapping_ranges(r) for c, r in grouped.items()}

    def resolve_impacted_consumers(
        self, after: ConsumerHashAssignmentsSnapshot
    ) -> ImpactedConsumersResult:
        """The ranges each consumer of ``self`` no longer receives in ``after``."""
        removed: dict[Any, list[HashRange]] = {}
        for start, end, before_owner, after_owner in _diff(self.assignments, after.assignments):
            if before_owner is not None and before_owner is not after_owner:
                removed.setdefault(before_owner, []).append((start, end))
        return ImpactedConsumersResult(
            {c: merge_overlapping_ranges(r) for c, r in removed.items()}
        )


def _diff(
    before: Sequence[HashRangeAssignment], after: Sequence[HashRangeAssignment]
) -> list[tuple[int, int, Any, Any]]:
    """The key space cut at every boundary of either side: ``(start, end, before, after)``."""
    cuts = sorted(
        {a.start for a in (*before, *after)} | {a.end + 1 for a in (*before, *after)}
    )
    out: list[tuple[int, int, Any, Any]] = []
    i = j = 0
    for start, next_start in pairwise(cuts):
        end = next_start - 1
        while i < len(before) and before[i].end < start:
            i += 1
        while j < len(after) and after[j].end < start:
            j += 1
        owner_before = before[i].consumer if i < len(before) and before[i].start <= start else None
        owner_after = after[j].consumer if j < len(after) and after[j].start <= start else None
        if owner_before is not None or owner_after is not None:
            out.append((start, end, owner_before, owner_after))
    return out
