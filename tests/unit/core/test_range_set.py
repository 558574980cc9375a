"""The cursor's open-closed range set of acknowledged positions."""

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pulsarlab.broker.range_set import PositionRangeSet


def test_adjacent_acks_merge():
    ranges = PositionRangeSet()
    ranges.add((1, 3), (1, 4))
    ranges.add((1, 5), (1, 6))
    assert len(ranges) == 2
    ranges.add((1, 4), (1, 5))
    assert list(ranges) == [((1, 3), (1, 6))]
    assert str(ranges) == "[(1:3..1:6]]"


def test_contains_is_open_closed():
    ranges = PositionRangeSet()
    ranges.add((1, 3), (1, 6))
    assert (1, 3) not in ranges
    assert (1, 4) in ranges and (1, 6) in ranges
    assert (1, 7) not in ranges


def test_remove_up_to_cuts_a_range():
    ranges = PositionRangeSet()
    ranges.add((1, 3), (1, 6))
    ranges.add((1, 8), (1, 9))
    ranges.remove_up_to((1, 5))
    assert list(ranges) == [((1, 5), (1, 6)), ((1, 8), (1, 9))]


def test_round_trip_list():
    ranges = PositionRangeSet()
    ranges.add((1, 3), (2, 0))
    assert list(PositionRangeSet.from_list(ranges.to_list())) == list(ranges)


@given(st.lists(st.integers(min_value=1, max_value=60), max_size=40))
def test_matches_a_set_model(acked):
    ranges = PositionRangeSet()
    for entry in acked:
        ranges.add((1, entry - 1), (1, entry))
    for entry in range(0, 62):
        assert ((1, entry) in ranges) == (entry in set(acked))
    # Disjoint and non-touching.
    items = list(ranges)
    for (_, upper), (lower, _) in pairwise(items):
        assert upper < lower


def _previous(position):
    """Entries 0..9 in ledgers 1, 3 and 4 (ledger 2 is gone)."""
    ledger, entry = position
    if entry > 0:
        return (ledger, entry - 1)
    return {1: (0, -1), 3: (1, 9), 4: (3, 9)}[ledger]


_positions = st.tuples(st.sampled_from([1, 3, 4]), st.integers(min_value=0, max_value=9))


@given(
    st.lists(_positions, max_size=30),
    st.lists(st.lists(_positions, max_size=12), max_size=4),
    st.sampled_from([(-1, -1), (1, 9), (3, 4), (4, 9)]),
)
def test_add_entries_matches_one_by_one_adds(before, acks, known):
    floor = (1, 2)
    fast, slow = PositionRangeSet(), PositionRangeSet()
    for position in before:
        fast.add(_previous(position), position)
        slow.add(_previous(position), position)
    for ack in acks:
        ack = sorted(ack)
        expected = [p for p in dict.fromkeys(ack) if p > floor and p not in slow]
        for position in expected:
            slow.add(_previous(position), position)
        assert fast.add_entries(ack, floor, _previous, known) == expected
        assert list(fast) == list(slow)


def test_add_entries_joins_both_neighbours_and_skips_known_ones():
    ranges = PositionRangeSet()
    ranges.add((1, 3), (1, 5))
    ranges.add((1, 6), (1, 8))
    assert ranges.add_entries([(1, 4), (1, 6), (1, 3), (1, 1)], (1, 1), _previous) == [
        (1, 6), (1, 3)
    ]
    assert list(ranges) == [((1, 2), (1, 8))]


def test_add_entries_refuses_an_empty_range():
    with pytest.raises(ValueError, match="empty range"):
        PositionRangeSet().add_entries([(1, 5)], (0, 0), lambda p: p)
