"""Pulsar 4.0's Key_Shared selectors (PIP-379, PRs #23352, #23441, #23447).

What changed from 3.3:

* **Sticky key hashes are slots.** ``StickyKeyConsumerSelectorUtils.makeStickyKeyHash``
  reduces the 31-bit murmur hash into the selector's key hash range:
  ``h % size + start``, and 0 (``STICKY_KEY_HASH_NOT_SET``) becomes 1. Auto-split and sticky
  ranges use ``[0, 65535]``; consistent hashing uses ``[1, 65535]`` (so ``h % 65535 + 1``).
* **Consistent hashing on 16 bits.** Each consumer puts ``points`` ring points at
  ``makeStickyKeyHash(name + "\\0" + nameIndex + "\\0" + i)``; ``nameIndex`` is the lowest
  index not used by another consumer of the same name (``ConsumerNameIndexTracker``). On a
  collision the FIRST consumer keeps the point (``putIfAbsent``) and later ones queue behind
  it, promoted in order when it leaves. ``select`` is the ceiling point, wrapping.
* **Reported ranges** come from the assignment snapshot: consecutive points of one consumer
  joined, the wrap-around range ``(last point, 65535]`` given to the first point's consumer,
  then each consumer's ranges merged.
"""

from __future__ import annotations

from bisect import bisect_left

from ..errors import ConsumerAssignError
from .auto_split import HashRangeAutoSplitStickyKeyConsumerSelector
from .base import C, HashRange, StickyKeyConsumerSelector
from .consistent_hashing import DEFAULT_NUMBER_OF_POINTS
from .hash_assignments import ConsumerHashAssignmentsSnapshot, HashRangeAssignment
from .hashing import RANGE_SIZE, murmur3_32_hash
from .sticky import HashRangeExclusiveStickyKeyConsumerSelector

__all__ = [
    "STICKY_KEY_HASH_NOT_SET",
    "ConsistentHashingStickyKeyConsumerSelector40",
    "ConsumerNameIndexTracker",
    "HashRangeAutoSplitStickyKeyConsumerSelector40",
    "HashRangeExclusiveStickyKeyConsumerSelector40",
    "key_hash_range_of",
    "make_selector_40",
    "make_sticky_key_hash_40",
]

STICKY_KEY_HASH_NOT_SET = 0
"""The hash value 4.0 reserves for "no hash" (``StickyKeyConsumerSelector``)."""

_FULL_RANGE: HashRange = (0, RANGE_SIZE - 1)
_RING_RANGE: HashRange = (STICKY_KEY_HASH_NOT_SET + 1, RANGE_SIZE - 1)


def make_sticky_key_hash_40(murmur_hash: int, key_hash_range: HashRange = _FULL_RANGE) -> int:
    """``makeStickyKeyHash``: a 31-bit murmur hash reduced into ``key_hash_range`` (0 → 1)."""
    start, end = key_hash_range
    value = murmur_hash % (end - start + 1) + start
    return value if value != STICKY_KEY_HASH_NOT_SET else STICKY_KEY_HASH_NOT_SET + 1


def key_hash_range_of(selector: StickyKeyConsumerSelector) -> HashRange:
    """The selector's ``getKeyHashRange()`` (inclusive)."""
    return getattr(selector, "key_hash_range", _FULL_RANGE)


class ConsumerNameIndexTracker:
    """The lowest free index per consumer name, held while the consumer is on the ring."""

    def __init__(self) -> None:
        self._used: dict[str, set[int]] = {}
        self._entries: dict[object, list[int]] = {}  # consumer -> [name index, ref count]

    def increase_consumer_ref_count_and_return_index(self, consumer: C) -> int:
        entry = self._entries.get(consumer)
        if entry is None:
            used = self._used.setdefault(consumer.consumer_name, set())
            index = 0
            while index in used:
                index += 1
            used.add(index)
            entry = self._entries[consumer] = [index, 0]
        entry[1] += 1
        return entry[0]

    def get_tracked_index(self, consumer: C) -> int:
        entry = self._entries.get(consumer)
        return entry[0] if entry is not None else -1

    def decrease_consumer_ref_count(self, consumer: C) -> None:
        entry = self._entries.get(consumer)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del self._entries[consumer]
            used = self._used[consumer.consumer_name]
            used.discard(entry[0])
            if not used:
                del self._used[consumer.consumer_name]


class _RingPoint:
    """A ring point: the consumer selected there and those colliding behind it, in order."""

    __slots__ = ("colliding", "selected")

    def __init__(self, selected: object) -> None:
        self.selected = selected
        self.colliding: list[object] = []

    def remove(self, consumer: object) -> bool:
        """Drop ``consumer``; return whether the point is now empty."""
        if self.selected is consumer:
            self.selected = self.colliding.pop(0) if self.colliding else None
        else:
            self.colliding = [c for c in self.colliding if c is not consumer]
        return self.selected is None


