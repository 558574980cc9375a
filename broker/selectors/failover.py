"""Failover active-consumer choice: Pulsar 3.3's ``pickAndScheduleActiveConsumer``.

1. Consumers are sorted by ``priority_level`` (lower number = higher priority), then by
   consumer name (Java ``String.compareTo``: UTF-16 code units); the sort is stable.
2. Only the consumers of the highest priority level are eligible.
3. Partitioned topic (``partition_index >= 0``): ``eligible[partition_index % len(eligible)]``.
4. Non-partitioned topic (``partition_index == -1``), Pulsar 3.0+ (PR #19502): a ring of
   ``murmur3_32_hash(consumer_name + str(j))`` for ``j`` in ``0..99`` per eligible consumer in
   sorted order (a later consumer wins a collision); the active consumer owns the first point
   ``>= murmur3_32_hash(full topic name)``, wrapping to the first point. The docs' "first
   connected consumer" is not what the 3.x broker does.

Sans-I/O helpers: the dispatcher calls :func:`pick_active_consumer` whenever its consumer set
changes and does the switching (delay, cursor rewind, notifications) itself.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

from .hashing import murmur3_32_hash

__all__ = [
    "CONSUMER_CONSISTENT_HASH_REPLICAS",
    "PriorityConsumer",
    "active_consumer_hash_ring",
    "eligible_consumers",
    "pick_active_consumer",
    "sort_consumers",
]

CONSUMER_CONSISTENT_HASH_REPLICAS = 100
"""Ring points per eligible consumer for non-partitioned topics."""


class PriorityConsumer(Protocol):
    """What failover needs of a consumer: its name and priority level (0 = highest)."""

    @property
    def consumer_name(self) -> str: ...

    @property
    def priority_level(self) -> int: ...


P = TypeVar("P", bound=PriorityConsumer)


def sort_consumers(consumers: Iterable[P]) -> list[P]:
    """The consumers sorted as the broker sorts them: by (priority level, name), stable."""
    return sorted(
        consumers,
        key=lambda c: (c.priority_level, c.consumer_name.encode("utf-16-be", "surrogatepass")),
    )


def eligible_consumers(consumers: Iterable[P]) -> list[P]:
    """The sorted consumers of the highest priority level (the lowest ``priority_level``)."""
    ordered = sort_consumers(consumers)
    if not ordered:
        return []
    top = ordered[0].priority_level
    return [c for c in ordered if c.priority_level == top]


def active_consumer_hash_ring(eligible: Sequence[P]) -> list[tuple[int, P]]:
    """The non-partitioned ring ``(point, consumer)`` ascending, for sorted ``eligible``."""
    ring: dict[int, P] = {}
    for consumer in eligible:
        name = consumer.consumer_name
        for j in range(CONSUMER_CONSISTENT_HASH_REPLICAS):
            ring[murmur3_32_hash(f"{name}{j}")] = consumer  # later consumer wins
    return sorted(ring.items(), key=lambda item: item[0])


def pick_active_consumer(consumers: Iterable[P], partition_index: int, topic_name: str) -> P | None:
    """The active consumer of a Failover (or Exclusive) subscription, or ``None`` if empty.

    ``partition_index`` is the partition of ``topic_name`` the subscription is on, or -1 for
    a non-partitioned topic; ``topic_name`` is the full name, e.g.
    ``persistent://public/default/t1`` (only used when non-partitioned).
    """
    eligible = eligible_consumers(consumers)
    if not eligible:
        return None
    if partition_index >= 0:
        return eligible[partition_index % len(eligible)]
    ring = active_consumer_hash_ring(eligible)
    points = [point for point, _ in ring]
    index = bisect_left(points, murmur3_32_hash(topic_name))
    return ring[index if index < len(ring) else 0][1]
