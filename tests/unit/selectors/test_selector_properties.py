"""Property tests: after any add/remove sequence every key has exactly one owner, and a change
moves keys only the way Pulsar's selectors promise.

* auto-split: a join takes keys from exactly one existing consumer; a leave gives them to
  exactly one remaining consumer.
* consistent hashing: keys move only to (join) or from (leave) the changed consumer.
* sticky: add accepts exactly the valid declarations and rejections change nothing.

Ownership is compared exactly, slice by slice: between two consecutive breakpoints (range
bounds, ring points) ownership is constant, so checking each slice's ends covers every key.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.broker.errors import ConsumerAssignError
from pulsarlab.broker.selectors import (
    RING_SIZE,
    ConsistentHashingStickyKeyConsumerSelector,
    HashRangeAutoSplitStickyKeyConsumerSelector,
    HashRangeExclusiveStickyKeyConsumerSelector,
    consumer_point_hash,
    consumer_point_hash_with_name_index,
)


@dataclass(eq=False)
class FakeConsumer:
    consumer_name: str
    key_hash_ranges: list[tuple[int, int]] = field(default_factory=list)

    def __repr__(self) -> str:
        return self.consumer_name


POOL_NAMES = [f"consumer-{i}" for i in range(12)]
operations = st.lists(st.tuples(st.booleans(), st.integers(0, len(POOL_NAMES) - 1)), max_size=40)


def owners_by_slot(selector, range_size: int) -> list:
    return [selector.select(s) for s in range(range_size)]


def assert_one_live_owner(owners: list, selector) -> None:
    """Every key has exactly one owner, a registered consumer (none if nobody is left)."""
    registered = set(selector.consumers)
    if registered:
        assert all(owner in registered for owner in owners)
    else:
        assert all(owner is None for owner in owners)


def assert_ring_ranges_partition(selector) -> None:
    """The reported ranges (3.3.2+) tile ``[0, 2**31 - 2]`` — Pulsar's wrap range stops one
    short of the top — with no overlap, and agree with select."""
    rows = sorted(
        (r, c) for c, ranges in selector.consumer_key_hash_ranges().items() for r in ranges
    )
    if not selector.consumers:
        assert rows == []
        return
    assert rows[0][0][0] == 0 and rows[-1][0][1] == RING_SIZE - 2
    for (a, _), (b, _) in itertools.pairwise(rows):
        assert a[1] + 1 == b[0]
    for (start, end), owner in rows:
        assert selector.select(start) is owner and selector.select(end) is owner


# ---------------------------------------------------------------- auto-split


@settings(max_examples=150, deadline=None)
@given(ops=operations, log_size=st.sampled_from([1, 2, 3, 5, 8]))
def test_auto_split_every_slot_one_owner_and_one_donor(ops, log_size: int) -> None:
    range_size = 1 << log_size
    pool = [FakeConsumer(n) for n in POOL_NAMES]
    selector = HashRangeAutoSplitStickyKeyConsumerSelector(range_size)
    before = owners_by_slot(selector, range_size)
    for is_add, index in ops:
        consumer = pool[index]
        if is_add:
            snapshot = selector.upper_keys()
            try:
                selector.add_consumer(consumer)
            except ConsumerAssignError:
                assert selector.upper_keys() == snapshot  # rejection changes nothing
                continue
        else:
            selector.remove_consumer(consumer)
        after = owners_by_slot(selector, range_size)
        assert_one_live_owner(after, selector)
        moves = {(old, new) for old, new in zip(before, after, strict=True) if old is not new}
        if is_add:
            # the newcomer's keys all come from one single previous owner (None if first)
            assert len(moves) == 1
            ((_, taker),) = moves
            assert taker is consumer
        elif moves:
            # the leaver's keys all go to one single remaining consumer (None if last)
            assert len(moves) == 1
            ((leaver, _),) = moves
            assert leaver is consumer
        # The reported ranges tile [0, range_size] (the top key bounds the last range).
        rows = sorted((r, c) for c, rs in selector.consumer_key_hash_ranges().items() for r in rs)
        if rows:
            assert rows[0][0][0] == 0 and rows[-1][0][1] == range_size
            for (a, _), (b, _) in itertools.pairwise(rows):
                assert a[1] + 1 == b[0]
            for (start, end), owner in rows:
                assert all(after[x] is owner for x in range(start, min(end, range_size - 1) + 1))
        before = after


@settings(max_examples=60, deadline=None)
@given(ops=operations)
def test_auto_split_full_range_layout_is_consistent(ops) -> None:
    pool = [FakeConsumer(n) for n in POOL_NAMES]
    selector = HashRangeAutoSplitStickyKeyConsumerSelector()
    for is_add, index in ops:
        if is_add:
            if pool[index] not in selector:
                selector.add_consumer(pool[index])
        else:
            selector.remove_consumer(pool[index])
    rows = sorted((r, c) for c, rs in selector.consumer_key_hash_ranges().items() for r in rs)
    if not rows:
        assert selector.select(0) is None
        return
    assert rows[0][0][0] == 0 and rows[-1][0][1] == 65536
    for (a, _), (b, _) in itertools.pairwise(rows):
        assert a[1] + 1 == b[0]
    for (start, end), owner in rows:
        assert selector.select(start) is owner
        assert selector.select(min(end, 65535)) is owner


# ---------------------------------------------------------------- consistent hashing


def test_pool_has_no_ring_collisions() -> None:
    """Precondition of the properties below: with distinct names no two points coincide."""
    points = [consumer_point_hash(n, i) for n in POOL_NAMES for i in range(100)]
    assert len(set(points)) == len(points)
    points = [consumer_point_hash_with_name_index(n, 0, i) for n in POOL_NAMES for i in range(100)]
    assert len(set(points)) == len(points)


def ring_slices(selectors) -> list[tuple[int, int]]:
    """Slices of the 31-bit ring on which every given selector's ownership is constant."""
    cuts = {0, RING_SIZE}
    for selector in selectors:
        for point, _ in selector.ring():
            cuts.add(point + 1)
    ordered = sorted(cuts)
    return [(a, b - 1) for a, b in itertools.pairwise(ordered)]


