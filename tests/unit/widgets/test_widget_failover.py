"""FailoverView: the SPEC's assignments, disconnects, the failover delay, duplicates."""

from __future__ import annotations

from pulsarlab.widgets import FailoverView, WhatIf
from pulsarlab.widgets.failover import STATES

ACTIVE, SWITCHING, STANDBY = (STATES.index(s) for s in ("active", "switching", "standby"))


def test_nine_partitions_three_consumers_grid():
    whatif = WhatIf("Failover", partitions=9)
    view = FailoverView(whatif)
    for name in ("C", "A", "B"):  # subscription order does not matter
        whatif.add_consumer(name)
    whatif.advance(1000)
    assert view.by_consumer() == {"A": [0, 3, 6], "B": [1, 4, 7], "C": [2, 5, 8]}
    assert view.consumers == ["A", "B", "C"]
    assert view.grid == [
        [ACTIVE if p % 3 == row else STANDBY for p in range(9)] for row in range(3)
    ]
    heat = view.fig.data[0]
    assert list(heat.x) == [f"P{i}" for i in range(9)]
    assert list(heat.y) == ["A (prio 0)", "B (prio 0)", "C (prio 0)"]
    assert heat.text[0][0] == "active" and heat.text[0][1] == "standby"


def test_disconnect_switches_after_the_delay_and_duplicates_show():
    whatif = WhatIf("Failover", partitions=2, active_consumer_failover_delay_ms=1000)
    view = FailoverView(whatif)
    for name in ("A", "B"):
        whatif.add_consumer(name)
    whatif.advance(1000)
    assert view.active == {0: "A", 1: "B"}
    whatif.publish(count=4)  # key-less: round-robin over the partitions
    assert view.switching == {}
    view.toggle("A")  # A dies without acking
    assert view.active == {0: "B", 1: "B"}
    assert view.switching[0][:2] == ("A", "B")
    assert view.grid[view.consumers.index("B")][0] == SWITCHING
    assert "rewind at t = " in view.table.value
    whatif.advance(999)
    assert 0 in view.switching
    whatif.advance(1)
    assert view.switching == {}
    assert view.grid[view.consumers.index("B")] == [ACTIVE, ACTIVE]
    assert view.grid[view.consumers.index("A")] == [0, 0]  # disconnected
    assert view.summary()["duplicates"] == 2  # A's two unacked messages went to B too
    assert "delivered to more than one consumer" in view.table.value
    view.toggle("A")  # reconnect: A takes partition 0 back (after the delay)
    whatif.advance(1000)
    assert view.active == {0: "A", 1: "B"}


def test_priority_levels_pick_the_best_group():
    whatif = WhatIf("Failover", partitions=4)
    view = FailoverView(whatif)
    for name, prio in (("A", 1), ("B", 0), ("C", 0), ("D", 2)):
        whatif.add_consumer(name, priority_level=prio)
    assert [view.active[i] for i in range(4)] == ["B", "C", "B", "C"]
    lower = STATES.index("lower priority")
    assert view.grid[view.consumers.index("A")] == [lower] * 4
    assert view.consumers == ["B", "C", "A", "D"]  # ranked by priority, then name


def test_non_partitioned_topic_shows_the_consumer_ring():
    whatif = WhatIf("Failover")
    view = FailoverView(whatif)
    for name in ("A", "B", "C"):
        whatif.add_consumer(name)
    active = whatif.dispatcher().active_consumer.consumer_name
    assert view.active == {0: active}
    assert len(view.ring) == 300
    point = view.topic_point
    following = [n for h, n in view.ring if h >= point]
    assert (following[0] if following else view.ring[0][1]) == active
    assert view.ring_box.layout.display == "flex"
    assert len(view.ring_fig.data[0].theta) == 300


def test_displaying_a_view_sends_its_figures_full_state_even_when_unchanged():
    """The browser's copy of a figure misses every edit made before plotly's front-end
    module loaded, so a view opened later drew empty axes (tutorial 06's first view, one
    Run All in three): each display sends the whole current state, changed or not."""
    two = WhatIf("Failover", partitions=2)
    view = FailoverView(two)
    for name in ("A", "B"):
        two.add_consumer(name)
    view._repr_mimebundle_()  # the first display opens the figure's comm anew (below)
    sent: list[dict] = []
    view.fig.comm.send = lambda data=None, buffers=None, **_: sent.append(data)
    for _ in range(2):  # the second display changes nothing in the kernel's copy
        sent.clear()
        view.pin()._repr_mimebundle_()
        states = [m["state"] for m in sent if m.get("method") == "update"]
        data = next(s["_widget_data"] for s in states if "_widget_data" in s)
        assert [list(row) for row in data[0]["z"]] == [list(r) for r in view.fig.data[0].z]
        assert data[0]["x"] == ["P0", "P1"]
        assert any("_widget_layout" in s for s in states)


def test_a_figure_shown_for_the_first_time_opens_a_new_comm_that_carries_its_data(monkeypatch):
    """The front-end model of a figure is born from its comm's opening message: on first
    display that message holds the drawn data, so no later update has to arrive first."""
    import ipywidgets.widgets.widget as widget_module

    two = WhatIf("Failover", partitions=2)
    view = FailoverView(two)
    two.add_consumer("A")
    opened: list[dict] = []
    real = widget_module.comm.create_comm

    def create_comm(**args):
        opened.append(args["data"]["state"])
        return real(**args)

    monkeypatch.setattr(widget_module.comm, "create_comm", create_comm)
    old_id = view.fig.model_id
    view.pin()._repr_mimebundle_()
    figures = [s for s in opened if "_widget_data" in s]
    assert len(figures) == 2 and view.fig.model_id != old_id  # the grid and the ring
    assert figures[0]["_widget_data"][0]["x"] == ["P0", "P1"]
    assert figures[0]["_widget_layout"]["title"]["text"] == view.fig.layout.title.text
    assert f"IPY_MODEL_{view.fig.model_id}" in view.get_state()["children"]
    view._repr_mimebundle_()  # shown again: the same comm, its state re-sent
    assert len([s for s in opened if "_widget_data" in s]) == 2
