"""LegacyConsistentHashingStickyKeyConsumerSelector (Pulsar 3.2.1-3.3.1): points, shared points,
wrap-around, reported ranges and keyspace shares."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

import pytest

from pulsarlab.broker.errors import ConsumerAssignError
from pulsarlab.broker.selectors import (
    RING_SIZE,
    LegacyConsistentHashingStickyKeyConsumerSelector,
    consumer_point_hash,
    murmur3_32_hash,
)

TOP = RING_SIZE - 1


@dataclass(eq=False)
class FakeConsumer:
    consumer_name: str

    def __repr__(self) -> str:
        return self.consumer_name


def make(names: list[str], points: int = 100):
    selector = LegacyConsistentHashingStickyKeyConsumerSelector(points)
    consumers = [FakeConsumer(n) for n in names]
    for c in consumers:
        selector.add_consumer(c)
    return selector, consumers


def reference_select(selector: LegacyConsistentHashingStickyKeyConsumerSelector, h: int):
    """Pulsar's select, spelled out: ceiling point or the first one, then ``list[h % n]``."""
    ring = selector.ring()
    at_or_after = [members for point, members in ring if point >= h]
    members = at_or_after[0] if at_or_after else ring[0][1]
    return members[h % len(members)]


def test_point_string_is_name_nul_index() -> None:
    assert consumer_point_hash("C1", 0) == murmur3_32_hash(b"C1\x000")
    assert consumer_point_hash("C1", 99) == murmur3_32_hash("C1\x0099")
    selector, (c1,) = make(["C1"])
    expected = sorted(murmur3_32_hash(f"C1\0{i}") for i in range(100))
    assert selector.consumer_points() == {c1: expected}


def test_empty_ring_selects_nobody() -> None:
    selector = LegacyConsistentHashingStickyKeyConsumerSelector()
    assert selector.select(5) is None
    assert selector.consumer_key_hash_ranges() == {}
    assert selector.keyspace_shares() == {}


def test_select_matches_the_ring_walk() -> None:
    selector, _ = make(["C1", "C2", "C3"])
    rng = random.Random(7)
    hashes = [rng.randrange(RING_SIZE) for _ in range(2000)]
    hashes += [p for p, _ in selector.ring()] + [p + 1 for p, _ in selector.ring()] + [0, TOP]
    for h in hashes:
        assert selector.select(h) is reference_select(selector, h)


def test_wrap_around_goes_to_the_first_point() -> None:
    selector, _ = make(["C1", "C2", "C3"])
    first_point, first_members = selector.ring()[0]
    last_point, _ = selector.ring()[-1]
    assert last_point < TOP
    assert selector.select(TOP) is first_members[0]
    assert selector.select(last_point + 1) is first_members[0]
    ranges = selector.consumer_key_hash_ranges()[first_members[0]]
    assert ranges[0][0] == 0 and selector.select(first_point) in first_members
    # 3.3.0/3.3.1's getConsumerKeyHashRanges leaves the wrap-around slice out
    assert max(e for rs in selector.consumer_key_hash_ranges().values() for _, e in rs) == (
        last_point
    )


def test_order_3459134_on_the_ring() -> None:
    selector, _ = make(["C1", "C2", "C3", "C4"])
    h = 964695987  # the 31-bit hash, not the slot: 3.x consistent hashing never uses % 65536
    assert selector.select_for_key(b"Order-3459134") is selector.select(h)
    assert selector.select(h) is reference_select(selector, h)


def test_reported_ranges_are_one_per_point_up_to_the_last() -> None:
    """``ConsistentHashingStickyKeyConsumerSelector.getConsumerKeyHashRanges`` (3.3.0/3.3.1):
    ``Range.of(start, point)`` per point and consumer, ``start = previous point + 1``, not
    merged, and nothing after the last point."""
    selector, consumers = make(["C1", "C2", "C3", "C4"])
    ranges = selector.consumer_key_hash_ranges()
    rows = sorted((r, c) for c, rs in ranges.items() for r in rs)
    assert rows[0][0][0] == 0 and rows[-1][0][1] == selector.ring()[-1][0]
    for (a, _), (b, _) in itertools.pairwise(rows):
        assert a[1] + 1 == b[0]
    for (start, end), owner in rows:
        assert selector.select(start) is owner and selector.select(end) is owner
    assert all(len(rs) == 100 for rs in ranges.values())  # no collisions here: one per point
    assert [end for _, end in ranges[consumers[0]]] == selector.consumer_points()[consumers[0]]
    assert set(ranges) == set(consumers)
    fmt = selector.formatted_key_hash_ranges()
    assert fmt[consumers[0]][0].startswith("[") and ", " in fmt[consumers[0]][0]