class ConsistentHashingStickyKeyConsumerSelector40(StickyKeyConsumerSelector[C]):
    """Pulsar 4.0's consistent-hashing ring on ``[1, 65535]``."""

    key_hash_range: HashRange = _RING_RANGE

    def __init__(self, number_of_points: int = DEFAULT_NUMBER_OF_POINTS) -> None:
        if number_of_points < 1:
            raise ValueError(f"number_of_points must be >= 1, got {number_of_points}")
        self.number_of_points = number_of_points
        self._points: list[int] = []  # ascending
        self._entries: list[_RingPoint] = []  # _entries[i] sits at _points[i]
        self._consumers: dict[C, None] = {}
        self._name_index = ConsumerNameIndexTracker()

    @property
    def consumers(self) -> tuple[C, ...]:
        return tuple(self._consumers)

    def __contains__(self, consumer: object) -> bool:
        return consumer in self._consumers

    def make_sticky_key_hash(self, sticky_key: bytes) -> int:
        return make_sticky_key_hash_40(murmur3_32_hash(sticky_key), self.key_hash_range)

    def point_hash(self, consumer_name: str, name_index: int, point_index: int) -> int:
        """Ring position of one point (``calculateHashForConsumerAndIndex``)."""
        key = f"{consumer_name}\0{name_index}\0{point_index}"
        return make_sticky_key_hash_40(murmur3_32_hash(key), self.key_hash_range)

    def add_consumer(self, consumer: C) -> None:
        if consumer in self._consumers:
            raise ConsumerAssignError(
                f"Consumer {consumer.consumer_name} is already on the hash ring"
            )
        self._consumers[consumer] = None
        for i in range(self.number_of_points):
            name_index = self._name_index.increase_consumer_ref_count_and_return_index(consumer)
            point = self.point_hash(consumer.consumer_name, name_index, i)
            index = bisect_left(self._points, point)
            if index < len(self._points) and self._points[index] == point:
                self._entries[index].colliding.append(consumer)
            else:
                self._points.insert(index, point)
                self._entries.insert(index, _RingPoint(consumer))

    def remove_consumer(self, consumer: C) -> None:
        if consumer not in self._consumers:
            return
        del self._consumers[consumer]
        name_index = self._name_index.get_tracked_index(consumer)
        for i in range(self.number_of_points):
            point = self.point_hash(consumer.consumer_name, name_index, i)
            index = bisect_left(self._points, point)
            if (
                index < len(self._points)
                and self._points[index] == point
                and self._entries[index].remove(consumer)
            ):
                del self._points[index]
                del self._entries[index]
            self._name_index.decrease_consumer_ref_count(consumer)

    def select(self, sticky_key_hash: int) -> C | None:
        if not self._points:
            return None
        index = bisect_left(self._points, sticky_key_hash)
        entry = self._entries[index if index < len(self._points) else 0]
        return entry.selected  # type: ignore[return-value]

    def hash_assignments(self) -> list[HashRangeAssignment]:
        """The ring as sorted ``(range, consumer)`` assignments covering ``[1, 65535]``."""
        first, last = self.key_hash_range
        out: list[HashRangeAssignment] = []
        start = first
        for point, entry in zip(self._points, self._entries, strict=True):
            if out and out[-1].consumer is entry.selected:
                out[-1] = HashRangeAssignment(out[-1].start, point, entry.selected)
            else:
                out.append(HashRangeAssignment(start, point, entry.selected))
            start = point + 1
        if self._points and self._points[-1] != last:
            wrap_owner = self._entries[0].selected
            if out[-1].consumer is wrap_owner:
                out[-1] = HashRangeAssignment(out[-1].start, last, wrap_owner)
            else:
                out.append(HashRangeAssignment(start, last, wrap_owner))
        return out

    def consumer_key_hash_ranges(self) -> dict[C, list[HashRange]]:
        return ConsumerHashAssignmentsSnapshot(self.hash_assignments()).ranges_by_consumer()

    def ring(self) -> list[tuple[int, tuple[C, ...]]]:
        """The ring points ascending, each with its selected consumer then the colliding ones."""
        return [
            (p, (e.selected, *e.colliding))  # type: ignore[misc]
            for p, e in zip(self._points, self._entries, strict=True)
        ]


class HashRangeAutoSplitStickyKeyConsumerSelector40(HashRangeAutoSplitStickyKeyConsumerSelector[C]):
    """4.0's auto-split selector: the 3.x splitting, with 4.0's sticky key hash."""

    key_hash_range: HashRange = _FULL_RANGE

    def make_sticky_key_hash(self, sticky_key: bytes) -> int:
        return make_sticky_key_hash_40(murmur3_32_hash(sticky_key), self.key_hash_range)


class HashRangeExclusiveStickyKeyConsumerSelector40(HashRangeExclusiveStickyKeyConsumerSelector):
    """4.0's STICKY selector: the 3.x declared ranges, with 4.0's sticky key hash."""

    key_hash_range: HashRange = _FULL_RANGE

    def make_sticky_key_hash(self, sticky_key: bytes) -> int:
        return make_sticky_key_hash_40(murmur3_32_hash(sticky_key), self.key_hash_range)


def make_selector_40(
    mode: str,
    use_consistent_hashing: bool,
    consistent_hashing_points: int = DEFAULT_NUMBER_OF_POINTS,
) -> StickyKeyConsumerSelector:
    """A fresh 4.0 selector for a Key_Shared subscription in ``mode`` (AUTO_SPLIT / STICKY)."""
    name = str(getattr(mode, "name", mode)).lower()
    if name == "sticky":
        return HashRangeExclusiveStickyKeyConsumerSelector40()
    if name == "auto_split":
        if use_consistent_hashing:
            return ConsistentHashingStickyKeyConsumerSelector40(consistent_hashing_points)
        return HashRangeAutoSplitStickyKeyConsumerSelector40()
    raise ValueError(f"unknown Key_Shared mode {mode!r}; expected auto_split or sticky")
