"""Pulsar 4.0's selectors (PIP-379): 16-bit sticky hashes, the first-come ring, snapshots."""

from dataclasses import dataclass
from itertools import pairwise

import pytest

from pulsarlab.broker.selectors import HashRangeAutoSplitStickyKeyConsumerSelector, murmur3_32_hash
from pulsarlab.broker.selectors.hash_assignments import (
    ConsumerHashAssignmentsSnapshot,
    HashRangeAssignment,
)
from pulsarlab.broker.selectors.pip379 import (
    ConsistentHashingStickyKeyConsumerSelector40,
    ConsumerNameIndexTracker,
    HashRangeAutoSplitStickyKeyConsumerSelector40,
    make_sticky_key_hash_40,
)


@dataclass(eq=False)
class C:
    consumer_name: str


def test_sticky_key_hash_is_a_slot_of_the_selector_range():
    """``StickyKeyConsumerSelectorUtils.makeStickyKeyHash``: ``h % size + start``, 0 -> 1."""
    h = murmur3_32_hash("key-0")
    assert h == 1664612543
    assert make_sticky_key_hash_40(h, (1, 65535)) == 23544 == h % 65535 + 1
    assert make_sticky_key_hash_40(65536 * 7, (0, 65535)) == 1  # never STICKY_KEY_HASH_NOT_SET
    ring = ConsistentHashingStickyKeyConsumerSelector40()
    assert ring.make_sticky_key_hash(b"key-0") == 23544


def test_consumer_name_index_is_the_lowest_free_one():
    """``ConsumerNameIndexTracker.increaseConsumerRefCountAndReturnIndex``: reused when freed."""
    tracker = ConsumerNameIndexTracker()
    a, b, c = C("same"), C("same"), C("same")
    assert tracker.increase_consumer_ref_count_and_return_index(a) == 0
    assert tracker.increase_consumer_ref_count_and_return_index(a) == 0
    assert tracker.increase_consumer_ref_count_and_return_index(b) == 1
    tracker.decrease_consumer_ref_count(a)
    assert tracker.get_tracked_index(a) == 0  # one reference left
    tracker.decrease_consumer_ref_count(a)
    assert tracker.get_tracked_index(a) == -1
    assert tracker.increase_consumer_ref_count_and_return_index(c) == 0


def test_ring_points_use_name_index_and_cover_one_to_65535():
    """``calculateHashForConsumerAndIndex`` and ``internalGetConsumerHashAssignmentsSnapshot``."""
    ring = ConsistentHashingStickyKeyConsumerSelector40()
    consumers = [C(f"consumer-{i}") for i in range(3)]
    for c in consumers:
        ring.add_consumer(c)
    expected = make_sticky_key_hash_40(murmur3_32_hash("consumer-0\x000\x007"), (1, 65535))
    assert any(p == expected for p, _ in ring.ring())
    ranges = sorted(r for rs in ring.consumer_key_hash_ranges().values() for r in rs)
    assert ranges[0][0] == 1 and ranges[-1][1] == 65535
    assert all(a[1] + 1 == b[0] for a, b in pairwise(ranges))
    for key in (b"a", b"b", b"Order-3459134"):
        slot = ring.make_sticky_key_hash(key)
        owner = ring.select(slot)
        assert any(s <= slot <= e for s, e in ring.consumer_key_hash_ranges()[owner])


def _colliding_pair() -> tuple[C, C]:
    for i in range(2000):
        first, second = C(f"a{i}"), C(f"b{i}")
        ring = ConsistentHashingStickyKeyConsumerSelector40(100)
        ring.add_consumer(first)
        ring.add_consumer(second)
        if any(len(members) > 1 for _, members in ring.ring()):
            return first, second
    raise AssertionError("no colliding pair found")


def test_a_colliding_point_keeps_its_first_consumer_until_it_leaves():
    """``HashRingPointEntry``: ``putIfAbsent`` keeps the first, later ones are promoted FIFO."""
    first, second = _colliding_pair()
    ring = ConsistentHashingStickyKeyConsumerSelector40(100)
    ring.add_consumer(first)
    ring.add_consumer(second)
    point = next(p for p, members in ring.ring() if len(members) > 1)
    assert ring.select(point) is first
    ring.remove_consumer(first)
    assert ring.select(point) is second
    assert all(members == (second,) for _, members in ring.ring())


def test_impacted_consumers_are_the_ranges_each_existing_consumer_lost():
    """``ConsumerHashAssignmentsSnapshot.resolveConsumerRemovedHashRanges``."""
    ring = ConsistentHashingStickyKeyConsumerSelector40()
    a, b = C("a"), C("b")
    ring.add_consumer(a)
    before = ConsumerHashAssignmentsSnapshot.of_selector(ring)
    assert before.ranges_by_consumer() == {a: [(1, 65535)]}
    ring.add_consumer(b)
    after = ConsumerHashAssignmentsSnapshot.of_selector(ring)
    impacted = before.resolve_impacted_consumers(after)
    assert list(impacted.removed_hash_ranges) == [a]
    assert impacted.removed_hash_ranges[a] == after.ranges_by_consumer()[b]
    slot = next(s for s in range(1, 65536) if ring.select(s) is b)
    assert impacted.contains_sticky_key(a, slot)
    assert not impacted.contains_sticky_key(b, slot)
    # Removing b hands its ranges back; b is the one that lost them.
    ring.remove_consumer(b)
    back = after.resolve_impacted_consumers(ConsumerHashAssignmentsSnapshot.of_selector(ring))
    assert back.removed_hash_ranges == {b: after.ranges_by_consumer()[b]}


def test_auto_split_40_keeps_the_3x_splitting():
    """``HashRangeAutoSplitStickyKeyConsumerSelector`` (4.0): same ranges, ``h % 65536``."""
    old, new = HashRangeAutoSplitStickyKeyConsumerSelector(), (
        HashRangeAutoSplitStickyKeyConsumerSelector40()
    )
    consumers = [C(f"c{i}") for i in range(4)]
    for c in consumers:
        old.add_consumer(c)
        new.add_consumer(c)
    assert old.consumer_key_hash_ranges() == new.consumer_key_hash_ranges()
    assert new.make_sticky_key_hash(b"Order-3459134") == 6067


def test_snapshot_rejects_overlapping_assignments():
    """``ConsumerHashAssignmentsSnapshot.validate``."""
    a = C("a")
    with pytest.raises(ValueError, match="non-overlapping"):
        ConsumerHashAssignmentsSnapshot(
            [HashRangeAssignment(0, 10, a), HashRangeAssignment(10, 20, a)]
        )


def test_make_selector_follows_pulsar_version():
    """``pulsar_version >= 4.0`` builds the PIP-379 selectors for both modes."""
    from pulsarlab.broker.pulsar_version import PulsarVersion
    from pulsarlab.broker.selectors import make_selector
    from pulsarlab.broker.selectors.pip379 import HashRangeExclusiveStickyKeyConsumerSelector40

    v40 = PulsarVersion.parse("4.0")
    assert isinstance(make_selector("auto_split", True, 100, v40),
                      ConsistentHashingStickyKeyConsumerSelector40)
    assert isinstance(make_selector("auto_split", False, 100, v40),
                      HashRangeAutoSplitStickyKeyConsumerSelector40)
    assert isinstance(make_selector("STICKY", True, 100, v40),
                      HashRangeExclusiveStickyKeyConsumerSelector40)
    assert not isinstance(make_selector("auto_split", True, 100, PulsarVersion.parse("3.3")),
                          ConsistentHashingStickyKeyConsumerSelector40)
