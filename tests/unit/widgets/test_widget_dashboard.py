"""Dashboard: the right tabs per subscription type, and the numbers in its header."""

from __future__ import annotations

import pytest

from pulsarlab.widgets import VIEWS, Dashboard, View, WhatIf


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
