"""HashRangeExclusiveStickyKeyConsumerSelector: validation messages, the fixed selection rule,
the legacy floor/ceiling bug, and single-consumer key hash range filtering."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pulsarlab.broker.errors import ConsumerAssignError
from pulsarlab.broker.selectors import HashRangeExclusiveStickyKeyConsumerSelector


@dataclass(eq=False)
class FakeConsumer:
    consumer_name: str
    key_hash_ranges: list[tuple[int, int]] | None = field(default_factory=list)

    def __repr__(self) -> str:
        return self.consumer_name


Selector = HashRangeExclusiveStickyKeyConsumerSelector


def spec_example() -> tuple[Selector, FakeConsumer, FakeConsumer]:
    selector = HashRangeExclusiveStickyKeyConsumerSelector()
    c1 = FakeConsumer("C1", [(0, 16383), (32768, 49151)])
    c2 = FakeConsumer("C2", [(16384, 32767), (49152, 65535)])
    selector.add_consumer(c1)
    selector.add_consumer(c2)
    return selector, c1, c2


def state(selector: HashRangeExclusiveStickyKeyConsumerSelector):
    return selector.consumers, selector.consumer_key_hash_ranges()


def test_spec_example_order_3459134_goes_to_c1() -> None:
    selector, c1, c2 = spec_example()
    assert selector.select(964695987) is c1  # slot 6067
    assert selector.select_for_key(b"Order-3459134") is c1
    assert selector.select(16384) is c2 and selector.select(16383) is c1
    assert selector.select(65535) is c2 and selector.select(65536) is c1
    assert selector.formatted_key_hash_ranges() == {
        c1: ["[0, 16383]", "[32768, 49151]"],
        c2: ["[16384, 32767]", "[49152, 65535]"],
    }


def test_ranges_are_reported_sorted() -> None:
    selector = HashRangeExclusiveStickyKeyConsumerSelector()
    c = FakeConsumer("C", [(500, 600), (0, 10), (100, 100)])
    selector.add_consumer(c)
    assert selector.consumer_key_hash_ranges() == {c: [(0, 10), (100, 100), (500, 600)]}


@pytest.mark.parametrize(
    ("ranges", "message"),
    [
        ([], "Ranges for KeyShared policy must not be empty."),
        (None, "Ranges for KeyShared policy must not be empty."),
        ([(5, 4)], "Fixed hash range start > end for range: [5,4]"),
        ([(0, 70000)], "Ranges must be [0, 65535] but provided range is [0, 70000]"),
        ([(-1, 5)], "Ranges must be [0, 65535] but provided range is [-1, 5]"),
        ([(0, 65536)], "Ranges must be [0, 65535] but provided range is [0, 65536]"),
        # start > end is checked before bounds, bounds before own overlaps
        ([(0, 70000), (9, 8)], "Fixed hash range start > end for range: [9,8]"),
        ([(0, 10), (5, 70000)], "Ranges must be [0, 65535] but provided range is [5, 70000]"),
        (
            [(20, 30), (0, 20)],
            "Consumer's own ranges conflict: [0,20] overlaps with [20,30]",
        ),
        (
            [(0, 100), (300, 400), (10, 20)],
            "Consumer's own ranges conflict: [0,100] overlaps with [10,20]",
        ),
    ],
)
def test_invalid_ranges_are_rejected(ranges, message: str) -> None:
    """``HashRangeExclusiveStickyKeyConsumerSelector.validateKeySharedMeta`` (3.3.9+) words
    its own checks with ranges built as ``"[" + start + "," + end + "]"``."""
    selector, _, _ = spec_example()
    before = state(selector)
    with pytest.raises(ConsumerAssignError) as info:
        selector.add_consumer(FakeConsumer("bad", ranges))
    assert str(info.value) == message
    assert "\n" not in str(info.value)
    assert state(selector) == before


def test_missing_attribute_counts_as_empty() -> None:
    @dataclass(eq=False)
    class Plain:
        consumer_name: str

    selector = HashRangeExclusiveStickyKeyConsumerSelector()
    with pytest.raises(ConsumerAssignError, match="must not be empty"):
        selector.add_consumer(Plain("p"))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("ranges", "message"),
    [
        ([(10, 20)], "Range conflict with consumer A"),
        ([(5, 5)], "Range conflict with consumer A"),
        ([(100, 200)], "Range conflict with consumer B"),
        ([(11, 49), (0, 0)], "Range conflict with consumer A"),
        # containment: the new range swallows B's range
        ([(20, 1000)], "Range conflict with consumer B"),
        # a new range inside the gap of A's two ranges must not conflict with A
        ([(11, 49), (151, 199), (400, 65535)], None),
        # the declared order decides which conflict is named
        ([(100, 120), (5, 6)], "Range conflict with consumer B"),
        ([(5, 6), (100, 120)], "Range conflict with consumer A"),
    ],
)
def test_conflicts_with_other_consumers(ranges, message: str | None) -> None:
    """``HashRangeExclusiveStickyKeyConsumerSelector.internalAddConsumer``: "Range conflict
    with consumer " + the conflicting consumer (``findConflictingConsumer`` checks the
    declared ranges in order, floor entry then ceiling entry)."""
    selector = HashRangeExclusiveStickyKeyConsumerSelector()
    a = FakeConsumer("A", [(0, 10), (200, 300)])
    b = FakeConsumer("B", [(50, 150)])
    selector.add_consumer(a)
    selector.add_consumer(b)
    before = state(selector)
    newcomer = FakeConsumer("C", ranges)
    if message is None:
        selector.add_consumer(newcomer)
        assert selector.select(30) is newcomer and selector.select(305) is None
        return
    with pytest.raises(ConsumerAssignError) as info:
        selector.add_consumer(newcomer)
    assert str(info.value) == message
    assert state(selector) == before


def test_shared_endpoints_conflict() -> None:
    selector = HashRangeExclusiveStickyKeyConsumerSelector()
    selector.add_consumer(FakeConsumer("A", [(0, 10)]))
    with pytest.raises(ConsumerAssignError, match="Range conflict with consumer A"):
        selector.add_consumer(FakeConsumer("B", [(10, 20)]))
    selector.add_consumer(FakeConsumer("B", [(11, 20)]))  # adjacent is fine


def test_same_consumer_twice_conflicts_with_itself() -> None:
    selector, c1, _ = spec_example()
    with pytest.raises(ConsumerAssignError, match="Range conflict with consumer C1"):
        selector.add_consumer(c1)


def test_gaps_select_nobody() -> None:
    selector = HashRangeExclusiveStickyKeyConsumerSelector()
    c1 = FakeConsumer("C1", [(0, 9999), (20000, 29999)])
    selector.add_consumer(c1)
    assert selector.select(15000) is None  # fixed rule
    assert selector.select(9999) is c1 and selector.select(20000) is c1
    assert selector.select(30000) is None and selector.select(65535) is None


def test_legacy_floor_ceiling_bug_catches_the_gap() -> None:
    selector = HashRangeExclusiveStickyKeyConsumerSelector()
    c1 = FakeConsumer("C1", [(0, 9999), (20000, 29999)])
    selector.add_consumer(c1)
    assert selector.legacy_floor_ceiling_select(15000) is c1  # the ≤3.3.8 bug
    assert selector.legacy_floor_ceiling_select(15000 + 65536) is c1  # takes hashes too
    assert selector.legacy_floor_ceiling_select(30000) is None  # no ceiling entry
    c2 = FakeConsumer("C2", [(12000, 13000)])
    selector.add_consumer(c2)
    # Another consumer's range inside the gap splits it: floor and ceiling now differ.
    assert selector.legacy_floor_ceiling_select(11000) is None
    assert selector.legacy_floor_ceiling_select(12500) is c2
    assert selector.legacy_floor_ceiling_select(15000) is None


def test_legacy_and_fixed_agree_inside_ranges() -> None:
    selector, _, _ = spec_example()
    for h in range(0, 65536, 97):
        assert selector.legacy_floor_ceiling_select(h) is selector.select(h)


def test_legacy_no_floor() -> None:
    selector = HashRangeExclusiveStickyKeyConsumerSelector()
    selector.add_consumer(FakeConsumer("C", [(100, 200)]))
    assert selector.legacy_floor_ceiling_select(50) is None


def test_remove_frees_the_ranges() -> None:
    selector, c1, c2 = spec_example()
    selector.remove_consumer(c1)
    assert selector.select(6067) is None and selector.select(20000) is c2
    selector.add_consumer(FakeConsumer("C3", [(0, 16383)]))
    selector.remove_consumer(c1)  # unknown: no-op
    assert [c.consumer_name for c in selector.consumers] == ["C2", "C3"]


def test_reader_filter_with_one_consumer() -> None:
    """A reader/Exclusive consumer declaring ranges: entries outside them are filtered."""
    selector = HashRangeExclusiveStickyKeyConsumerSelector()
    reader = FakeConsumer("reader", [(0, 32767)])
    selector.add_consumer(reader)
    assert selector.select(964695987) is reader  # slot 6067
    assert selector.select(40000) is None


def test_custom_range_size_bounds() -> None:
    selector = HashRangeExclusiveStickyKeyConsumerSelector(range_size=16)
    with pytest.raises(ConsumerAssignError, match=r"must be \[0, 15\]"):
        selector.add_consumer(FakeConsumer("C", [(0, 16)]))
    with pytest.raises(ValueError):
        HashRangeExclusiveStickyKeyConsumerSelector(range_size=0)


def test_version_picks_the_sticky_selector() -> None:
    """PR #24730 fixed STICKY selection and validation in 3.3.9."""
    from pulsarlab.broker.pulsar_version import PulsarVersion
    from pulsarlab.broker.selectors import (
        LegacyHashRangeExclusiveStickyKeyConsumerSelector,
        sticky_selector,
    )

    assert type(sticky_selector()) is HashRangeExclusiveStickyKeyConsumerSelector
    assert type(sticky_selector(PulsarVersion.parse("3.3.9"))) is (
        HashRangeExclusiveStickyKeyConsumerSelector
    )
    legacy = sticky_selector(PulsarVersion.parse("3.3.8"))
    assert type(legacy) is LegacyHashRangeExclusiveStickyKeyConsumerSelector


