"""CompareView: one scenario on Pulsar 3.3 and 4.0, per-key order and the first reorder."""

from __future__ import annotations

import re

import pytest

from pulsarlab.broker.events import Dispatched
from pulsarlab.widgets import WhatIf
from pulsarlab.widgets.compare import CompareView, KeyOrder, find_moving_key


def make_core(version: str, **settings) -> WhatIf:
    return WhatIf("Key_Shared", pulsar_version=version, **settings)


def _replay_before_join_mark(key: str) -> list[tuple]:
    return [
        ("join", "c1", {"receiver_queue_size": 1}),
        ("join", "c2"),
        ("publish", [key, key]),  # the first goes to c1, the second waits in replay
        ("join", "c3"),  # takes the key; its join mark is past the waiting message
        ("ack", "c1"),
        ("publish", [key]),
        ("ack", "c3"),
    ]


def test_3_3_reorders_a_replayed_message_and_4_0_holds_it_until_the_ack():
    key = find_moving_key("c1", "c3", ["c1", "c2"])
    view = CompareView(_replay_before_join_mark(key))
    assert type(view.cores["4.0"].dispatcher()).__name__ == "KeySharedDrainingDispatcher"
    first = view.first_out_of_order("3.3")
    assert first is not None and first.consumer == "c3" and first.position == (0, 1)
    assert first.held_elsewhere == (("c1", (0, 0)),)
    assert first.step == 3  # delivered as c3 joined
    assert view.first_out_of_order("4.0") is None
    # 4.0 hands the key over only after c1's ack (step 4), then keeps it on c3.
    assert view.key_sequence("4.0", key) == [("c1", (0, 0)), ("c3", (0, 1)), ("c3", (0, 2))]
    assert [d.step for d in view.deliveries("4.0")] == [2, 4, 5]
    assert view.key_sequence("3.3", key) == [("c1", (0, 0)), ("c3", (0, 1)), ("c3", (0, 2))]


def test_figure_marks_the_first_out_of_order_delivery_per_version():
    key = find_moving_key("c1", "c3", ["c1", "c2"], make_core=make_core)
    view = CompareView(_replay_before_join_mark(key), make_core=make_core)
    marks = [t for t in view.fig.data if t.name == "first out of order"]
    assert len(marks) == 1 and list(marks[0].y) == [key]
    assert [a.text for a in view.fig.layout.annotations] == ["Pulsar 3.3", "Pulsar 4.0"]
    consumers = {t.name for t in view.fig.data if t.mode == "markers+text"}
    assert consumers == {"c1", "c3"}
    text = view._repr_mimebundle_()["text/plain"]
    assert "Pulsar 3.3: 3 deliveries, out of order: 0:1" in text
    assert "Pulsar 4.0: 3 deliveries, in order" in text



def test_the_view_carries_a_static_picture_of_its_chart_and_summary():
    """Before a kernel runs (and on GitHub) the view is its picture, like every other view."""
    key = find_moving_key("c1", "c3", ["c1", "c2"], make_core=make_core)
    view = CompareView(_replay_before_join_mark(key), make_core=make_core)
    bundle = view._repr_mimebundle_()
    svg = bundle["image/svg+xml"]
    assert svg.startswith("<svg") and bundle["text/html"].startswith("<img ")
    for text in ("Pulsar 3.3", "Pulsar 4.0", key, "0:1", "first out of order",
                 "first out-of-order delivery"):
        assert text in svg, text
    mark = next(t for t in view.fig.data if t.name == "first out of order")
    assert mark.marker.symbol == "circle-open"  # the consumer's dot shows through it


def test_the_picture_puts_a_step_at_one_x_in_both_versions_panels():
    """The panels share their x axis (as plotly draws them live): 3.3's last delivery at
    step 6 widens 4.0's panel too, so 4.0's step 4 is not drawn where 3.3's step 6 is."""
    key = find_moving_key("c1", "c3", ["c1", "c2"], make_core=make_core)
    view = CompareView(_replay_before_join_mark(key), make_core=make_core)
    ticks = re.findall(r"<text x='([\d.]+)' y='([\d.]+)' font-size='10' "
                       r"text-anchor='middle'[^>]*>(\d+)</text>", view.picture())
    rows: dict[str, list[tuple[str, str]]] = {}
    for x, y, label in ticks:
        rows.setdefault(y, []).append((label, x))
    assert len(rows) == 2, rows  # one row of step ticks under each panel
    top, bottom = rows.values()
    assert top == bottom and [label for label, _ in top] == ["2", "3", "4", "5", "6"]


def test_4_0_look_ahead_limit_holds_a_fast_consumer_that_3_3_serves():
    """PIP-379's look-ahead limit: a slow consumer's backlog in replay stops reads for all."""
    def make(version):
        return make_core(version, key_shared_look_ahead_msg_in_replay_threshold_per_consumer=2)

    s = find_moving_key("slow", None, ["slow", "fast"], make_core=make)
    f = find_moving_key("fast", None, ["slow", "fast"], make_core=make)
    view = CompareView(
        [
            ("join", "slow", {"receiver_queue_size": 1}),
            ("join", "fast"),
            ("publish", [s] * 6),
            ("publish", [f] * 2),
            ("ack", "slow"), ("ack", "slow"), ("ack", "slow"),
        ],
        make_core=make,
    )
    fast_33 = [d.step for d in view.deliveries("3.3") if d.consumer == "fast"]
    fast_40 = [d.step for d in view.deliveries("4.0") if d.consumer == "fast"]
    assert fast_33[0] == 3  # 3.3 reads past the slow consumer's replay backlog at once
    assert fast_40[0] > 3  # 4.0 stops at the limit until the slow consumer catches up


def test_bad_steps_are_reported_per_core_and_the_scenario_goes_on():
    view = CompareView(
        [("join", "c1"), ("leave", "nobody"), ("publish", ["k"])], make_core=make_core
    )
    assert all(len(errors) == 1 and "nobody" in errors[0] for errors in view.errors.values())
    assert all(len(view.deliveries(v)) == 1 for v in view.versions)
    with pytest.raises(ValueError, match="unknown step"):
        CompareView([("dance", "c1")], make_core=make_core)


def test_key_order_counts_a_message_not_yet_delivered_as_overtaken():
    order = KeyOrder({(0, 0): "k", (0, 1): "k"})
    order.feed(0, [Dispatched(time_ms=0, topic="t", consumer="c", entries=[[0, 1, 0]])])
    first = order.first_out_of_order
    assert first is not None and first.not_yet_delivered == ((0, 0),)


def test_whatif_passes_pulsar_version_through():
    """``WhatIf(..., pulsar_version=...)`` is a broker setting like any other."""
    core = WhatIf("Key_Shared", pulsar_version="4.0")
    core.add_consumer("c1")
    assert core.snapshot().settings["pulsar_version"] == "4.0"
    stats = core.snapshot().topics[core.topic]["subscriptions"][core.subscription]
    assert stats["consumers"][0]["keyHashRangeArrays"] == [[1, 65535]]
