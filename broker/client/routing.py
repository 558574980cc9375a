"""Partition routing for producers on partitioned topics, after the Java client's routers.

* :class:`RoundRobinRouter` (``RoundRobinDistribution``, the default): a keyed message goes
  to ``hash(partition_key) % n``. Unkeyed: with batching on, every message in the same time
  window goes to one partition, ``(now_ms // partition_switch_ms + start) % n``, so batches
  fill; with batching off, a counter from ``start`` (``start`` is random per producer). The
  window is Java's ``max(1, 10 * batching_max_publish_delay_ms)``.
* :class:`SinglePartitionRouter` (``UseSinglePartition``): keyed as above; unkeyed messages
  all go to one random partition chosen once.
* :class:`CustomRouter` (``CustomPartition``): ``message_router(msg, num_partitions)``.

The hash is the producer's ``HashingScheme`` (``JavaStringHash`` by default, as in Java;
``Murmur3_32Hash`` optionally). The ordering key is never used for routing. Clock and random
source are injected so tests are deterministic.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from ..selectors.hashing import HashingScheme, partition_for_key
from .enums import PartitionsRoutingMode

__all__ = [
    "CustomRouter",
    "MessageRouter",
    "RoundRobinRouter",
    "SinglePartitionRouter",
    "make_router",
]

_INT_MAX = 0x7FFFFFFF


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


class MessageRouter(Protocol):
    def choose_partition(self, msg: Any, num_partitions: int) -> int: ...


def _key_of(msg: Any) -> str | None:
    key = msg.partition_key()
    return key if key else None


class RoundRobinRouter:
    """``RoundRobinPartitionMessageRouterImpl``."""

    def __init__(
        self,
        hashing_scheme: HashingScheme = HashingScheme.JavaStringHash,
        batching_enabled: bool = False,
        partition_switch_ms: int = 100,
        clock_ms: Callable[[], int] = _wall_ms,
        rng: random.Random | None = None,
        num_partitions: int = 1,
    ) -> None:
        self.hashing_scheme = hashing_scheme
        self.batching_enabled = batching_enabled
        self.partition_switch_ms = max(1, partition_switch_ms)
        self.clock_ms = clock_ms
        rng = rng or random.Random()
        self.start = rng.randrange(max(1, num_partitions))
        self._counter = self.start
        self._lock = threading.Lock()

    def choose_partition(self, msg: Any, num_partitions: int) -> int:
        key = _key_of(msg)
        if key is not None:
            return partition_for_key(key, num_partitions, self.hashing_scheme)
        if self.batching_enabled:
            return (self.clock_ms() // self.partition_switch_ms + self.start) % num_partitions
        with self._lock:
            value = self._counter
            # Java's int counter wraps around at Integer.MAX_VALUE (signSafeMod keeps it >= 0).
            self._counter = value + 1 if value < _INT_MAX else -(_INT_MAX + 1)
        return value % num_partitions


class SinglePartitionRouter:
    """``SinglePartitionMessageRouterImpl``: unkeyed messages stick to one random partition."""

    def __init__(
        self,
        hashing_scheme: HashingScheme = HashingScheme.JavaStringHash,
        rng: random.Random | None = None,
        num_partitions: int = 1,
    ) -> None:
        self.hashing_scheme = hashing_scheme
        self.partition = (rng or random.Random()).randrange(max(1, num_partitions))

    def choose_partition(self, msg: Any, num_partitions: int) -> int:
        key = _key_of(msg)
        if key is not None:
            return partition_for_key(key, num_partitions, self.hashing_scheme)
        return self.partition % num_partitions


class CustomRouter:
    """Calls the user's ``message_router(msg, num_partitions)`` and checks its answer."""

    def __init__(self, message_router: Callable[[Any, int], int]) -> None:
        if not callable(message_router):
            raise ValueError("message_router must be callable(msg, num_partitions) -> int")
        self.message_router = message_router

    def choose_partition(self, msg: Any, num_partitions: int) -> int:
        partition = int(self.message_router(msg, num_partitions))
        if not 0 <= partition < num_partitions:
            raise ValueError(
                f"message_router returned partition {partition}, expected 0..{num_partitions - 1}"
            )
        return partition


def make_router(
    mode: PartitionsRoutingMode,
    num_partitions: int,
    *,
    hashing_scheme: HashingScheme = HashingScheme.JavaStringHash,
    message_router: Callable[[Any, int], int] | None = None,
    batching_enabled: bool = False,
    batching_max_publish_delay_ms: int = 10,
    clock_ms: Callable[[], int] = _wall_ms,
    rng: random.Random | None = None,
) -> MessageRouter:
    """The router for a producer's ``message_routing_mode`` (a router given wins, as in C++)."""
    if message_router is not None or mode is PartitionsRoutingMode.CustomPartition:
        if message_router is None:
            raise ValueError("CustomPartition routing mode needs a message_router")
        return CustomRouter(message_router)
    if mode is PartitionsRoutingMode.UseSinglePartition:
        return SinglePartitionRouter(hashing_scheme, rng, num_partitions)
    return RoundRobinRouter(
        hashing_scheme,
        batching_enabled,
        max(1, 10 * batching_max_publish_delay_ms),
        clock_ms,
        rng,
        num_partitions,
    )
