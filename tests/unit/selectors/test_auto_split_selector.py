"""HashRangeAutoSplitStickyKeyConsumerSelector: splits, hand-overs and the reported ranges."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pulsarlab.broker.errors import ConsumerAssignError
from pulsarlab.broker.selectors import (
    HashRangeAutoSplitStickyKeyConsumerSelector,
    format_range,
    sticky_key_hash,
)


@dataclass(eq=False)
class FakeConsumer:
    consumer_name: str

    def __repr__(self) -> str:
        return self.consumer_name


def layout(selector: HashRangeAutoSplitStickyKeyConsumerSelector) -> list[str]:
    """Ranges in key-space order, e.g. ``["[0, 16384] C3", ...]``."""
    rows = [
        (r, c.consumer_name)
        for c, ranges in selector.consumer_key_hash_ranges().items()
        for r in ranges
    ]
    return [f"{format_range(r)} {name}" for r, name in sorted(rows)]


def join(selector, names: list[str]) -> dict[str, FakeConsumer]:
    consumers = {name: FakeConsumer(name) for name in names}
    for consumer in consumers.values():
        selector.add_consumer(consumer)
    return consumers


def test_first_consumer_owns_everything() -> None:
    selector = HashRangeAutoSplitStickyKeyConsumerSelector()
    assert selector.select(12345) is None
    (c1,) = join(selector, ["C1"]).values()
    assert layout(selector) == ["[0, 65536] C1"]
    assert selector.formatted_key_hash_ranges() == {c1: ["[0, 65536]"]}
    assert selector.select(0) is c1 and selector.select(2**31 - 1) is c1


def test_four_consumers_join() -> None:
    selector = HashRangeAutoSplitStickyKeyConsumerSelector()
    join(selector, ["C1", "C2", "C3", "C4"])
    assert layout(selector) == [
        "[0, 16384] C3",
        "[16385, 32768] C2",
        "[32769, 49152] C4",
        "[49153, 65536] C1",
    ]


def test_order_3459134_goes_to_c3() -> None:
    selector = HashRangeAutoSplitStickyKeyConsumerSelector()
    consumers = join(selector, ["C1", "C2", "C3", "C4"])
    assert selector.select(964695987) is consumers["C3"]
    assert selector.select_for_key(b"Order-3459134") is consumers["C3"]
    assert selector.make_sticky_key_hash(b"Order-3459134") == sticky_key_hash(b"Order-3459134")


def test_six_consumers_join() -> None:
    selector = HashRangeAutoSplitStickyKeyConsumerSelector()
    join(selector, ["C1", "C2", "C3", "C4", "C5", "C6"])
    assert layout(selector) == [
        "[0, 8192] C5",
        "[8193, 16384] C3",
        "[16385, 24576] C6",
        "[24577, 32768] C2",
        "[32769, 49152] C4",
        "[49153, 65536] C1",
    ]


def test_select_uses_upper_bounds() -> None:
    selector = HashRangeAutoSplitStickyKeyConsumerSelector()
    c = join(selector, ["C1", "C2", "C3", "C4"])
    assert selector.select(16384) is c["C3"]
    assert selector.select(16385) is c["C2"]
    assert selector.select(65535) is c["C1"]
    assert selector.select(65536) is c["C3"]  # 65536 % 65536 == 0
    assert selector.select(2**31 - 1) is c["C1"]  # 2**31 - 1 is slot 65535


def test_top_owner_leaving_hands_its_range_down() -> None:
    selector = HashRangeAutoSplitStickyKeyConsumerSelector()
    c = join(selector, ["C1", "C2", "C3"])
    selector.remove_consumer(c["C1"])
    assert layout(selector) == ["[0, 16384] C3", "[16385, 65536] C2"]
    assert selector.upper_keys() == [(16384, c["C3"]), (65536, c["C2"])]


def test_other_removal_hands_the_range_up() -> None:
    selector = HashRangeAutoSplitStickyKeyConsumerSelector()
    c = join(selector, ["C1", "C2", "C3", "C4"])
    selector.remove_consumer(c["C2"])
    assert layout(selector) == ["[0, 16384] C3", "[16385, 49152] C4", "[49153, 65536] C1"]
    selector.remove_consumer(c["C3"])
    assert layout(selector) == ["[0, 49152] C4", "[49153, 65536] C1"]


def test_last_consumer_leaving_empties_the_selector() -> None:
    selector = HashRangeAutoSplitStickyKeyConsumerSelector()
    c = join(selector, ["C1"])
    selector.remove_consumer(c["C1"])
    assert selector.consumer_key_hash_ranges() == {}
    assert selector.select(7) is None
    selector.remove_consumer(c["C1"])  # unknown consumer: no-op
    assert selector.consumers == ()


def test_rejoin_after_leaving() -> None:
    selector = HashRangeAutoSplitStickyKeyConsumerSelector()
    c = join(selector, ["C1", "C2"])
    selector.remove_consumer(c["C2"])
    selector.add_consumer(c["C2"])
    assert layout(selector) == ["[0, 32768] C2", "[32769, 65536] C1"]
    assert c["C2"] in selector and selector.consumers == (c["C1"], c["C2"])


def test_duplicate_consumer_is_rejected() -> None:
    selector = HashRangeAutoSplitStickyKeyConsumerSelector()
    c = join(selector, ["C1", "C2"])
    before = selector.upper_keys()
    with pytest.raises(ConsumerAssignError, match="C1 is already assigned"):
        selector.add_consumer(c["C1"])
    assert selector.upper_keys() == before


def test_consumers_with_equal_names_are_distinct() -> None:
    selector = HashRangeAutoSplitStickyKeyConsumerSelector()
    a, b = FakeConsumer("same"), FakeConsumer("same")
    selector.add_consumer(a)
    selector.add_consumer(b)
    assert selector.consumer_key_hash_ranges() == {b: [(0, 32768)], a: [(32769, 65536)]}


def test_no_range_left_to_split() -> None:
    selector = HashRangeAutoSplitStickyKeyConsumerSelector(range_size=4)
    c = join(selector, ["C1", "C2", "C3", "C4"])
    assert selector.upper_keys() == [(1, c["C3"]), (2, c["C2"]), (3, c["C4"]), (4, c["C1"])]
    before = selector.upper_keys()
    with pytest.raises(ConsumerAssignError) as info:
        selector.add_consumer(FakeConsumer("C5"))
    assert str(info.value) == "No more range can assigned to new consumer, assigned consumers 4"
    assert info.value.code == "ConsumerAssignError"
    assert selector.upper_keys() == before
    assert [selector.select(h).consumer_name for h in range(8)] == [
        "C3", "C3", "C2", "C4", "C3", "C3", "C2", "C4",
    ]  # fmt: skip


def test_two_slot_ranges_cap_at_range_size_two() -> None:
    selector = HashRangeAutoSplitStickyKeyConsumerSelector(range_size=2)
    join(selector, ["C1", "C2"])
    assert layout(selector) == ["[0, 1] C2", "[2, 2] C1"]
    # Key 2 is not a slot: as in Pulsar, the top consumer gets no keys at all here.
    assert {selector.select(h).consumer_name for h in range(4)} == {"C2"}
    with pytest.raises(ConsumerAssignError, match="assigned consumers 2"):
        selector.add_consumer(FakeConsumer("C3"))


@pytest.mark.parametrize("range_size", [0, 1, 3, 100, -4])
def test_range_size_must_be_a_power_of_two(range_size: int) -> None:
    with pytest.raises(ValueError):
        HashRangeAutoSplitStickyKeyConsumerSelector(range_size=range_size)
