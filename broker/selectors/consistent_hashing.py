"""Key_Shared consistent hashing: Pulsar 3.3's ``ConsistentHashingStickyKeyConsumerSelector``.

The ring is the 31-bit hash space ``[0, 2**31 - 1]`` (3.x does not reduce to 65536 slots).
Each consumer puts ``number_of_points`` (default 100) points on it; ``select(hash)`` walks to
the first point ``>= hash``, wrapping to the first point. Two releases of 3.3 differ:

* :class:`ConsistentHashingStickyKeyConsumerSelector` — 3.3.2+ (PR #23327, also 3.0.7+):
  points at ``murmur3_32_hash(name + "\\0" + nameIndex + "\\0" + i)``, where ``nameIndex`` is
  the lowest index free for that consumer name (0 unless names repeat; kept while the
  consumer holds a point, so a consumer that rejoins gets its points back). A point holds
  one consumer: on a collision the later consumer replaces the earlier one.
  ``getConsumerKeyHashRanges`` reports one range ``[previous point + 1, point]`` per point,
  not merged, and adds the wrap-around range ``[last point + 1, 2**31 - 2]`` to the first
  point's consumer.
* :class:`LegacyConsistentHashingStickyKeyConsumerSelector` — 3.2.1 to 3.3.1 (PR #22053):
  points at ``murmur3_32_hash(name + "\\0" + i)``; a point held by several consumers keeps
  a list sorted by consumer name (Java ``String.compareTo``, i.e. by UTF-16 code unit) and
  ``select`` picks ``list[hash % len(list)]``. ``getConsumerKeyHashRanges`` reports each
  point's range for every consumer of its list and no wrap-around range.

:meth:`~ConsistentHashRing.consumer_key_hash_ranges` returns exactly what Pulsar's stats
print (``keyHashRanges``); who really receives each hash (wrap-around and shared points
included) is :meth:`~ConsistentHashRing.ring` and :meth:`~ConsistentHashRing.keyspace_shares`.
A 4.0 ring (16-bit, first consumer keeps a point) would be one more sibling class.
"""

from __future__ import annotations

from bisect import bisect_left

from ..errors import ConsumerAssignError
from .base import C, HashRange, StickyKeyConsumerSelector
from .hashing import INT_MAX, murmur3_32_hash

__all__ = [
    "DEFAULT_NUMBER_OF_POINTS",
    "RING_SIZE",
    "ConsistentHashRing",
    "ConsistentHashingStickyKeyConsumerSelector",
    "LegacyConsistentHashingStickyKeyConsumerSelector",
    "consumer_point_hash",
    "consumer_point_hash_with_name_index",
]

DEFAULT_NUMBER_OF_POINTS = 100
"""``subscriptionKeySharedConsistentHashingReplicaPoints`` default."""

RING_SIZE = INT_MAX + 1
"""Number of hashes on the 3.x ring (``2**31``)."""

KEY_SEPARATOR = "\0"


def consumer_point_hash(consumer_name: str, index: int) -> int:
    """Ring position of point ``index`` of a consumer named ``consumer_name`` (3.2.1–3.3.1)."""
    return murmur3_32_hash(f"{consumer_name}{KEY_SEPARATOR}{index}")


def consumer_point_hash_with_name_index(consumer_name: str, name_index: int, index: int) -> int:
    """Ring position of point ``index`` of a consumer with that name and name index (3.3.2+)."""
    return murmur3_32_hash(
        f"{consumer_name}{KEY_SEPARATOR}{name_index}{KEY_SEPARATOR}{index}"
    )


def _name_order(consumer: C) -> bytes:
    """Sort key equal to Java's ``String.compareTo`` on the consumer name."""
    return consumer.consumer_name.encode("utf-16-be", errors="surrogatepass")


def _count_residue(start: int, end: int, modulus: int, residue: int) -> int:
    """How many ``h`` in ``[start, end]`` have ``h % modulus == residue``."""

    def upto(x: int) -> int:  # count in [0, x]
        return (x - residue) // modulus + 1 if x >= residue else 0

    return upto(end) - upto(start - 1)


