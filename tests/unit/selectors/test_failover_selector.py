"""Failover active-consumer choice: priority groups, partition index modulo, the 3.x ring."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest

from pulsarlab.broker.selectors import (
    active_consumer_hash_ring,
    eligible_consumers,
    murmur3_32_hash,
    pick_active_consumer,
    sort_consumers,
)

TOPIC = "persistent://public/default/orders"


@dataclass(eq=False)
class FakeConsumer:
    consumer_name: str
    priority_level: int = 0

    def __repr__(self) -> str:
        return self.consumer_name


def names(consumers) -> list[str]:
    return [c.consumer_name for c in consumers]


def assignment(consumers, partitions: int) -> list[str]:
    return [
        pick_active_consumer(consumers, p, f"{TOPIC}-partition-{p}").consumer_name
        for p in range(partitions)
    ]


def test_two_partitions_four_consumers_then_a_and_b_leave() -> None:
    a, b, c, d = (FakeConsumer(n) for n in "ABCD")
    assert assignment([d, b, a, c], 2) == ["A", "B"]  # connection order does not matter
    assert assignment([c, d], 2) == ["C", "D"]


def test_nine_partitions_three_consumers() -> None:
    consumers = [FakeConsumer(n) for n in "CAB"]
    got = assignment(consumers, 9)
    assert [p for p, n in enumerate(got) if n == "A"] == [0, 3, 6]
    assert [p for p, n in enumerate(got) if n == "B"] == [1, 4, 7]
    assert [p for p, n in enumerate(got) if n == "C"] == [2, 5, 8]


def test_priority_levels_only_the_highest_group_is_eligible() -> None:
    consumers = [
        FakeConsumer("A", 1),
        FakeConsumer("B", 0),
        FakeConsumer("C", 0),
        FakeConsumer("D", 2),
    ]
    assert assignment(consumers, 4) == ["B", "C", "B", "C"]
    assert names(sort_consumers(consumers)) == ["B", "C", "A", "D"]
    assert names(eligible_consumers(consumers)) == ["B", "C"]


def test_no_consumers() -> None:
    assert pick_active_consumer([], 0, TOPIC) is None
    assert pick_active_consumer([], -1, TOPIC) is None
    assert eligible_consumers([]) == []


def test_names_sort_by_utf16_code_units_like_java() -> None:
    # U+FF61 < U+1F600 by code point, but Java compares UTF-16 units: D83D < FF61.
    halfwidth, emoji = FakeConsumer("\uff61"), FakeConsumer("\U0001f600")
    assert sort_consumers([halfwidth, emoji]) == [emoji, halfwidth]
    assert names(sort_consumers([FakeConsumer("b"), FakeConsumer("B"), FakeConsumer("a")])) == [
        "B", "a", "b",
    ]  # fmt: skip


def test_sort_is_stable_for_equal_names() -> None:
    first, second = FakeConsumer("same"), FakeConsumer("same")
    assert sort_consumers([first, second]) == [first, second]
    assert sort_consumers([second, first]) == [second, first]


def brute_force_non_partitioned(consumers, topic: str):
    eligible = eligible_consumers(consumers)
    ring: dict[int, FakeConsumer] = {}
    for consumer in eligible:
        for j in range(100):
            ring[murmur3_32_hash((consumer.consumer_name + str(j)).encode())] = consumer
    h = murmur3_32_hash(topic.encode())
    after = [p for p in ring if p >= h]
    return ring[min(after)] if after else ring[min(ring)]


@pytest.mark.parametrize("topic_number", range(20))
def test_non_partitioned_ring(topic_number: int) -> None:
    consumers = [FakeConsumer(n) for n in ("A", "B", "C", "consumer-1", "consumer-11")]
    topic = f"persistent://public/default/t{topic_number}"
    expected = brute_force_non_partitioned(consumers, topic)
    for order in itertools.islice(itertools.permutations(consumers), 0, 120, 17):
        assert pick_active_consumer(list(order), -1, topic) is expected


def test_non_partitioned_ring_respects_priority() -> None:
    low = FakeConsumer("low", 5)
    high = FakeConsumer("high", 0)
    for i in range(10):
        assert pick_active_consumer([low, high], -1, f"persistent://public/default/t{i}") is high


def test_non_partitioned_single_consumer() -> None:
    only = FakeConsumer("only")
    assert pick_active_consumer([only], -1, TOPIC) is only


def test_ring_collision_later_consumer_wins() -> None:
    # "consumer-1" + "10" == "consumer-11" + "0": ten shared points, owned by the later
    # consumer in sorted order ("consumer-11").
    c1, c11 = FakeConsumer("consumer-1"), FakeConsumer("consumer-11")
    ring = dict(active_consumer_hash_ring(sort_consumers([c11, c1])))
    assert len(ring) == 190
    for j in range(10):
        assert ring[murmur3_32_hash(f"consumer-11{j}")] is c11
    assert sum(1 for owner in ring.values() if owner is c1) == 90


def test_ring_is_sorted_by_point() -> None:
    ring = active_consumer_hash_ring(sort_consumers([FakeConsumer("A"), FakeConsumer("B")]))
    points = [p for p, _ in ring]
    assert points == sorted(points) and len(points) == 200


def test_wrap_to_first_point() -> None:
    consumers = [FakeConsumer("A"), FakeConsumer("B")]
    ring = active_consumer_hash_ring(sort_consumers(consumers))
    last_point = ring[-1][0]
    # find a topic name hashing beyond the last point: it must wrap to the first point
    topic = next(
        f"persistent://public/default/w{i}"
        for i in range(100000)
        if murmur3_32_hash(f"persistent://public/default/w{i}") > last_point
    )
    assert pick_active_consumer(consumers, -1, topic) is ring[0][1]
