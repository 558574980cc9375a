"""Key_Shared STICKY mode: ``HashRangeExclusiveStickyKeyConsumerSelector`` (fixed rules).

Every consumer declares its own inclusive slot ranges inside ``[0, range_size - 1]``
(``KeySharedPolicy.stickyHashRange()``); the selector only checks them and looks them up.
The same class filters Exclusive/Failover consumers and readers that declare key hash
ranges: register the one consumer, and an entry whose :meth:`select` is ``None`` is skipped.

Validation, in this order, each failure a one-line
:class:`~pulsarlab.broker.errors.ConsumerAssignError` that leaves the selector unchanged,
worded as Pulsar words it (the broker's own messages print ranges as ``[s,e]``, the
client's ``KeySharedPolicy`` check uses ``Range.toString``, ``[s, e]``):

1. ranges missing or empty — "Ranges for KeyShared policy must not be empty."
2. a range with start > end — "Fixed hash range start > end for range: [s,e]"
3. a range outside ``[0, 65535]`` — "Ranges must be [0, 65535] but provided range is [s, e]"
   (Pulsar checks this in the client; the broker here checks it too)
4. two of the consumer's own ranges overlap — "Consumer's own ranges conflict: [a,b]
   overlaps with [c,d]"
5. a range overlaps another consumer's — "Range conflict with consumer <consumer>", the
   consumer as its ``str()`` prints it (the broker's consumers print like Pulsar's
   ``Consumer.toString``); ranges are inclusive: ``[0, 10]`` and ``[10, 20]`` conflict.
   The declared ranges are checked in the order given, each against the registered range
   starting at or before it, then the one starting after it
   (``findConflictingConsumer``).

Selection is the fixed rule of Pulsar 3.3.9+ (PR #24730): the consumer whose range contains
``hash % range_size``, else ``None``. :class:`LegacyHashRangeExclusiveStickyKeyConsumerSelector`
is the 3.3.0–3.3.8 sibling (its own validation and the floor/ceiling selection), chosen by the
broker's ``pulsar_version``. :meth:`legacy_floor_ceiling_select` reproduces the buggy
rule of Pulsar ≤ 3.3.8 for teaching (see its docstring). Pulsar's 3.1+ broker also pings the
conflicting consumer's connection before rejecting; that liveness check is the dispatcher's
job, not the selector's.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import pairwise

from ..errors import ConsumerAssignError
from .base import HashRange, HashRangeConsumer, StickyKeyConsumerSelector, format_range
from .hashing import RANGE_SIZE

__all__ = [
    "HashRangeExclusiveStickyKeyConsumerSelector",
    "LegacyHashRangeExclusiveStickyKeyConsumerSelector",
]


def _overlaps(a: HashRange, b: HashRange) -> bool:
    return max(a[0], b[0]) <= min(a[1], b[1])


def _broker_range(r: HashRange) -> str:
    """A range as the broker's validation messages print it: ``[s,e]``, no space."""
    return f"[{r[0]},{r[1]}]"


