"""Key_Shared consistent hashing: ``ConsistentHashingStickyKeyConsumerSelector`` (3.3.0/3.3.1).

The ring is the 31-bit hash space ``[0, 2**31 - 1]`` (3.x does not reduce to 65536 slots).
Each consumer puts ``number_of_points`` (default 100) points on it, at
``murmur3_32_hash(consumer_name + "\\0" + str(i))`` for ``i`` in ``0..points-1`` (PR #22053).
A point held by several consumers keeps a list sorted by consumer name (Java
``String.compareTo``, i.e. by UTF-16 code unit).

``select(hash)`` walks to the first point ``>= hash`` (wrapping to the first point) and picks
``list[hash % len(list)]`` from that point's list.

Reported ranges (:meth:`consumer_key_hash_ranges`) describe who really receives each hash:
the slice ``(previous point, point]`` belongs to that point's list, the first slice starts at
0, and the wrap-around slice ``(last point, 2**31 - 1]`` belongs to the FIRST point's list.
Adjacent slices of one consumer are merged. A slice whose point is shared by ``k`` consumers
is interleaved (``hash % k``) and cannot be drawn as ranges; it is reported whole for every
consumer of the list, so such ranges overlap — :meth:`keyspace_shares` counts the interleaving
exactly. (Pulsar 3.3's own stats also report each shared slice for every consumer of the
list, but do not report the wrap-around slice at all and do not merge.)

Later releases differ (point string ``name\\0nameIndex\\0i``, later consumer replaces on a
collision in 3.3.2+; a 16-bit ring in 4.0): those belong in sibling classes.
"""

from __future__ import annotations

from bisect import bisect_left

from ..errors import ConsumerAssignError
from .base import C, HashRange, StickyKeyConsumerSelector
from .hashing import INT_MAX, murmur3_32_hash

__all__ = [
    "DEFAULT_NUMBER_OF_POINTS",
    "RING_SIZE",
    "ConsistentHashingStickyKeyConsumerSelector",
    "consumer_point_hash",
]

DEFAULT_NUMBER_OF_POINTS = 100
"""``subscriptionKeySharedConsistentHashingReplicaPoints`` default."""

RING_SIZE = INT_MAX + 1
"""Number of hashes on the 3.x ring (``2**31``)."""

KEY_SEPARATOR = "\0"


def consumer_point_hash(consumer_name: str, index: int) -> int:
    """Ring position of point ``index`` of a consumer named ``consumer_name`` (3.2.1–3.3.1)."""
    return murmur3_32_hash(f"{consumer_name}{KEY_SEPARATOR}{index}")


def _name_order(consumer: C) -> bytes:
    """Sort key equal to Java's ``String.compareTo`` on the consumer name."""
    return consumer.consumer_name.encode("utf-16-be", errors="surrogatepass")


def _count_residue(start: int, end: int, modulus: int, residue: int) -> int:
    """How many ``h`` in ``[start, end]`` have ``h % modulus == residue``."""

    def upto(x: int) -> int:  # count in [0, x]
        return (x - residue) // modulus + 1 if x >= residue else 0

    return upto(end) - upto(start - 1)


class ConsistentHashingStickyKeyConsumerSelector(StickyKeyConsumerSelector[C]):
    """Places every consumer at ``number_of_points`` points of a 31-bit hash ring."""

    def __init__(self, number_of_points: int = DEFAULT_NUMBER_OF_POINTS) -> None:
        if number_of_points < 1:
            raise ValueError(f"number_of_points must be >= 1, got {number_of_points}")
        self.number_of_points = number_of_points
        self._points: list[int] = []  # ascending ring points
        self._lists: list[list[C]] = []  # _lists[i] = consumers at _points[i], sorted by name
        self._consumers: dict[C, None] = {}  # in joining order

    @property
    def consumers(self) -> tuple[C, ...]:
        return tuple(self._consumers)

    def __contains__(self, consumer: object) -> bool:
        return consumer in self._consumers

    def add_consumer(self, consumer: C) -> None:
        if consumer in self._consumers:
            raise ConsumerAssignError(
                f"Consumer {consumer.consumer_name} is already on the hash ring"
            )
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

    def select(self, sticky_key_hash: int) -> C | None:
        if not self._points:
            return None
        index = bisect_left(self._points, sticky_key_hash)
        members = self._lists[index if index < len(self._points) else 0]
        return members[sticky_key_hash % len(members)]

    def consumer_key_hash_ranges(self) -> dict[C, list[HashRange]]:
        result: dict[C, list[HashRange]] = {}
        for start, end, members in self._slices():
            for consumer in members:
                ranges = result.setdefault(consumer, [])
                if ranges and ranges[-1][1] + 1 == start:
                    ranges[-1] = (ranges[-1][0], end)
                else:
                    ranges.append((start, end))
        return result

    def ring(self) -> list[tuple[int, tuple[C, ...]]]:
        """The ring points ascending, each with the consumers that hold it (sorted by name)."""
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

    def _point_hashes(self, consumer: C) -> list[int]:
        name = consumer.consumer_name
        return [consumer_point_hash(name, i) for i in range(self.number_of_points)]
