"""StatsView over recorded ``pulsar-admin topics stats`` dumps of 3.x and 4.x clusters."""

from __future__ import annotations

import json

from pulsarlab.widgets import StatsView
from pulsarlab.widgets.pulsar_stats import parse_range_set, parse_ranges


def test_3x_auto_split_strings(recorded_stats):
    view = StatsView(recorded_stats("stats_3x_auto_split.json"))
    summary = view.summary()
    assert summary["subscription"] == "orders-ks"
    assert summary["version"] == "3.x"
    assert summary["space"] == 65536
    assert view.ranges == {"C1": [(49153, 65536)], "C2": [(16385, 32768)],
                           "C3": [(0, 16384)], "C4": [(32769, 49152)]}
    assert summary["recently_joined"] == {"C4": "12:40571"}
    assert summary["backlog"] == {"orders-ks": 71678, "audit": 486767}
    ranges, backlog = view.fig.data
    assert list(ranges.base) == [0, 16385, 32769, 49153]
    assert list(ranges.text) == ["C3", "C2", "C4", "C1"]
    assert list(backlog.x) == ["orders-ks", "audit"]
    assert "waits for mark-delete to pass 12:40571" in view.table.value


def test_4x_range_arrays_and_draining_hashes(recorded_stats):
    view = StatsView(json.dumps(recorded_stats("stats_4x_draining.json")))
    summary = view.summary()
    assert summary["version"] == "4.x"
    assert summary["draining"] == {"c1": 2, "c2": 0}
    covered = sorted(r for rs in view.ranges.values() for r in rs)
    assert covered[0] == (1, 2959) and covered[-1] == (61274, 65535)
    assert sum(e - s + 1 for s, e in covered) == 65535  # 1..65535, no gap, no overlap
    assert "2 draining hash(es)" in view.table.value


def test_3x_sticky_and_choosing_a_subscription(recorded_stats):
    stats = recorded_stats("stats_3x_sticky.json")
    view = StatsView(stats, subscription="sticky-sub")
    assert view.summary()["key_shared_mode"] == "STICKY"
    assert view.ranges["C1"] == [(0, 16383), (32768, 49151)]
    view.update(recorded_stats("stats_3x_auto_split.json"))
    assert view.subscription_name == "orders-ks"
    assert view.frames == 2


def test_parsers():
    assert parse_ranges(["[0, 16384]", " [16385,32768] "]) == [(0, 16384), (16385, 32768)]
    assert parse_ranges([[5, 9], [1, 2]]) == [(1, 2), (5, 9)]
    assert parse_range_set("[(3:5..3:7], (3:9..4:-1]]") == [((3, 5), (3, 7)), ((3, 9), (4, -1))]
    assert parse_range_set("[]") == []


def test_each_update_is_a_step_of_the_history(recorded_stats):
    view = StatsView(recorded_stats("stats_3x_sticky.json"), subscription="sticky-sub")
    view.update(recorded_stats("stats_3x_auto_split.json"), "after the rebalance")
    assert view.history.labels == ["loaded", "after the rebalance"]
    assert view.describe() == ("<StatsView step 1 ('after the rebalance'): "
                               f"{view.fig.layout.title.text}>")
    assert view.history_bar.slider.max == 1 and view.history_bar in view.children

    view.show_step("loaded")  # the first dict, drawn again; the latest stays the latest
    assert view.fig.layout.title.text.startswith("sticky-sub")
    assert list(view.fig.data[0].base) == [0, 16384, 32768, 49152]
    assert view.picture().count("step 0: loaded") == 1
    assert view.subscription_name == "orders-ks"
    view.update(recorded_stats("stats_4x_draining.json"))
    assert view.step.index == 0 and len(view.history) == 3  # pinned: the slider grows
    assert view.fig.layout.title.text.startswith("sticky-sub")

    still = view.still("after the rebalance")
    assert repr(still).startswith("<picture of StatsView step 1 ('after the rebalance')")
    assert "orders-ks" in still.svg
    assert view.fig.layout.title.text.startswith("sticky-sub")  # the widget is untouched
    view.follow()
    assert view.step.index == 2 and view.summary()["version"] == "4.x"


def test_a_stats_view_is_a_view_over_a_static_source(recorded_stats):
    from pulsarlab.widgets import View
    from pulsarlab.widgets.stats_view import RecordedStats

    view = StatsView(recorded_stats("stats_3x_sticky.json"), subscription="sticky-sub")
    assert isinstance(view, View) and isinstance(view.source, RecordedStats)
    assert not view.source.simulated and view.whatif is None
    view.update(recorded_stats("stats_3x_auto_split.json"), "after")
    assert view.step_summary(0)["key_shared_mode"] == "STICKY"
    assert view.step_summary()["subscription"] == "orders-ks"
