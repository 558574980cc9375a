"""ConsistentHashingStickyKeyConsumerSelector as Pulsar 3.3.2+ has it (PR #23327): points
``name\\0nameIndex\\0i``, one consumer per point, reported ranges one per point plus wrap."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest

from pulsarlab.broker.pulsar_version import PulsarVersion
from pulsarlab.broker.selectors import (
    INT_MAX,
    RING_SIZE,
    ConsistentHashingStickyKeyConsumerSelector,
    LegacyConsistentHashingStickyKeyConsumerSelector,
    consistent_hashing_selector,
    consumer_point_hash_with_name_index,
    murmur3_32_hash,
)
from pulsarlab.broker.selectors import consistent_hashing as module

Selector = ConsistentHashingStickyKeyConsumerSelector


@dataclass(eq=False)
class FakeConsumer:
    consumer_name: str

    def __repr__(self) -> str:
        return self.consumer_name


def make(names: list[str], points: int = 100):
    selector = Selector(points)
    consumers = [FakeConsumer(n) for n in names]
    for c in consumers:
        selector.add_consumer(c)
    return selector, consumers


def test_point_string_carries_the_name_index() -> None:
    """``calculateHashForConsumerAndIndex``: ``consumerName + "\\0" + nameIndex + "\\0" + i``."""
    assert consumer_point_hash_with_name_index("C1", 0, 5) == murmur3_32_hash(b"C1\x000\x005")
    selector, (c1,) = make(["C1"])
    expected = sorted(consumer_point_hash_with_name_index("C1", 0, i) for i in range(100))
    assert selector.consumer_points() == {c1: expected}
    assert selector.name_index(c1) == 0


def test_equal_names_get_their_own_points_and_indexes_are_reused() -> None:
    """``ConsumerNameIndexTracker``: the lowest free index per name, freed on removal, so a
    consumer that rejoins gets the same points."""
    selector, (a, b) = make(["same", "same"])
    assert (selector.name_index(a), selector.name_index(b)) == (0, 1)
    assert all(len(members) == 1 for _, members in selector.ring())
    shares = selector.keyspace_shares()
    assert 0.2 < shares[a] < 0.8 and shares[a] + shares[b] == pytest.approx(1.0)
    points_a = selector.consumer_points()[a]
    selector.remove_consumer(a)
    c = FakeConsumer("same")
    selector.add_consumer(c)
    assert selector.name_index(c) == 0 and selector.consumer_points()[c] == points_a


def test_select_is_the_ceiling_point_with_wrap_around() -> None:
    selector, _ = make(["C1", "C2", "C3"])
    ring = selector.ring()
    for (point, (owner,)), (following, (next_owner,)) in itertools.pairwise(ring):
        assert selector.select(point) is owner
        assert selector.select(point + 1) is next_owner
        assert selector.select(following) is next_owner
    assert selector.select(ring[-1][0] + 1) is ring[0][1][0]
    assert selector.select(INT_MAX) is ring[0][1][0]


def test_reported_ranges_are_pulsars_one_per_point_and_the_wrap_range() -> None:
    """``getConsumerKeyHashRanges``: ``Range.of(start, point)`` per point, not merged, and
    ``Range.of(lastKey + 1, Integer.MAX_VALUE - 1)`` appended to the first consumer."""
    selector, (c1, c2) = make(["C1", "C2"], points=1)
    p1 = consumer_point_hash_with_name_index("C1", 0, 0)
    p2 = consumer_point_hash_with_name_index("C2", 0, 0)
    (low, low_c), (high, high_c) = sorted([(p1, c1), (p2, c2)], key=lambda t: t[0])
    assert selector.consumer_key_hash_ranges() == {
        low_c: [(0, low), (high + 1, INT_MAX - 1)],
        high_c: [(low + 1, high)],
    }
    selector, _ = make(["C1", "C2", "C3"])
    ranges = selector.consumer_key_hash_ranges()
    assert sum(len(rs) for rs in ranges.values()) == 300 + 1
    first = selector.ring()[0][1][0]
    assert ranges[first][-1] == (selector.ring()[-1][0] + 1, RING_SIZE - 2)
    assert selector.formatted_key_hash_ranges()[first][0] == f"[0, {selector.ring()[0][0]}]"


def test_a_colliding_point_goes_to_the_later_consumer(monkeypatch) -> None:
    """``hashRing.put`` replaces on a collision; the replaced consumer's point count drops
    (``decreaseConsumerRefCount``) and ``removeConsumer`` only removes points still its own
    (``hashRing.remove(hash, wrapper)``)."""
    monkeypatch.setattr(module, "consumer_point_hash_with_name_index",
                        lambda name, name_index, i: 1000 * i + (7 if name == "late" else 0))
    selector = Selector(3)
    early, late = FakeConsumer("early"), FakeConsumer("late")
    selector.add_consumer(early)
    monkeypatch.setattr(module, "consumer_point_hash_with_name_index",
                        lambda name, name_index, i: 1000 * i)  # every point collides
    selector.add_consumer(late)
    assert [members for _, members in selector.ring()] == [(late,)] * 3
    assert selector.name_index(early) == -1  # holds no point: its index is free again
    selector.remove_consumer(early)
    assert len(selector.ring()) == 3
    selector.remove_consumer(late)
    assert selector.ring() == [] and selector.select(5) is None


def test_version_picks_the_ring() -> None:
    assert isinstance(consistent_hashing_selector(), Selector)
    assert isinstance(consistent_hashing_selector(100, PulsarVersion.parse("3.3.2")), Selector)
    for old in ("3.3.0", "3.3.1"):
        legacy = consistent_hashing_selector(100, PulsarVersion.parse(old))
        assert isinstance(legacy, LegacyConsistentHashingStickyKeyConsumerSelector)
