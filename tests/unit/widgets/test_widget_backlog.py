"""BacklogView: lag samples from stats snapshots (pulsarlab's or a cluster's), live and static."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pulsarlab.widgets.backlog import BacklogView, LagHistory, lag_sample
from pulsarlab.widgets.source import EventLog, Snapshot

FIXTURES = Path(__file__).parent / "fixtures" / "cluster"


def load(name):
    return json.loads((FIXTURES / name).read_text())


def test_a_sample_sums_the_partitions():
    stats = load("partitioned-stats-3.3-failover.json")["partitions"]
    sub = next(iter(next(iter(stats.values()))["subscriptions"]))
    sample = lag_sample(Snapshot(time_ms=5, topics=stats), sub)
    assert sample.time_ms == 5
    assert sample.backlog == sum(p["subscriptions"][sub]["msgBacklog"] for p in stats.values())
    assert sample.rate_in == pytest.approx(sum(p["msgRateIn"] for p in stats.values()))
    assert lag_sample(Snapshot(time_ms=5, topics=stats), "nope") is None


def test_history_keeps_new_snapshots_only_and_is_bounded():
    stats = load("stats-3.3-key-shared-stuck.json")
    history = LagHistory("orders-ks", max_samples=2)
    for t in (1000, 1000, 2000, 3000):
        history.add(Snapshot(time_ms=t, topics={"t": stats}))
    assert [s.time_ms for s in history.samples] == [2000, 3000]
    assert history.series("backlog") == [11, 11]
    assert history.series("rate_redeliver") == [4.2, 4.2]
    assert history.rows()[0]["unacked"] == 11
    with pytest.raises(ValueError, match="at least 1"):
        LagHistory("s", max_samples=0)


class FakeSource:
    """A polling source: what ClusterSource offers a view."""

    subscription = "payments"
    running = True
    simulated = False
    start_ms = 0

    def __init__(self):
        self.events = EventLog()
        self.current = None
        self.callbacks = []

    def snapshot(self):
        return self.current

    def on_change(self, callback):
        self.callbacks.append(callback)

    def push(self, time_ms, stats):
        self.current = Snapshot(time_ms=time_ms, topics={"t": stats})
        for callback in self.callbacks:
            callback()


def _draining():
    stats = load("stats-4.0-key-shared-draining.json")
    slower = json.loads(json.dumps(stats))
    slower["subscriptions"]["payments"]["msgBacklog"] = 9
    return stats, slower


def _two_polls():
    """A view over a source that polled twice (backlog 5, then 9)."""
    stats, slower = _draining()
    source = FakeSource()
    view = BacklogView(source)
    source.push(1733913620000, stats)
    source.push(1733913622000, slower)
    return view, source, slower


def test_view_follows_the_source_and_draws_a_static_table():
    stats, slower = _draining()
    source = FakeSource()
    view = BacklogView(source)
    figure = view.fig
    source.push(1733913620000, stats)
    source.push(1733913622000, slower)
    assert list(figure.data[0].y) == [5, 9]  # backlog
    assert list(figure.data[3].y) == [31.5, 31.5]  # rate out
    table = view.static_html()
    assert "<td>10:40:22</td><td>9</td>" in table and "lag of payments" in table
    assert [step.label for step in view.history] == ["10:40:20", "10:40:22"]
    assert view.step_summary()["last"]["backlog"] == 9


def test_a_pinned_step_shows_that_steps_numbers_while_polls_go_on():
    view, source, slower = _two_polls()
    view.at(0)
    source.push(1733913624000, slower)  # recorded, but the picture stays on step 0
    assert len(view.history) == 3 and view.pinned == 0
    assert list(view.fig.data[0].y) == [5]
    assert "<td>10:40:20</td><td>5</td>" in view.table.value
    assert "10:40:22" not in view.table.value
    assert view.step_summary()["samples"] == 1
    assert view.summary()["samples"] == 3  # the view's own state is the latest
    view.follow()
    assert list(view.fig.data[0].y) == [5, 9, 9]


def test_the_mimebundle_carries_the_picture_of_the_step_shown():
    view, _, _ = _two_polls()
    bundle = view.at(0)._repr_mimebundle_()
    svg = bundle["image/svg+xml"]
    assert "<svg" in svg and "step 0: 10:40:20" in svg and "lag of payments" in svg
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == "<BacklogView step 0 ('10:40:20'): lag of payments>"
    still = view.still(1)._repr_mimebundle_()
    assert "step 1: 10:40:22" in still["image/svg+xml"]
