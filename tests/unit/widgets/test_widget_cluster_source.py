"""Cluster mode: views drawn from recorded Pulsar 3.3 / 4.0 stats and internalStats JSON.

The fixtures in ``fixtures/cluster`` have the field names and shapes of Pulsar's admin REST
API (``topics stats``, ``stats-internal``, ``partitioned-stats --per-partition``). A fake
admin serves them by topic, with no sockets and a hand-moved wall clock.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ipywidgets
import pytest

from pulsarlab.widgets import (
    CursorView,
    FailoverView,
    FlowView,
    HashRangeView,
    HashRingView,
    RedeliveryTimeline,
    WhatIfControls,
)
from pulsarlab.widgets.cluster_source import (
    EVENT_ONLY_NOTE,
    ClusterSource,
    open_view,
    whatif_from_snapshot,
)
from pulsarlab.widgets.history import HistoryBar
from pulsarlab.widgets.source import Snapshot

FIXTURES = Path(__file__).parent / "fixtures" / "cluster"
TOPIC = "persistent://public/default/orders"


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


class RecordedAdmin:
    """``RestAdmin.topics`` reading calls answered from recorded JSON (or failing)."""

    def __init__(self, stats: dict[str, Any], internal: dict[str, Any] | None = None,
                 partitioned: dict[str, Any] | None = None) -> None:
        self.topics = self
        self.stats, self.internal, self.partitioned = stats, internal or {}, partitioned
        self.failure: Exception | None = None

    def _check(self) -> None:
        if self.failure is not None:
            raise self.failure

    def get_partitioned_topic_metadata(self, topic: str) -> dict[str, int]:
        self._check()
        return {"partitions": len(self.partitioned["partitions"]) if self.partitioned else 0}

    def get_stats(self, topic: str) -> dict[str, Any]:
        self._check()
        return self.stats

    def get_partitioned_stats(self, topic: str, per_partition: bool = True) -> dict[str, Any]:
        self._check()
        assert self.partitioned is not None and per_partition
        return self.partitioned

    def get_internal_stats(self, topic: str) -> dict[str, Any]:
        self._check()
        return self.internal


class Clock:
    def __init__(self) -> None:
        self.ms = 1_718_097_190_000  # 2024-06-11 09:13:10 UTC

    def __call__(self) -> int:
        return self.ms


def source_of(admin: RecordedAdmin, subscription: str, topic: str = TOPIC,
              clock: Clock | None = None) -> ClusterSource:
    source = ClusterSource(admin, topic, subscription, wall_ms=clock or Clock())
    assert source.poll()
    return source


def stuck_33() -> RecordedAdmin:
    return RecordedAdmin(load("stats-3.3-key-shared-stuck.json"), load("internal-stats-3.3.json"))


def test_hash_ranges_from_33_strings() -> None:
    view = HashRangeView(source_of(stuck_33(), "orders-ks"))
    assert view.mode == "AUTO_SPLIT"
    assert view.ranges == {"c-1": [(32769, 65536)], "c-2": [(16385, 32768)],
                           "c-3": [(0, 16384)]}
    assert view.frames == 1


def test_hash_ranges_from_40_arrays() -> None:
    admin = RecordedAdmin(load("stats-4.0-key-shared-draining.json"),
                          load("internal-stats-4.0.json"))
    view = HashRangeView(source_of(admin, "payments", "payments"))
    assert view.ranges["c1"] == [(2960, 5968), (22258, 43033), (49261, 54464), (55155, 61273)]
    assert len(view.ranges["c2"]) == 5


def test_cursor_draws_a_clusters_ack_holes() -> None:
    view = CursorView(source_of(stuck_33(), "orders-ks"))
    assert view.mark_delete == (12, 41)
    assert view.read_position == (12, 58)
    assert view.holes == [((12, 43), (12, 45)), ((12, 47), (12, 50))]
    assert len(view.positions) == 58  # the open ledger's currentLedgerEntries
    acked_in_holes = [p for p, s in zip(view.positions, view.states, strict=True) if s == 1]
    assert acked_in_holes == [(12, 44), (12, 45), (12, 48), (12, 49), (12, 50)]
    assert view.backlog == 11


def test_cursor_on_a_cluster_calls_read_entries_read_unacked_and_gives_the_stats_counts() -> None:
    """A cluster reports no pending acks: a read, unacknowledged entry may be delivered or
    waiting in the replay set, so the picture must not call it "delivered" (tutorial 17's
    drew 14 "delivered, unacked" where its stats said unacked 10 and 4 in replay)."""
    view = CursorView(source_of(stuck_33(), "orders-ks"))
    read_unacked = [p for p, s in zip(view.positions, view.states, strict=True) if s == 3]
    assert len(read_unacked) == 11  # 12:42..12:57 less the 5 acked in holes
    assert view.fig.data[-3].name == "read, unacked (delivered or in replay)"
    assert "delivered" not in " ".join(t.name for t in view.fig.data[-6:] if t.name != (
        "read, unacked (delivered or in replay)"))
    assert view.fig.data[0].hovertext[0][42] == "12:42: read, unacked (delivered or in replay)"
    assert ("read, unacked <b>11</b> (the subscription's stats: unacked <b>11</b>, in replay "
            "<b>3</b>)") in view.table.value
    assert "awaiting redelivery" not in view.table.value
    # a what-if knows its pending acks: the usual words
    whatif = whatif_from_snapshot(view.source.snapshot(), "orders-ks")
    copied = CursorView(whatif)
    assert copied.fig.data[-3].name == "delivered, unacked"
    assert "awaiting redelivery" in copied.table.value


def test_cursor_over_a_closed_and_an_open_ledger_40() -> None:
    admin = RecordedAdmin(load("stats-4.0-key-shared-draining.json"),
                          load("internal-stats-4.0.json"))
    view = CursorView(source_of(admin, "payments", "payments"))
    assert view.positions[0] == (27, 0) and view.positions[-1] == (31, 7)
    assert len(view.positions) == 20
    assert view.holes == [((31, 3), (31, 4))]


def test_flow_shows_the_blocked_consumer_and_the_late_joiner() -> None:
    view = FlowView(source_of(stuck_33(), "orders-ks"))
    assert view.current["c-1"] == {"permits": 0, "unacked": 10, "blocked": True}
    assert view.waiting == {"c-3": (12, 58)}
    assert view.mark_delete == (12, 41)


def test_failover_active_consumer_per_partition() -> None:
    admin = RecordedAdmin({}, {}, load("partitioned-stats-3.3-failover.json"))
    view = FailoverView(source_of(admin, "jobs-fo", "jobs"))
    assert view.active == {0: "worker-1", 1: "worker-2"}
    assert sorted(view.consumers) == ["worker-1", "worker-2"]


def test_stale_label_and_back_off() -> None:
    clock = Clock()
    admin = stuck_33()
    source = source_of(admin, "orders-ks", clock=clock)
    assert source.status_text() == "cluster stats fetched 09:13:10 UTC (every 2 s)"
    assert source.next_delay() == 2
    admin.failure = OSError("Connection refused")
    clock.ms += 2000
    assert not source.poll()
    assert source.snapshot() is not None  # the last good picture stays
    assert source.status_text() == ("stale since 09:13:12 UTC: Connection refused; last good "
                                    "stats 09:13:10 UTC (retrying every 4 s)")
    assert "#c62828" in source.label.value
    delays = []
    for _ in range(6):
        clock.ms += 1000
        source.poll()
        delays.append(source.next_delay())
    assert delays == [8, 16, 32, 60, 60, 60]
    assert "stale since 09:13:12 UTC" in source.status_text()
    admin.failure = None
    assert source.poll()
    assert source.next_delay() == 2 and source.stale_since_ms is None


class FakeConnection:
    def __init__(self, admin: RecordedAdmin) -> None:
        self.admin = admin
        self.sources: list[ClusterSource] = []

    def live_source(self, topic: str, subscription: str) -> ClusterSource:
        source = ClusterSource(self.admin, topic, subscription, wall_ms=Clock())
        self.sources.append(source)
        return source


def test_timeline_says_the_cluster_reports_no_history() -> None:
    connection = FakeConnection(stuck_33())
    view = open_view(RedeliveryTimeline, connection, "orders", "orders-ks")
    try:
        notes = [c.value for c in view.children if hasattr(c, "value")
                 and isinstance(c.value, str)]
        assert any("no per-message history" in n for n in notes)
        assert view.cluster_note == EVENT_ONLY_NOTE
    finally:
        view.source.stop()


def test_what_if_copies_consumers_and_ranges() -> None:
    source = source_of(stuck_33(), "orders-ks")
    whatif = whatif_from_snapshot(source.snapshot(), "orders-ks")
    assert whatif.consumer_names == ["c-1", "c-2", "c-3"]
    copied = HashRangeView(whatif)
    assert copied.ranges == HashRangeView(source).ranges  # same join order, same splits
    whatif.add_consumer("c-4")  # the operator's experiment, on the copy only
    assert len(HashRangeView(whatif).ranges) == 4


def test_what_if_from_40_consistent_hashing() -> None:
    admin = RecordedAdmin(load("stats-4.0-key-shared-draining.json"),
                          load("internal-stats-4.0.json"))
    source = source_of(admin, "payments", "payments")
    whatif = whatif_from_snapshot(source.snapshot(), "payments")
    assert whatif.consumer_names == ["c1", "c2"]
    assert whatif.settings.key_shared_use_consistent_hashing is True


@pytest.fixture
def copy_of():
    """``copy_of(ViewClass)``: a cluster view of a stuck 3.3 subscription, polled once,
    and the what-if copy its button opened."""
    views = []

    def open_and_copy(view_class: type) -> tuple[Any, Any]:
        view = open_view(view_class, FakeConnection(stuck_33()), "orders", "orders-ks")
        views.append(view)
        view.source.stop()
        view.source.poll()
        view.what_if_button.click()
        (copied,) = view.what_if_output.children
        return view, copied

    yield open_and_copy
    for view in views:
        view.source.stop()


def test_what_if_joins_consumers_by_connection_instant() -> None:
    stats = {"subscriptions": {"s": {"type": "Key_Shared", "keySharedMode": "AUTO_SPLIT",
                                     "consumers": [
        {"consumerName": "late", "connectedSince": "2026-11-27T05:00:05.12Z"},
        {"consumerName": "early", "connectedSince": "2026-11-27T05:00:05.1Z"},
        {"consumerName": "first", "connectedSince": "2026-11-27T05:00:05Z"},
    ]}}}
    snapshot = Snapshot(time_ms=0, topics={"persistent://public/default/t": stats})
    assert whatif_from_snapshot(snapshot, "s").consumer_names == ["first", "early", "late"]


def test_what_if_button_opens_a_copy(copy_of) -> None:
    view, copied = copy_of(HashRangeView)
    assert copied.source.simulated and copied.ranges == view.ranges
    buttons = [w.description for w in descendants(copied) if isinstance(w, ipywidgets.Button)]
    assert buttons.count("add consumer") == 1  # the copy's own control block, once


def test_a_what_if_copy_shows_one_control_block_and_one_step_bar(copy_of) -> None:
    _view, copied = copy_of(FlowView)
    inside = descendants(copied)
    assert sum(isinstance(w, WhatIfControls) for w in inside) == 1
    assert sum(isinstance(w, HistoryBar) for w in inside) == 1
    queue_traces = [t for t in copied.fig.data if t.name.endswith(" queue")]
    assert queue_traces and all("markers" in t.mode for t in queue_traces)
    assert all(len(t.x) == 1 for t in queue_traces)  # the first sample shows, as a point


def descendants(widget: ipywidgets.Widget) -> list[ipywidgets.Widget]:
    out = [widget]
    for child in getattr(widget, "children", ()):
        out += descendants(child)
    return out


def test_unknown_subscription_is_refused() -> None:
    source = source_of(stuck_33(), "orders-ks")
    with pytest.raises(ValueError, match="no subscription 'nope'"):
        whatif_from_snapshot(source.snapshot(), "nope")


def test_waiting_note_goes_once_the_first_stats_arrive() -> None:
    admin = stuck_33()
    admin.failure = OSError("Connection refused")
    source = ClusterSource(admin, TOPIC, "orders-ks", wall_ms=Clock())
    assert not source.poll()
    view = CursorView(source)
    assert view.message.value == "waiting for the topic's first stats…"
    admin.failure = None
    assert source.poll()
    view.refresh()
    assert view.message.value == ""


def test_a_ring_told_40_copies_into_a_40_core() -> None:
    admin = RecordedAdmin(load("stats-4.0-key-shared-draining.json"),
                          load("internal-stats-4.0.json"))
    view = open_view(HashRingView, FakeConnection(admin), "payments", "payments",
                     pulsar_version="4.0")
    try:
        view.source.stop()
        view.source.poll()
        assert view.consumers == ["c1", "c2"]
        assert view.key_space == (1, 65535)  # the stats alone would have meant 3.3's ring
        view.what_if_button.click()
        (copied,) = view.what_if_output.children
        assert copied.source.settings.pulsar_version == "4.0"
        assert copied.selector is copied.source.selector()  # the core's own 4.0 ring
        assert copied.key_owners == view.key_owners
    finally:
        view.source.stop()
