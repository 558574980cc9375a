"""HashRangeView in what-if mode: the split, the merge, sticky ranges, key lookup, previews."""

from __future__ import annotations

import pytest

from pulsarlab.broker.selectors import slot, sticky_key_hash
from pulsarlab.widgets import HashRangeView, WhatIf

KEYS = [f"order-{i}" for i in range(40)]


@pytest.fixture
def auto_split():
    return WhatIf("Key_Shared", key_shared_use_consistent_hashing=False)


def test_adding_c2_splits_the_line_into_two_exact_ranges(auto_split):
    view = HashRangeView(auto_split, KEYS)
    auto_split.add_consumer("C1")
    assert view.ranges == {"C1": [(0, 65536)]}
    auto_split.add_consumer("C2")
    assert view.ranges == {"C2": [(0, 32768)], "C1": [(32769, 65536)]}
    bars = view.fig.data[0]
    assert list(bars.base) == [0, 32769]
    assert list(bars.x) == [32769, 32768]  # inclusive widths
    assert list(bars.text) == ["C2 [0, 32768]", "C1 [32769, 65536]"]
    assert view.summary()["mode"] == "AUTO_SPLIT"
    assert view.summary()["shares"] == {"C2": 32769 / 65536, "C1": 32767 / 65536}


def test_four_consumers_match_the_spec_split(auto_split):
    view = HashRangeView(auto_split, KEYS)
    for name in ("C1", "C2", "C3", "C4"):
        auto_split.add_consumer(name)
    assert view.ranges == {
        "C3": [(0, 16384)], "C2": [(16385, 32768)], "C4": [(32769, 49152)],
        "C1": [(49153, 65536)],
    }
    auto_split.remove_consumer("C3")  # its range passes up to the next consumer
    assert view.ranges["C2"] == [(0, 32768)]


def test_keys_are_ticks_coloured_by_owner_and_the_lookup_box_explains_one(auto_split):
    view = HashRangeView(auto_split, KEYS)
    auto_split.add_consumer("C1")
    auto_split.add_consumer("C2")
    ticks = view.fig.data[1]
    assert list(ticks.x) == [slot(sticky_key_hash(k.encode())) for k in KEYS]
    c1, c2 = auto_split.palette.color("C1"), auto_split.palette.color("C2")
    expected = [c2 if x <= 32768 else c1 for x in ticks.x]
    assert list(ticks.marker.color) == expected
    info = view.lookup("Order-3459134")
    assert (info.hash, info.slot, info.owner) == (964695987, 6067, "C2")
    view.lookup_box.value = "Order-3459134"
    assert "964695987" in view.lookup_result.value and "6067" in view.lookup_result.value


def test_preview_highlights_exactly_the_keys_that_then_move(auto_split):
    view = HashRangeView(auto_split, KEYS)
    auto_split.add_consumer("C1")
    auto_split.add_consumer("C2")
    would_move = view.preview("C3")
    assert would_move  # some keys, not all
    assert len(would_move) < len(KEYS)
    assert list(view.fig.data[2].x) == [slot(sticky_key_hash(k.encode())) for k in would_move]
    view.add_consumer("C3")
    assert view.last_moved == would_move
    assert all(view.key_owners[k] == "C3" for k in would_move)
    assert list(view.fig.data[2].x) == []  # highlight cleared by the change
    assert view.preview("C3") == [k for k in KEYS if view.key_owners[k] == "C3"]  # removal


def test_the_buttons_drive_the_core(auto_split):
    view = HashRangeView(auto_split, KEYS[:4])
    view.name_box.value = "C1"
    view.add_consumer()
    assert auto_split.consumer_names == ["C1"]
    view.remove_consumer("C1")
    assert auto_split.consumer_names == []
    assert view.ranges == {}


def test_sticky_ranges_as_declared_and_a_conflict_is_refused():
    whatif = WhatIf("Key_Shared", key_shared_mode="STICKY")
    view = HashRangeView(whatif, ["Order-3459134"])
    view.add_consumer("C1", [(0, 16383), (32768, 49151)])
    view.add_consumer("C2", [(16384, 32767), (49152, 65535)])
    assert view.ranges == {"C1": [(0, 16383), (32768, 49151)],
                           "C2": [(16384, 32767), (49152, 65535)]}
    assert view.key_owners == {"Order-3459134": "C1"}
    view.name_box.value = "C3"
    view.ranges_box.value = "10-20"  # the preview runs the real validation
    assert "Range conflict with consumer Consumer{" in view.message.value
    assert "consumerName=C1}" in view.message.value
    view._act(view.add_consumer, "C3", [(10, 20)])
    assert "Range conflict" in view.message.value
    assert whatif.consumer_names == ["C1", "C2"]


def test_a_sticky_gap_leaves_keys_unowned():
    whatif = WhatIf("Key_Shared", key_shared_mode="STICKY")
    view = HashRangeView(whatif, KEYS)
    whatif.add_consumer("C1", hash_ranges=[(0, 32767)])
    unowned = [k for k, o in view.key_owners.items() if o is None]
    assert unowned == [k for k in KEYS if slot(sticky_key_hash(k.encode())) > 32767]
    assert "fall in no consumer's range" in view.table.value


def test_a_browser_view_opened_after_the_steps_starts_from_the_latest_one():
    """The figure sits in a box, so plotly never republishes its state on display: the view
    does, or a browser draws the constructor's traces (the orange 'moved' markers took a
    palette colour) without the steps' points."""
    keys = [f"Order-{n}" for n in range(3459130, 3459142)]
    whatif = WhatIf("Key_Shared", key_shared_use_consistent_hashing=False)
    view = HashRangeView(whatif, keys)
    for name in ("C1", "C2", "C3", "C4", "C5"):
        whatif.add_consumer(name)
    assert view.step_moved == ["Order-3459134"]
    view._repr_mimebundle_()
    published = view.fig._widget_data
    moved = published[3]
    assert moved["name"] == "moved in this step"
    assert moved["marker"]["color"] == "#ff6d00"
    assert list(moved["x"]) == list(view.fig.data[3].x) and len(moved["x"]) == 1
    assert list(published[1]["marker"]["color"]) == list(view.fig.data[1].marker.color)
    assert view.fig._widget_layout["title"]["text"] == view.fig.layout.title.text


def test_a_few_keys_are_named_on_the_plot_neighbours_above_and_below():
    whatif = WhatIf("Key_Shared", key_shared_use_consistent_hashing=False)
    view = HashRangeView(whatif, ["A", "B", "C", "D", None])
    whatif.add_consumer("C1")
    keys = view.fig.data[1]
    assert "text" in keys.mode and list(keys.text) == ["A", "B", "C", "D", "(no key)"]
    by_x = [place for _, place in sorted(zip(keys.x, keys.textposition, strict=True))]
    assert by_x == ["top center", "bottom center"] * 2 + ["top center"]
    assert "<text" in view.picture() and ">D</text>" in view.picture()
    crowded = HashRangeView(whatif)  # sixteen sample keys: ticks only
    crowded.follow()
    assert crowded.fig.data[1].mode == "markers" and not crowded.fig.data[1].text
