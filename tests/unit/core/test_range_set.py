"""The cursor's open-closed range set of acknowledged positions."""

from itertools import pairwise

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