def snapshot_owners(selector, slices):
    return [selector.select(start) for start, _ in slices]


@settings(max_examples=100, deadline=None)
@given(ops=operations, points=st.sampled_from([1, 5, 100]))
def test_consistent_hashing_moves_keys_only_for_the_changed_consumer(ops, points: int) -> None:
    pool = [FakeConsumer(n) for n in POOL_NAMES]
    selector = ConsistentHashingStickyKeyConsumerSelector(points)
    shadow = ConsistentHashingStickyKeyConsumerSelector(points)  # the state before each step
    for is_add, index in ops:
        consumer = pool[index]
        if is_add:
            if consumer in selector:
                continue
            selector.add_consumer(consumer)
        else:
            selector.remove_consumer(consumer)
        slices = ring_slices([selector, shadow])
        old = snapshot_owners(shadow, slices)
        new = snapshot_owners(selector, slices)
        # ownership is constant on each slice: its end selects the same consumer
        assert new == [selector.select(end) for _, end in slices]
        assert_one_live_owner(new, selector)
        for (start, _), before, after in zip(slices, old, new, strict=True):
            if before is not after:
                if is_add:
                    assert after is consumer, (start, before, after)
                else:
                    assert before is consumer, (start, before, after)
        assert_ring_ranges_partition(selector)
        if selector.consumers:
            assert abs(sum(selector.keyspace_shares().values()) - 1.0) < 1e-9
        if is_add:
            shadow.add_consumer(consumer)
        else:
            shadow.remove_consumer(consumer)


# ---------------------------------------------------------------- sticky


def is_valid(ranges, taken: list[tuple[int, int]], range_size: int) -> bool:
    if not ranges:
        return False
    if any(s > e or s < 0 or e >= range_size for s, e in ranges):
        return False
    slots = [x for s, e in ranges for x in range(s, e + 1)]
    if len(slots) != len(set(slots)):
        return False
    return not set(slots) & {x for s, e in taken for x in range(s, e + 1)}


declarations = st.lists(
    st.lists(st.tuples(st.integers(-2, 34), st.integers(-2, 34)), max_size=4), max_size=8
)


@settings(max_examples=200, deadline=None)
@given(decls=declarations)
def test_sticky_accepts_exactly_the_valid_declarations(decls) -> None:
    range_size = 32
    selector = HashRangeExclusiveStickyKeyConsumerSelector(range_size)
    owner_of: dict[int, FakeConsumer] = {}
    taken: list[tuple[int, int]] = []
    for i, ranges in enumerate(decls):
        consumer = FakeConsumer(f"c{i}", ranges)
        snapshot = (selector.consumers, selector.consumer_key_hash_ranges())
        expected = is_valid(ranges, taken, range_size)
        try:
            selector.add_consumer(consumer)
        except ConsumerAssignError:
            assert not expected
            assert (selector.consumers, selector.consumer_key_hash_ranges()) == snapshot
            continue
        assert expected
        taken.extend(ranges)
        for s, e in ranges:
            for x in range(s, e + 1):
                owner_of[x] = consumer
    for x in range(2 * range_size):
        assert selector.select(x) is owner_of.get(x % range_size)
