"""Dashboard: the right tabs per subscription type, and the numbers in its header."""

from __future__ import annotations

import ipywidgets
import pytest

from pulsarlab.widgets import VIEWS, Dashboard, View, WhatIf, WhatIfControls
from pulsarlab.widgets.hash_ring import HashRingView
from pulsarlab.widgets.history import HistoryBar


@pytest.mark.parametrize(
    ("sub_type", "settings", "tabs"),
    [
        ("Key_Shared", {"key_shared_use_consistent_hashing": False},
         ["hash ranges", "flow", "cursor", "timeline"]),
        ("Key_Shared", {}, ["hash ring", "flow", "cursor", "timeline"]),
        ("Failover", {}, ["failover", "cursor", "timeline", "flow"]),
        ("Shared", {}, ["flow", "cursor", "timeline"]),
    ],
)
def test_tabs_follow_the_subscription_type(sub_type, settings, tabs):
    whatif = WhatIf(sub_type, **settings)
    dashboard = Dashboard(whatif)
    assert list(dashboard.views) == tabs
    assert [dashboard.tabs.get_title(i) for i in range(len(tabs))] == tabs
    whatif.add_consumer("C1")
    whatif.publish(["a", "b", "c"])
    summary = dashboard.summary()
    assert summary["consumers"] == ["C1"]
    assert summary["backlog"] == 3
    assert "backlog <b>3</b>" in dashboard.header.value
    assert all(view.frames >= 3 for view in dashboard.views.values())


def test_every_view_displays_itself():
    whatif = WhatIf("Key_Shared", key_shared_use_consistent_hashing=False)
    for name, cls in VIEWS.items():
        view = cls(whatif)
        assert isinstance(view, View)
        assert view.widget is view
        bundle = view._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in bundle, name


def _inside(widget):
    out = [widget]
    for child in getattr(widget, "children", ()):
        out += _inside(child)
    return out


@pytest.mark.parametrize(
    ("sub_type", "settings"),
    [("Key_Shared", {"key_shared_use_consistent_hashing": False}), ("Key_Shared", {}),
     ("Failover", {}), ("Shared", {})],
)
def test_one_step_bar_and_one_control_block_by_construction(sub_type, settings):
    whatif = WhatIf(sub_type, **settings)
    dashboard = Dashboard(whatif, keys=["A", "B"])
    widgets = _inside(dashboard)
    assert sum(isinstance(w, HistoryBar) for w in widgets) == 1
    assert sum(isinstance(w, WhatIfControls) for w in widgets) == 1
    buttons = [w.description for w in widgets if isinstance(w, ipywidgets.Button)]
    assert buttons.count("add consumer") == buttons.count("remove consumer") == 1
    keys = [w for w in widgets if isinstance(w, ipywidgets.Text) and w.description == "keys"]
    assert [k.value for k in keys] == ["A, B"]  # the keys the tabs draw are the ones published
    assert all(view.stepper is dashboard.stepper for view in dashboard.views.values())


def test_the_tabs_are_steps_of_the_dashboard():
    whatif = WhatIf("Key_Shared", key_shared_use_consistent_hashing=False)
    dashboard = Dashboard(whatif)
    whatif.add_consumer("C1")
    whatif.add_consumer("C2")
    ranges = dashboard.views["hash ranges"]
    assert ranges.history is dashboard.history and ranges.step.index == 2
    dashboard.at(1)
    assert ranges.fig.layout.title.text.endswith("1 consumer(s)")
    assert dashboard.step_summary()["consumers"] == ["C1"]
    assert ranges.step_summary()["ranges"].keys() == {"C1"}
    whatif.add_consumer("C3")  # pinned: every tab stays on step 1
    assert ranges.fig.layout.title.text.endswith("1 consumer(s)")
    assert set(ranges.ranges) == {"C1", "C2", "C3"}  # the view's own state is the latest
    dashboard.history_bar.slider.value = 3  # the one bar moves every tab
    assert ranges.fig.layout.title.text.endswith("3 consumer(s)") and dashboard.pinned is None


def test_the_new_consumer_box_offers_a_free_name():
    whatif = WhatIf("Shared")
    whatif.add_consumer("C1")
    dashboard = Dashboard(whatif)
    controls = next(w for w in _inside(dashboard) if isinstance(w, WhatIfControls))
    assert controls.new_name.value == "C2"
    controls.buttons["add consumer"].click()
    assert whatif.consumer_names == ["C1", "C2"] and controls.new_name.value == "C3"
    whatif.add_consumer("C3")  # added elsewhere: the offer moves on
    assert controls.new_name.value == "C4"
    controls.new_name.value = "orders-worker"  # a name being typed is left alone
    whatif.add_consumer("C4")
    assert controls.new_name.value == "orders-worker"


def test_the_hash_views_draw_the_keys_the_what_if_core_published():
    whatif = WhatIf("Key_Shared", key_shared_use_consistent_hashing=False)
    whatif.add_consumer("C1")
    whatif.publish(["A", "B", "A", "C", None, "B", "D"])
    board = Dashboard(whatif)
    assert board.message_keys == ["A", "B", "C", None, "D"]
    assert board.views["hash ranges"].message_keys == ["A", "B", "C", None, "D"]
    assert Dashboard(whatif, keys=["x"]).views["hash ranges"].message_keys == ["x"]
    fresh = WhatIf("Key_Shared")  # nothing published yet: sixteen sample keys
    assert HashRingView(fresh).message_keys == [f"key-{i}" for i in range(16)]