def test_keyspace_shares_sum_to_one_and_match_ranges() -> None:
    selector, _ = make(["C1", "C2", "C3"])
    shares = selector.keyspace_shares()
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-12)
    wrap_owner = selector.ring()[0][1][0]
    wrap = TOP - selector.ring()[-1][0]
    for c, rs in selector.consumer_key_hash_ranges().items():
        own = sum(e - s + 1 for s, e in rs) + (wrap if c is wrap_owner else 0)
        assert shares[c] == own / RING_SIZE


def test_adding_a_consumer_takes_a_little_from_all() -> None:
    selector, consumers = make(["C1", "C2", "C3"])
    before = selector.keyspace_shares()
    newcomer = FakeConsumer("C4")
    selector.add_consumer(newcomer)
    after = selector.keyspace_shares()
    assert all(after[c] < before[c] for c in consumers)
    assert 0.15 < after[newcomer] < 0.35


def test_remove_restores_the_previous_ring() -> None:
    selector, consumers = make(["C1", "C2", "C3"])
    before = selector.ring()
    extra = FakeConsumer("C4")
    selector.add_consumer(extra)
    selector.remove_consumer(extra)
    assert selector.ring() == before
    selector.remove_consumer(extra)  # unknown: no-op
    for c in consumers:
        selector.remove_consumer(c)
    assert selector.ring() == [] and selector.select(1) is None


def test_duplicate_consumer_is_rejected_unchanged() -> None:
    selector, (c1, _) = make(["C1", "C2"])
    before = selector.ring()
    with pytest.raises(ConsumerAssignError, match="C1"):
        selector.add_consumer(c1)
    assert selector.ring() == before


def test_equal_names_share_every_point() -> None:
    """Two consumers named alike hold the same 100 points: each point alternates on hash % 2."""
    selector, (a, b) = make(["same", "same"])
    ring = selector.ring()
    assert len(ring) == 100 and all(members == (a, b) for _, members in ring)
    assert selector.select(10) is a and selector.select(11) is b
    assert selector.keyspace_shares() == {a: 0.5, b: 0.5}
    # Each shared point's range is reported for both consumers of its list.
    ranges = selector.consumer_key_hash_ranges()
    assert ranges[a] == ranges[b] and len(ranges[a]) == 100
    selector.remove_consumer(a)
    assert all(members == (b,) for _, members in selector.ring())


def test_shared_point_list_is_sorted_by_name() -> None:
    selector, (x1, y, x2) = make(["x", "y", "x"])
    for point in selector.consumer_points()[x1]:
        members = dict(selector.ring())[point]
        assert members == (x1, x2)  # stable: same names keep joining order
    shares = selector.keyspace_shares()
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-12)
    assert shares[x1] == pytest.approx(shares[x2], rel=1e-6)
    assert set(selector.consumer_points()) == {x1, y, x2}


@pytest.mark.parametrize("points", [0, -1])
def test_number_of_points_must_be_positive(points: int) -> None:
    with pytest.raises(ValueError):
        LegacyConsistentHashingStickyKeyConsumerSelector(points)


def test_one_point_per_consumer() -> None:
    selector, (c1, c2) = make(["C1", "C2"], points=1)
    p1, p2 = consumer_point_hash("C1", 0), consumer_point_hash("C2", 0)
    low, high = sorted([(p1, c1), (p2, c2)], key=lambda t: t[0])
    assert selector.consumer_key_hash_ranges() == {
        low[1]: [(0, low[0])],
        high[1]: [(low[0] + 1, high[0])],
    }
    assert selector.select(high[0] + 1) is low[1]  # the wrap-around, unreported
