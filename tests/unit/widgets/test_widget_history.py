"""Every view keeps the steps it drew: scrub back, pin with at()/show_step(), a static SVG."""

from __future__ import annotations

import threading
import urllib.parse

import pytest

from pulsarlab.widgets import (
    CursorView,
    Dashboard,
    FailoverView,
    FlowView,
    HashRangeView,
    HashRingView,
    RedeliveryTimeline,
    WhatIf,
)
from pulsarlab.widgets.history import History
from pulsarlab.widgets.static import html_to_lines

KEYS = [f"Order-{n}" for n in range(3459130, 3459142)]


@pytest.fixture
def split():
    whatif = WhatIf("Key_Shared", key_shared_use_consistent_hashing=False)
    view = HashRangeView(whatif, KEYS)
    for name in ("C1", "C2", "C3", "C4"):
        whatif.add_consumer(name)
    return whatif, view


def test_each_what_if_action_is_a_labelled_step(split):
    _whatif, view = split
    assert view.history.labels == [
        "start", "add consumer C1", "add consumer C2", "add consumer C3", "add consumer C4",
    ]
    assert view.step.index == 4
    assert view.history_bar.slider.max == 4 and view.history_bar.slider.value == 4
    assert "add consumer C4" in view.history_bar.label.value


def test_at_pins_the_picture_while_later_steps_are_recorded(split):
    whatif, view = split
    assert view.at(2) is view
    assert view.fig.layout.title.text.endswith("2 consumer(s)")
    assert len(view.fig.data[0].base) == 2
    whatif.add_consumer("C5")
    whatif.publish(["Order-1"])
    assert len(view.history) == 7 and view.history_bar.slider.max == 6
    assert view.step.index == 2 and view.fig.layout.title.text.endswith("2 consumer(s)")
    assert set(view.step_summary()["ranges"]) == {"C1", "C2"}
    assert set(view.summary()["ranges"]) == {"C1", "C2", "C3", "C4", "C5"}  # live state
    view.follow()
    assert view.fig.layout.title.text.endswith("5 consumer(s)")


def test_show_step_by_label_and_a_clear_error_for_an_unknown_one(split):
    _whatif, view = split
    view.show_step("add consumer C3")
    assert view.step.label == "add consumer C3"
    view.show_step("C2")  # a part of a label: the latest step containing it
    assert view.step.label == "add consumer C2"
    with pytest.raises(KeyError, match=r"no step labelled 'remove consumer C9'.*'start'"):
        view.show_step("remove consumer C9")
    with pytest.raises(IndexError, match=r"no step 12: this view has steps 0\.\.4"):
        view.at(12)


def test_scrubbing_the_slider_shows_the_step_and_the_end_follows_again(split):
    whatif, view = split
    view.history_bar.slider.value = 1
    assert view.pinned == 1 and view.fig.layout.title.text.endswith("1 consumer(s)")
    view.history_bar.back.click()
    assert view.step.index == 0 and view.history_bar.back.disabled
    view.history_bar.slider.value = 4
    assert view.pinned is None
    whatif.add_consumer("C5")
    assert view.step.index == 5 and view.fig.layout.title.text.endswith("5 consumer(s)")


def test_a_step_highlights_the_keys_it_moved_and_a_preview_stays_on_its_own_step(split):
    _whatif, view = split
    moved_by_c4 = view.step_summary()["last_moved"]
    assert moved_by_c4 and list(view.fig.data[3].hovertext) == [
        f"{k} moved to C4" for k in moved_by_c4
    ]
    would_move = view.preview("C5")
    assert view.step.label == "preview C5" and len(view.fig.data[2].x) == len(would_move) > 0
    assert len(view.fig.data[3].x) == 0  # a preview moves nothing
    view.show_step("add consumer C4")
    assert len(view.fig.data[2].x) == 0  # the later preview's markers are not on this step
    assert len(view.fig.data[3].x) == len(moved_by_c4)


def test_a_button_click_unpins_the_view(split):
    _whatif, view = split
    view.at(1)
    view.name_box.value = "C5"
    next(b for b in view.children[-2].children[0].children
         if getattr(b, "description", "") == "add consumer").click()
    assert view.pinned is None and view.step.label == "add consumer C5"


def test_the_display_carries_a_static_svg_and_a_short_text(split):
    _whatif, view = split
    view.at(3)
    bundle = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    svg = bundle["image/svg+xml"]
    assert svg.startswith("<svg") and svg.endswith("</svg>") and "<script" not in svg
    assert "step 3: add consumer C3" in svg and "3 consumer(s)" in svg
    assert "C3 [0, 16384]" in svg  # a bar's label, drawn in the picture
    assert "C4" not in svg
    # an untrusted JupyterLab shows only the html form: the same SVG as an <img> data URI
    html_form = bundle["text/html"]
    assert html_form.startswith('<img alt="&lt;HashRangeView step 3')
    encoded = html_form.split("data:image/svg+xml,", 1)[1].removesuffix('"/>')
    assert not set('"<&#') & set(encoded)  # what an HTML attribute or a URL would misread
    assert urllib.parse.unquote(encoded) == svg
    text = bundle["text/plain"]
    assert "children=" not in text and text.startswith("<HashRangeView step 3")
    assert "children=" not in repr(view)


