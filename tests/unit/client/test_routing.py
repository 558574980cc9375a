"""Partition routers: hashing schemes, round robin windows and counters, single, custom."""

from __future__ import annotations

import pytest

from pulsarlab.broker.client import HashingScheme, Message, PartitionsRoutingMode
from pulsarlab.broker.client.routing import (
    CustomRouter,
    RoundRobinRouter,
    SinglePartitionRouter,
    make_router,
)


class FixedRandom:
    def __init__(self, value: int) -> None:
        self.value = value

    def randrange(self, n: int) -> int:
        return self.value % n


def keyed(key: str | None) -> Message:
    return Message(b"", partition_key=key)


# String.hashCode() & MAX ("key-0" = 101943362) and murmur3 ("key-0" = 1664612543).
@pytest.mark.parametrize(
    ("key", "scheme", "expected"),
    [
        ("key-0", HashingScheme.JavaStringHash, [2, 2, 3]),
        ("key-1", HashingScheme.JavaStringHash, [0, 3, 4]),
        ("order-42", HashingScheme.JavaStringHash, [0, 1, 0]),
        ("key-0", HashingScheme.Murmur3_32Hash, [2, 3, 6]),
        ("key-1", HashingScheme.Murmur3_32Hash, [1, 0, 6]),
    ],
)
def test_keyed_messages_hash_to_a_partition(key, scheme, expected):
    for router in (RoundRobinRouter(scheme, rng=FixedRandom(1)),
                   SinglePartitionRouter(scheme, rng=FixedRandom(1), num_partitions=7)):
        assert [router.choose_partition(keyed(key), n) for n in (3, 4, 7)] == expected


def test_ordering_key_is_not_used_for_routing():
    router = RoundRobinRouter(rng=FixedRandom(0), batching_enabled=False, num_partitions=5)
    m = Message(b"", ordering_key=b"key-0")
    assert [router.choose_partition(m, 5) for _ in range(3)] == [0, 1, 2]


def test_round_robin_with_batching_switches_every_window():
    now = [0]
    router = RoundRobinRouter(batching_enabled=True, partition_switch_ms=10,
                              clock_ms=lambda: now[0], rng=FixedRandom(0), num_partitions=3)
    seen = []
    for t in (0, 5, 9, 10, 19, 20, 29, 30):
        now[0] = t
        seen.append(router.choose_partition(keyed(None), 3))
    assert seen == [0, 0, 0, 1, 1, 2, 2, 0]


def test_round_robin_with_batching_starts_at_the_random_start():
    router = RoundRobinRouter(batching_enabled=True, partition_switch_ms=10,
                              clock_ms=lambda: 0, rng=FixedRandom(2), num_partitions=3)
    assert router.choose_partition(keyed(None), 3) == 2


def test_round_robin_without_batching_counts_from_the_start():
    router = RoundRobinRouter(batching_enabled=False, rng=FixedRandom(2), num_partitions=4)
    assert [router.choose_partition(keyed(None), 4) for _ in range(6)] == [2, 3, 0, 1, 2, 3]


def test_round_robin_counter_wraps_like_a_java_int():
    router = RoundRobinRouter(batching_enabled=False, rng=FixedRandom(0), num_partitions=3)
    router._counter = 0x7FFFFFFF
    first = router.choose_partition(keyed(None), 3)
    second = router.choose_partition(keyed(None), 3)
    assert first == 0x7FFFFFFF % 3
    assert second == (-(2**31)) % 3  # signSafeMod of Integer.MIN_VALUE


def test_single_partition_sticks_to_one_partition():
    router = SinglePartitionRouter(rng=FixedRandom(3), num_partitions=5)
    assert {router.choose_partition(keyed(None), 5) for _ in range(20)} == {3}


def test_custom_router_gets_the_message_and_partition_count():
    calls = []

    def route(msg, n):
        calls.append((msg.partition_key(), n))
        return 1

    router = make_router(PartitionsRoutingMode.CustomPartition, 4, message_router=route)
    assert router.choose_partition(keyed("abc"), 4) == 1
    assert calls == [("abc", 4)]


def test_custom_router_answer_is_checked():
    router = CustomRouter(lambda msg, n: n)
    with pytest.raises(ValueError, match=r"expected 0\.\.3"):
        router.choose_partition(keyed(None), 4)
    with pytest.raises(ValueError):
        CustomRouter(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        make_router(PartitionsRoutingMode.CustomPartition, 4)


def test_make_router_uses_javas_switch_window():
    router = make_router(PartitionsRoutingMode.RoundRobinDistribution, 3,
                         batching_enabled=True, batching_max_publish_delay_ms=1)
    assert isinstance(router, RoundRobinRouter) and router.partition_switch_ms == 10
    assert isinstance(make_router(PartitionsRoutingMode.UseSinglePartition, 3),
                      SinglePartitionRouter)
