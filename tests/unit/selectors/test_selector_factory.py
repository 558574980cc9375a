"""make_selector picks the selector Pulsar's Key_Shared dispatcher would, and the package
exports its public names."""

from __future__ import annotations

import enum

import pytest

import pulsarlab.broker.selectors as selectors
from pulsarlab.broker.selectors import (
    ConsistentHashingStickyKeyConsumerSelector,
    HashRangeAutoSplitStickyKeyConsumerSelector,
    HashRangeExclusiveStickyKeyConsumerSelector,
    StickyKeyConsumerSelector,
    format_range,
    make_selector,
)


class KeySharedMode(enum.Enum):
    AUTO_SPLIT = 0
    STICKY = 1


def test_auto_split_with_consistent_hashing() -> None:
    selector = make_selector("auto_split", use_consistent_hashing=True)
    assert isinstance(selector, ConsistentHashingStickyKeyConsumerSelector)
    assert selector.number_of_points == 100
    selector = make_selector("AUTO_SPLIT", True, consistent_hashing_points=7)
    assert isinstance(selector, ConsistentHashingStickyKeyConsumerSelector)
    assert selector.number_of_points == 7


def test_auto_split_without_consistent_hashing() -> None:
    selector = make_selector("auto_split", use_consistent_hashing=False)
    assert isinstance(selector, HashRangeAutoSplitStickyKeyConsumerSelector)
    assert selector.range_size == 65536


@pytest.mark.parametrize("use_consistent_hashing", [True, False])
def test_sticky_ignores_consistent_hashing(use_consistent_hashing: bool) -> None:
    selector = make_selector("sticky", use_consistent_hashing)
    assert isinstance(selector, HashRangeExclusiveStickyKeyConsumerSelector)


def test_enum_modes_are_accepted() -> None:
    assert isinstance(
        make_selector(KeySharedMode.STICKY, True), HashRangeExclusiveStickyKeyConsumerSelector
    )
    assert isinstance(
        make_selector(KeySharedMode.AUTO_SPLIT, False), HashRangeAutoSplitStickyKeyConsumerSelector
    )


def test_unknown_mode() -> None:
    with pytest.raises(ValueError, match="unknown Key_Shared mode"):
        make_selector("round_robin", False)


def test_every_selector_implements_the_interface() -> None:
    for mode, ch in [("auto_split", True), ("auto_split", False), ("sticky", False)]:
        assert isinstance(make_selector(mode, ch), StickyKeyConsumerSelector)


def test_format_range_matches_pulsar_stats() -> None:
    assert format_range((0, 16384)) == "[0, 16384]"


def test_public_names_are_exported() -> None:
    for name in selectors.__all__:
        assert hasattr(selectors, name), name