class ConsistentHashRing(StickyKeyConsumerSelector[C]):
    """What both 3.3 rings share: sorted points, each with the consumers holding it."""

    def __init__(self, number_of_points: int = DEFAULT_NUMBER_OF_POINTS) -> None:
        if number_of_points < 1:
            raise ValueError(f"number_of_points must be >= 1, got {number_of_points}")
        self.number_of_points = number_of_points
        self._points: list[int] = []  # ascending ring points
        self._lists: list[list[C]] = []  # _lists[i] = consumers at _points[i]
        self._consumers: dict[C, None] = {}  # in joining order

    @property
    def consumers(self) -> tuple[C, ...]:
        return tuple(self._consumers)

    def __contains__(self, consumer: object) -> bool:
        return consumer in self._consumers

    def _check_new(self, consumer: C) -> None:
        if consumer in self._consumers:
            raise ConsumerAssignError(
                f"Consumer {consumer.consumer_name} is already on the hash ring"
            )

    def select(self, sticky_key_hash: int) -> C | None:
        if not self._points:
            return None
        index = bisect_left(self._points, sticky_key_hash)
        members = self._lists[index if index < len(self._points) else 0]
        return members[sticky_key_hash % len(members)]

    def ring(self) -> list[tuple[int, tuple[C, ...]]]:
        """The ring points ascending, each with the consumers that hold it."""
        return [(p, tuple(m)) for p, m in zip(self._points, self._lists, strict=True)]

    def consumer_points(self) -> dict[C, list[int]]:
        """Each consumer's distinct ring points, ascending (for a ring widget)."""
        result: dict[C, list[int]] = {c: [] for c in self._consumers}
        for point, members in zip(self._points, self._lists, strict=True):
            for consumer in members:
                result[consumer].append(point)
        return result

    def keyspace_shares(self) -> dict[C, float]:
        """Each consumer's exact fraction of the 31-bit key space (they sum to 1)."""
        counts: dict[C, int] = dict.fromkeys(self._consumers, 0)
        for start, end, members in self._slices():
            if len(members) == 1:
                counts[members[0]] += end - start + 1
            else:
                for residue, consumer in enumerate(members):
                    counts[consumer] += _count_residue(start, end, len(members), residue)
        return {consumer: count / RING_SIZE for consumer, count in counts.items()}

    def _slices(self) -> list[tuple[int, int, list[C]]]:
        """The ring cut into ``(start, end, consumers)`` slices covering ``[0, 2**31 - 1]``."""
        slices: list[tuple[int, int, list[C]]] = []
        start = 0
        for point, members in zip(self._points, self._lists, strict=True):
            slices.append((start, point, members))
            start = point + 1
        if self._points and start <= INT_MAX:
            slices.append((start, INT_MAX, self._lists[0]))
        return slices

    def _point_ranges(self) -> list[tuple[int, int, list[C]]]:
        """``(previous point + 1, point, consumers)`` per point, the first from 0."""
        out: list[tuple[int, int, list[C]]] = []
        start = 0
        for point, members in zip(self._points, self._lists, strict=True):
            out.append((start, point, members))
            start = point + 1
        return out