@pytest.mark.parametrize(
    ("ranges", "message"),
    [
        ([(5, 4)], "Fixed hash range start > end"),
        ([(0, 70000)], "Ranges must be [0, 65535] but provided range is [0, 70000]"),
        # floorEntry(end) first: A's end 300 lies inside [20, 1000] (the fixed rule names B)
        ([(20, 1000)], "Range conflict with consumer A"),
        ([(100, 200)], "Range conflict with consumer A"),  # A's start 200 is the floor of 200
        ([(140, 160)], "Range conflict with consumer B"),  # floorEntry(160) = B's end 150
        ([(60, 70)], "Range conflict with consumer B"),  # inside B's range: no key inside
        ([(11, 49), (151, 199)], None),  # the gaps of A and between A and B are free
        ([(400, 500), (450, 460)], None),  # own overlaps were not rejected
    ],
)
def test_legacy_validation(ranges, message: str | None) -> None:
    """``HashRangeExclusiveStickyKeyConsumerSelector.validateKeySharedMeta`` before PR #24730:
    per declared range, start > end, then ``floorEntry(end)``, ``ceilingEntry(start)`` and the
    same-consumer containment check over the map of range starts and ends."""
    from pulsarlab.broker.selectors import LegacyHashRangeExclusiveStickyKeyConsumerSelector

    selector = LegacyHashRangeExclusiveStickyKeyConsumerSelector()
    selector.add_consumer(FakeConsumer("A", [(0, 10), (200, 300)]))
    selector.add_consumer(FakeConsumer("B", [(50, 150)]))
    newcomer = FakeConsumer("C", ranges)
    if message is None:
        selector.add_consumer(newcomer)
        return
    with pytest.raises(ConsumerAssignError) as info:
        selector.add_consumer(newcomer)
    assert str(info.value) == message


def test_legacy_selection_catches_the_gaps() -> None:
    from pulsarlab.broker.selectors import LegacyHashRangeExclusiveStickyKeyConsumerSelector

    selector = LegacyHashRangeExclusiveStickyKeyConsumerSelector()
    c1 = FakeConsumer("C1", [(0, 9999), (20000, 29999)])
    selector.add_consumer(c1)
    assert selector.select(15000) is c1  # the ≤ 3.3.8 bug
    assert selector.select(30000) is None