def test_ring_outlines_the_arcs_that_changed_owner_and_names_a_looked_up_key():
    whatif = WhatIf("Key_Shared")
    view = HashRingView(whatif, [f"user-{i}" for i in range(60)])
    for name in ("C1", "C2", "C3"):
        whatif.add_consumer(name)
    arcs_before = list(view.arcs)
    assert all(a[2] != b[2] for a, b in zip(view.arcs, view.arcs[1:], strict=False))
    whatif.add_consumer("C4")
    assert view.changed and all(new == "C4" for *_, new in view.changed)
    assert sum(e - s + 1 for s, e, *_ in view.changed) == sum(
        e - s + 1 for s, e, owner in view.arcs if owner == "C4")
    changed_trace = view.fig.data[4]
    assert len(changed_trace.theta) == len(view.changed)
    view.show_step("add consumer C3")
    shown = view.step.state
    assert shown["arcs"] == arcs_before
    assert len(view.fig.data[4].theta) == len(shown["changed"]) > 0  # C3's own change
    view.follow()
    view.lookup_box.value = "user-7"
    owner = view.key_owners["user-7"]
    assert list(view.fig.data[6].text) == [f"user-7 → {owner}"]
    legend = [t.name for t in view.fig.data if t.meta == "legend"]
    assert legend == ["C1", "C2", "C3", "C4"]
    view.zoom("user-7", width=40)
    low, high = view.fig.layout.polar.sector
    assert high - low == pytest.approx(40)
    assert "user-7 → " in view.picture()


def test_timeline_at_an_earlier_step_draws_only_the_marks_it_had():
    whatif = WhatIf("Shared")
    view = RedeliveryTimeline(whatif)
    whatif.add_consumer("C1")
    whatif.publish("k")
    whatif.advance(1000)
    whatif.nack("C1")
    whatif.advance(500)
    marks_before_nack = view.history[3].state["extent"][0]
    view.show_step("publish k")
    assert view.step_summary()["marks"] == marks_before_nack
    drawn = sum(len(t.x) for t in view.fig.data if t.mode and "markers" in t.mode
                and t.name != "new in this step")
    assert drawn == marks_before_nack
    assert len(view.fig.data[3].x) == marks_before_nack  # all of them new in that step
    view.follow()
    in_flight_x = [x for x in view.fig.data[1].x if x == x]  # lanes run on to now (1.5 s)
    assert max(in_flight_x) == pytest.approx(1.5)


def test_failover_outlines_the_cells_a_step_changed():
    whatif = WhatIf("Failover", partitions=2)
    view = FailoverView(whatif)
    whatif.add_consumer("A")
    whatif.add_consumer("B")
    before = view.active
    whatif.remove_consumer(before[0])
    assert view.changed_cells
    assert len(view.fig.layout.shapes) == len(view.changed_cells)
    view.show_step("add consumer B")
    assert view.step_summary()["active"] == before


@pytest.mark.parametrize("make", [CursorView, FlowView, Dashboard, FailoverView,
                                  RedeliveryTimeline, HashRingView, HashRangeView])
def test_every_view_has_history_and_a_picture(make):
    whatif = WhatIf("Key_Shared", key_shared_use_consistent_hashing=False)
    view = make(whatif)
    whatif.add_consumer("C1")
    whatif.publish(["a", "b"])
    whatif.receive("C1")
    assert view.history.labels[-3:] == ["add consumer C1", "publish a, b", "C1 receives"]
    view.at(-2)
    assert view.step.label == "publish a, b"
    svg = view.picture()
    assert svg.startswith("<svg") and "step " in svg
    assert "children=" not in view._repr_mimebundle_()["text/plain"]


def test_history_keeps_the_last_steps_with_their_numbers():
    history = History(limit=3)
    for i in range(5):
        history.record(f"s{i}", None, {})
    assert history.labels == ["s2", "s3", "s4"] and len(history) == 5
    assert history[-1].index == 4 and history[2].label == "s2"
    with pytest.raises(IndexError, match=r"steps 2\.\.4"):
        history[1]


def test_html_to_lines_reads_a_table_row_by_row():
    assert html_to_lines(
        "<b>x</b> &amp; y<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr>"
        "</table><p>done</p>"
    ) == ["x & y", "a b", "1 2", "done"]


def test_ring_arcs_give_every_hash_the_owner_the_brokers_selector_gives():
    whatif = WhatIf("Key_Shared")
    view = HashRingView(whatif, ["a"])
    for name in ("C1", "C2", "C3", "C4"):
        whatif.add_consumer(name)
    selector = whatif.selector()
    step = 2**31 // 5003
    for h in range(0, 2**31, step):
        assert view.owner_of_hash(h) == selector.select(h).consumer_name
    assert view.arcs[0][0] == 0 and view.arcs[-1][1] == 2**31 - 1