class ConsistentHashingStickyKeyConsumerSelector(ConsistentHashRing[C]):
    """Pulsar 3.3.2+'s ring: one consumer per point, a later consumer replaces on collision."""

    def __init__(self, number_of_points: int = DEFAULT_NUMBER_OF_POINTS) -> None:
        super().__init__(number_of_points)
        # ConsumerNameIndexTracker: consumer -> [name index, points held]; used indexes by name
        self._tracked: dict[C, list[int]] = {}
        self._used_indexes: dict[str, set[int]] = {}

    def add_consumer(self, consumer: C) -> None:
        self._check_new(consumer)
        self._consumers[consumer] = None
        name = consumer.consumer_name
        for i in range(self.number_of_points):
            name_index = self._hold(consumer)
            point = consumer_point_hash_with_name_index(name, name_index, i)
            index = bisect_left(self._points, point)
            if index < len(self._points) and self._points[index] == point:
                replaced = self._lists[index][0]
                self._lists[index] = [consumer]
                self._release(replaced)
            else:
                self._points.insert(index, point)
                self._lists.insert(index, [consumer])

    def remove_consumer(self, consumer: C) -> None:
        if consumer not in self._consumers:
            return
        del self._consumers[consumer]
        tracked = self._tracked.get(consumer)
        if tracked is None:
            return  # every point it had was taken over by later consumers
        name = consumer.consumer_name
        name_index = tracked[0]
        for i in range(self.number_of_points):
            point = consumer_point_hash_with_name_index(name, name_index, i)
            index = bisect_left(self._points, point)
            if (
                index < len(self._points)
                and self._points[index] == point
                and self._lists[index][0] is consumer
            ):
                del self._points[index]
                del self._lists[index]
                self._release(consumer)

    def consumer_key_hash_ranges(self) -> dict[C, list[HashRange]]:
        """``getConsumerKeyHashRanges`` (3.3.2+): one range per point, then the wrap range.

        The wrap range ``[last point + 1, 2**31 - 2]`` goes to the first point's consumer
        (at the end of its list), unless the last point is ``2**31 - 2``.
        """
        result: dict[C, list[HashRange]] = {}
        if not self._points:
            return result
        for start, end, members in self._point_ranges():
            result.setdefault(members[0], []).append((start, end))
        last = self._points[-1]
        if last != INT_MAX - 1:
            result[self._lists[0][0]].append((last + 1, INT_MAX - 1))
        return result

    def name_index(self, consumer: C) -> int:
        """The consumer's name index on the ring, -1 if it holds no point."""
        tracked = self._tracked.get(consumer)
        return tracked[0] if tracked is not None else -1

    def _hold(self, consumer: C) -> int:
        """Count one more point for ``consumer``; its name index (the lowest free one)."""
        tracked = self._tracked.get(consumer)
        if tracked is None:
            used = self._used_indexes.setdefault(consumer.consumer_name, set())
            name_index = next(i for i in range(len(used) + 1) if i not in used)
            used.add(name_index)
            tracked = self._tracked[consumer] = [name_index, 0]
        tracked[1] += 1
        return tracked[0]

    def _release(self, consumer: C) -> None:
        """One point fewer for ``consumer``; at none its name index is free again."""
        tracked = self._tracked[consumer]
        tracked[1] -= 1
        if tracked[1] == 0:
            del self._tracked[consumer]
            used = self._used_indexes[consumer.consumer_name]
            used.discard(tracked[0])
            if not used:
                del self._used_indexes[consumer.consumer_name]


class LegacyConsistentHashingStickyKeyConsumerSelector(ConsistentHashRing[C]):
    """Pulsar 3.2.1–3.3.1's ring: a point shared by a name-sorted list of consumers."""

    def add_consumer(self, consumer: C) -> None:
        self._check_new(consumer)
        self._consumers[consumer] = None
        for point in self._point_hashes(consumer):
            index = bisect_left(self._points, point)
            if index < len(self._points) and self._points[index] == point:
                members = self._lists[index]
                if consumer not in members:
                    members.append(consumer)
                    members.sort(key=_name_order)  # stable, like Java's List.sort
            else:
                self._points.insert(index, point)
                self._lists.insert(index, [consumer])

    def remove_consumer(self, consumer: C) -> None:
        if consumer not in self._consumers:
            return
        del self._consumers[consumer]
        for point in self._point_hashes(consumer):
            index = bisect_left(self._points, point)
            if index == len(self._points) or self._points[index] != point:
                continue  # already removed: the consumer had two equal points
            members = self._lists[index]
            members[:] = [c for c in members if c != consumer]
            if not members:
                del self._points[index]
                del self._lists[index]

    def consumer_key_hash_ranges(self) -> dict[C, list[HashRange]]:
        """``getConsumerKeyHashRanges`` (3.3.0/3.3.1): each point's range for every consumer
        of its list, not merged, no wrap-around range."""
        result: dict[C, list[HashRange]] = {}
        for start, end, members in self._point_ranges():
            for consumer in members:
                result.setdefault(consumer, []).append((start, end))
        return result

    def _point_hashes(self, consumer: C) -> list[int]:
        name = consumer.consumer_name
        return [consumer_point_hash(name, i) for i in range(self.number_of_points)]
