"""HashRingView: 100 points per consumer, exact shares, keys moved by a change."""

from __future__ import annotations

import re

import pytest

from pulsarlab.widgets import HashRingView, WhatIf
from pulsarlab.widgets.hash_ring import degrees
from pulsarlab.widgets.keys import key_info, ring_of

KEYS = [f"user-{i}" for i in range(60)]


@pytest.fixture
def ring():
    whatif = WhatIf("Key_Shared")  # consistent hashing is Pulsar 3.3's default
    view = HashRingView(whatif, KEYS)
    for name in ("C1", "C2", "C3"):
        whatif.add_consumer(name)
    return whatif, view


def test_shares_sum_to_one_and_match_the_brokers_selector(ring):
    whatif, view = ring
    selector = whatif.selector()
    expected = {c.consumer_name: s for c, s in selector.keyspace_shares().items()}
    assert view.shares == expected
    assert sum(view.shares.values()) == pytest.approx(1.0, abs=1e-12)
    for name, share in view.shares.items():
        assert f"{share:.2%}" in view.table.value
        assert name in view.table.value


def test_each_consumer_has_its_100_points_on_the_circle(ring):
    whatif, view = ring
    assert view.summary()["points"] == {"C1": 100, "C2": 100, "C3": 100}
    points = view.fig.data[1]
    assert len(points.theta) == 300
    selector_points = sorted(p for ps in whatif.selector().consumer_points().values() for p in ps)
    assert sorted(points.theta) == sorted(degrees(p) for p in selector_points)


def test_keys_owned_as_the_selector_says_and_moves_previewed(ring):
    whatif, view = ring
    selector = whatif.selector()
    for key, owner in view.key_owners.items():
        assert selector.select_for_key(key.encode()).consumer_name == owner
    would_move = view.preview("C4")
    assert 0 < len(would_move) < len(KEYS) // 2  # a ring takes a little from everyone
    whatif.add_consumer("C4")
    assert view.last_moved == would_move
    assert {view.key_owners[k] for k in would_move} == {"C4"}
    assert f"moved {len(would_move)} of {len(KEYS)} keys" in view.table.value


def test_removing_a_consumer_moves_only_its_keys(ring):
    _whatif, view = ring
    c2_keys = [k for k, o in view.key_owners.items() if o == "C2"]
    assert view.preview("C2") == c2_keys
    view.name_box.value = "C2"
    view._apply("remove")
    assert view.last_moved == c2_keys
    assert "C2" not in view.shares


def test_a_ring_rebuilt_from_names_is_the_brokers_ring(ring):
    whatif, _view = ring
    rebuilt = ring_of(["C3", "C1", "C2"], 100)
    real = whatif.selector()
    assert {c.consumer_name: s for c, s in rebuilt.keyspace_shares().items()} == {
        c.consumer_name: s for c, s in real.keyspace_shares().items()
    }


def _filled_polygons(svg: str) -> int:
    """Filled diamonds and squares: the keys' markers plus the legend's swatches but the
    open square of "moved in this step"."""
    return len(re.findall(r"<polygon points='[^']*' fill='#", svg))


def test_the_static_picture_shows_the_zoomed_sector_only(ring):
    _whatif, view = ring
    whole = view.picture()
    legend = 5  # C1..C3 and "changed owner in this step", "moved in this step"
    assert "<circle" in whole and _filled_polygons(whole) == len(KEYS) + legend - 1
    centre = degrees(key_info("user-7").hash)
    shown = [k for k in KEYS if (degrees(key_info(k).hash) - centre + 20) % 360 <= 40]
    assert 0 < len(shown) < len(KEYS)
    zoomed = view.zoom("user-7", width=40).picture()
    low, high = view.fig.layout.polar.sector
    assert high - low == pytest.approx(40)
    assert "<circle" not in zoomed  # the background is the sector's wedge
    assert _filled_polygons(zoomed) == len(shown) + legend - 1
    assert view.still().svg.count("<polygon") == zoomed.count("<polygon")
    assert _filled_polygons(view.zoom().picture()) == len(KEYS) + legend - 1


def test_zoom_applies_to_a_pinned_step_and_stays_while_scrubbing(ring):
    whatif, view = ring
    whatif.add_consumer("C4")
    view.show_step("add consumer C2")
    view.zoom("user-7", width=40)
    assert view.step.label == "add consumer C2"
    assert "<circle" not in view.picture()
    sector = tuple(view.fig.layout.polar.sector)
    view.follow()
    assert tuple(view.fig.layout.polar.sector) == sector
    assert "<circle" not in view.picture()


def test_changed_stretches_have_their_own_track_between_the_keys_and_the_band(ring):
    whatif, view = ring
    whatif.add_consumer("C4")
    band, _points, keys, _would, changed = view.fig.data[:5]
    assert len(changed.theta) == len(view.changed) > 0
    inner, outer = changed.base[0], changed.base[0] + changed.r[0]
    assert keys.r[0] < inner and outer < band.base[0]  # the owners' band is left whole
    assert min(changed.width) >= 1.0  # a sliver of a degree is still seen
    assert changed.marker.color == "#000000"
    assert "stroke='#000000'" in view.picture()


def test_many_changed_stretches_are_widened_less():
    whatif = WhatIf("Key_Shared", subscription_key_shared_consistent_hashing_replica_points=400)
    view = HashRingView(whatif, KEYS)
    for name in ("C1", "C2", "C3", "C4"):
        whatif.add_consumer(name)
    widths = view.fig.data[4].width
    assert len(widths) == len(view.changed) > 90
    widened = [w for w in widths if w == min(widths)]
    assert sum(widened) <= 90  # slivers shown, but no longer a solid black track


def test_keys_with_close_hashes_step_inwards_so_every_diamond_shows():
    from pulsarlab.widgets.hash_ring import _KEYS_R, _key_radii

    radii = _key_radii({"a": 1.0, "b": 3.0, "c": 4.5, "d": 200.0, "e": 358.0})
    assert radii["d"] == _KEYS_R and radii["a"] == _KEYS_R
    assert len({radii["a"], radii["b"], radii["c"]}) == 3  # three near keys, three circles
    assert radii["e"] != radii["a"]  # 3 degrees apart across 0