@pytest.mark.parametrize("make", [CursorView, FlowView, Dashboard, FailoverView,
                                  RedeliveryTimeline, HashRingView, HashRangeView])
def test_a_still_pictures_one_step_and_leaves_the_live_view_alone(make):
    whatif = WhatIf("Key_Shared", key_shared_use_consistent_hashing=False)
    view = make(whatif)
    whatif.add_consumer("C1")
    whatif.add_consumer("C2")
    whatif.publish(["a", "b"])
    view.pin()
    shown = view.describe()
    figure = view.figures()[0] if view.figures() else None
    title = figure.layout.title.text if figure is not None else None
    still = view.still("add consumer C1")
    assert repr(still).startswith(f"<picture of {type(view).__name__} step ")
    assert "add consumer C1" in repr(still)
    bundle = still._repr_mimebundle_()
    assert bundle["image/svg+xml"].startswith("<svg") and "add consumer C1" in bundle[
        "image/svg+xml"]
    assert "application/vnd.jupyter.widget-view+json" not in bundle
    assert view.describe() == shown
    if figure is not None:
        assert view.figures()[0] is figure and figure.layout.title.text == title


def test_pin_keeps_the_current_step():
    whatif = WhatIf("Key_Shared", key_shared_use_consistent_hashing=False)
    view = HashRangeView(whatif, KEYS)
    whatif.add_consumer("C1")
    assert view.pin() is view and view.pinned == 1
    whatif.add_consumer("C2")
    assert view.step.label == "add consumer C1"
    still = view.still()
    assert "add consumer C2" in repr(still) and "2 consumer(s)" in repr(still)


def test_pin_during_a_refresh_on_another_thread_pins_the_step_that_refresh_records():
    """A live binding's thread reads a change into the views and then records its step;
    a cell that saw the change in a view's model and pins must get that step (09's
    timeline was pinned one step before the ack its cell had waited for)."""
    whatif = WhatIf("Key_Shared", key_shared_use_consistent_hashing=False)
    view = HashRangeView(whatif, KEYS)
    whatif.add_consumer("C1")
    stepper = view.stepper
    read, go = threading.Event(), threading.Event()
    update = view._update

    def slow_update(snapshot, events):  # the binding's thread, between reading and recording
        update(snapshot, events)
        read.set()
        assert go.wait(10)

    class Handoff:  # lets the refresh go on once the pinning thread enters the lock
        def __init__(self, lock):
            self.lock = lock

        def __enter__(self):
            if threading.current_thread() is pinning:
                go.set()
            return self.lock.__enter__()

        def __exit__(self, *exc):
            return self.lock.__exit__(*exc)

    view._update = slow_update
    stepper.lock = Handoff(stepper.lock)
    refreshing = threading.Thread(target=whatif.add_consumer, args=("C2",))
    pinning = threading.Thread(target=view.pin)
    refreshing.start()
    assert read.wait(10)
    pinning.start()
    for thread in (refreshing, pinning):
        thread.join(10)
    assert not refreshing.is_alive() and not pinning.is_alive()
    assert view.pinned == 2 and view.step.label == "add consumer C2"


def test_a_still_of_a_later_step_leaves_the_displayed_widgets_untouched():
    whatif = WhatIf("Key_Shared")
    view = HashRingView(whatif, ["a", "b"])
    whatif.add_consumer("C1")
    view.pin()
    whatif.add_consumer("C2")
    pinned, traces, table = view.picture(), len(view.fig.data), view.table.value
    sent: list[str] = []
    for name in ("_send_addTraces_msg", "_send_restyle_msg", "_send_relayout_msg",
                 "_send_update_msg", "_send_animate_msg"):  # what would reach a browser
        setattr(view.fig, name, lambda *args, name=name, **kwargs: sent.append(name))
    assert "C2" in repr(view.still("add consumer C2"))
    assert not sent and len(view.fig.data) == traces and view.table.value == table
    assert view.picture() == pinned and view.step.label == "add consumer C1"
    assert view.history_bar.slider.value == 1
    view.follow()  # draws C2 into the real figure, with its own legend entry
    assert [t.name for t in view.fig.data if t.meta == "legend"] == ["C1", "C2"]


def test_a_step_is_an_immutable_state_drawn_without_touching_the_view(split):
    _whatif, view = split
    state = view.step.state
    assert state.ranges is state["ranges"]
    with pytest.raises(AttributeError, match="read-only"):
        state.ranges = {}
    latest = {n: list(r) for n, r in view.ranges.items()}
    view.at(1)
    assert view.fig.layout.title.text.endswith("1 consumer(s)")
    assert view.ranges == latest  # showing step 1 swapped nothing into the view
    assert set(view.history[1].state.ranges) == {"C1"}
    view.ranges["C9"] = [(0, 1)]  # the view's own state is not the step's
    assert "C9" not in view.history[4].state.ranges