class HashRangeExclusiveStickyKeyConsumerSelector(StickyKeyConsumerSelector[HashRangeConsumer]):
    """Gives each consumer exactly the hash ranges it declared (``KeySharedMode.STICKY``)."""

    def __init__(self, range_size: int = RANGE_SIZE) -> None:
        if range_size < 1:
            raise ValueError(f"range size must be greater than 0, got {range_size}")
        self.range_size = range_size
        self._starts: list[int] = []  # ascending range starts
        self._ends: list[int] = []  # _ends[i] ends the range starting at _starts[i]
        self._owners: list[HashRangeConsumer] = []
        self._ranges_of: dict[HashRangeConsumer, list[HashRange]] = {}  # joining order

    @property
    def consumers(self) -> tuple[HashRangeConsumer, ...]:
        return tuple(self._ranges_of)

    def __contains__(self, consumer: object) -> bool:
        return consumer in self._ranges_of

    def add_consumer(self, consumer: HashRangeConsumer) -> None:
        ranges = self.validate(consumer)
        for start, end in ranges:
            index = bisect_left(self._starts, start)
            self._starts.insert(index, start)
            self._ends.insert(index, end)
            self._owners.insert(index, consumer)
        self._ranges_of[consumer] = ranges

    def remove_consumer(self, consumer: HashRangeConsumer) -> None:
        if self._ranges_of.pop(consumer, None) is None:
            return
        keep = [i for i, owner in enumerate(self._owners) if owner != consumer]
        self._starts = [self._starts[i] for i in keep]
        self._ends = [self._ends[i] for i in keep]
        self._owners = [self._owners[i] for i in keep]

    def select(self, sticky_key_hash: int) -> HashRangeConsumer | None:
        slot = sticky_key_hash % self.range_size
        index = bisect_right(self._starts, slot) - 1
        if index >= 0 and slot <= self._ends[index]:
            return self._owners[index]
        return None

    def legacy_floor_ceiling_select(self, sticky_key_hash: int) -> HashRangeConsumer | None:
        """The BUGGY selection of Pulsar ≤ 3.3.8 (≤ 3.0.13, ≤ 4.0.6), for the tutorial only.

        The old broker kept every range's start AND end as keys of one ``TreeMap`` and
        returned ``floorEntry(slot)``'s consumer when it equalled ``ceilingEntry(slot)``'s.
        A slot in the gap between two ranges of the SAME consumer therefore went to that
        consumer too: with ``[0, 9999], [20000, 29999]`` it also receives slot 15000. Takes a
        31-bit hash or a slot (reduced with ``% range_size``). Never use it to dispatch.
        """
        slot = sticky_key_hash % self.range_size
        index = bisect_right(self._starts, slot) - 1
        if index < 0:
            return None  # no floor entry
        owner = self._owners[index]
        if slot <= self._ends[index]:
            return owner  # floor and ceiling are this range's own start/end
        following = index + 1
        if following < len(self._starts) and self._owners[following] == owner:
            return owner  # floor = end of one range, ceiling = start of the next: same owner
        return None

    def consumer_key_hash_ranges(self) -> dict[HashRangeConsumer, list[HashRange]]:
        result: dict[HashRangeConsumer, list[HashRange]] = {}
        for start, end, owner in zip(self._starts, self._ends, self._owners, strict=True):
            result.setdefault(owner, []).append((start, end))
        return result

    def validate(self, consumer: HashRangeConsumer) -> list[HashRange]:
        """Check ``consumer``'s declared ranges against the rules; return them sorted.

        Raises :class:`~pulsarlab.broker.errors.ConsumerAssignError` with the first rule
        broken. Changes nothing.
        """
        declared: Sequence[HashRange] | None = getattr(consumer, "key_hash_ranges", None)
        if not declared:
            raise ConsumerAssignError("Ranges for KeyShared policy must not be empty.")
        ranges = [(int(start), int(end)) for start, end in declared]
        for r in ranges:
            if r[0] > r[1]:
                raise ConsumerAssignError(
                    f"Fixed hash range start > end for range: {_broker_range(r)}"
                )
        top = self.range_size - 1
        for r in ranges:
            if r[0] < 0 or r[1] > top:
                raise ConsumerAssignError(
                    f"Ranges must be [0, {top}] but provided range is {format_range(r)}"
                )
        ordered = sorted(ranges)
        for current, following in pairwise(ordered):
            if _overlaps(current, following):
                raise ConsumerAssignError(
                    f"Consumer's own ranges conflict: {_broker_range(current)} overlaps with "
                    f"{_broker_range(following)}"
                )
        for r in ranges:  # in the declared order, as findConflictingConsumer iterates
            conflict = self._first_overlap(r)
            if conflict is not None:
                raise ConsumerAssignError(f"Range conflict with consumer {conflict[1]}")
        return ordered

    def _first_overlap(self, r: HashRange) -> tuple[HashRange, HashRangeConsumer] | None:
        """The registered range overlapping ``r`` that starts lowest, with its owner."""
        # Registered ranges never overlap each other, so only the range starting at or
        # before r's start and those starting inside r can overlap it.
        index = max(bisect_right(self._starts, r[0]) - 1, 0)
        while index < len(self._starts) and self._starts[index] <= r[1]:
            existing = (self._starts[index], self._ends[index])
            if _overlaps(r, existing):
                return existing, self._owners[index]
            index += 1
        return None


class LegacyHashRangeExclusiveStickyKeyConsumerSelector(
    HashRangeExclusiveStickyKeyConsumerSelector
):
    """STICKY mode as Pulsar 3.3.0–3.3.8 had it (before PR #24730).

    The broker kept every range's start and end as keys of one ``TreeMap`` and selected
    with :meth:`legacy_floor_ceiling_select` (a consumer also catches the gaps between its
    own ranges). Its validation checked, range by range in the declared order: start > end
    ("Fixed hash range start > end", no range printed), then a conflict named by the
    ``floorEntry(end)`` key inside the range, else the ``ceilingEntry(start)`` key inside
    it, else a range swallowed whole by one consumer's range. A consumer's own overlapping
    ranges were not rejected. The ``[0, 65535]`` bound is checked first, as the client does.
    """

    def select(self, sticky_key_hash: int) -> HashRangeConsumer | None:
        return self.legacy_floor_ceiling_select(sticky_key_hash)

    def validate(self, consumer: HashRangeConsumer) -> list[HashRange]:
        declared: Sequence[HashRange] | None = getattr(consumer, "key_hash_ranges", None)
        if not declared:
            raise ConsumerAssignError("Ranges for KeyShared policy must not be empty.")
        ranges = [(int(start), int(end)) for start, end in declared]
        top = self.range_size - 1
        for r in ranges:
            if r[0] <= r[1] and (r[0] < 0 or r[1] > top):
                raise ConsumerAssignError(
                    f"Ranges must be [0, {top}] but provided range is {format_range(r)}"
                )
        keys = sorted(
            [(s, i, o) for i, (s, o) in enumerate(zip(self._starts, self._owners, strict=True))]
            + [(e, i, o) for i, (e, o) in enumerate(zip(self._ends, self._owners, strict=True))],
            key=lambda k: k[0],
        )
        points = [k[0] for k in keys]
        for start, end in ranges:
            if start > end:
                raise ConsumerAssignError("Fixed hash range start > end")
            floor = bisect_right(points, end) - 1
            ceiling = bisect_left(points, start)
            if floor >= 0 and points[floor] >= start:
                raise ConsumerAssignError(f"Range conflict with consumer {keys[floor][2]}")
            if ceiling < len(points) and points[ceiling] <= end:
                raise ConsumerAssignError(f"Range conflict with consumer {keys[ceiling][2]}")
            if floor >= 0 and ceiling < len(points) and keys[floor][2] == keys[ceiling][2]:
                owner = keys[floor][2]
                if any(_overlaps((start, end), r) for r in self._ranges_of[owner]):
                    raise ConsumerAssignError(f"Range conflict with consumer {owner}")
        return sorted(ranges)
