"""StatsView: draw a REAL cluster's ``pulsar-admin topics stats`` output.

Paste (or load) the JSON a Pulsar broker prints and see what pulsarlab's live views show:
each consumer's key hash ranges on the key-space line, its permits and unacked messages,
and the backlog of every subscription. Both range forms are read — 3.x ``keyHashRanges``
strings (``"[0, 16384]"``) and 4.0 ``keyHashRangeArrays`` pairs — as are 3.x's
``consumersAfterMarkDeletePosition`` (recently joined consumers) and 4.0's draining hashes.
Nothing here talks to a broker: the view's source is :class:`RecordedStats`, one dict at a
time, and :meth:`StatsView.update` loads the next. Otherwise it is a view like the others:
each dict it drew is a step (:mod:`~.stepper`), the slider under the plot scrubs back,
``at(n)`` / ``show_step(label)`` / ``pin()`` hold one, and ``still(n)`` is a picture of one.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .base import View
from .pulsar_stats import (
    SLOT_SPACE,
    consumer_key_hash_ranges,
    key_hash_space,
    subscription_key_hash_ranges,
)
from .source import BrokerEvent, EventLog, Palette, Snapshot

__all__ = ["RecordedStats", "StatsView"]


class RecordedStats:
    """A static source: one recorded ``topics stats`` dict at a time, no broker behind it.

    :meth:`load` makes another dict the current one (labelled, e.g. ``"after the
    rebalance"``) and tells the views, which record it as a step."""

    simulated = False
    topic = "recorded topics stats"
    start_ms = 0

    def __init__(self, subscription: str | None = None) -> None:
        self.subscription = subscription or ""
        self.events = EventLog()
        self.palette = Palette()
        self.last_action: str | None = None
        self._stats: dict[str, Any] | None = None
        self._callbacks: list[Callable[[], None]] = []

    def load(self, stats: Mapping[str, Any] | str, label: str) -> None:
        """Make ``stats`` (a dict or its JSON text) the current dict, labelled ``label``."""
        self._stats = json.loads(stats) if isinstance(stats, str) else dict(stats)
        self.last_action = label
        for callback in list(self._callbacks):
            callback()

    def snapshot(self) -> Snapshot | None:
        if self._stats is None:
            return None
        return Snapshot(time_ms=0, topics={self.topic: self._stats})

    def on_change(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)


class StatsView(View):
    """A recorded ``topics stats`` dict: ranges, consumers and backlog."""

    _history_fields = ("stats", "subscription_name", "ranges", "space", "version")

    def __init__(self, stats: Mapping[str, Any] | str, subscription: str | None = None, *,
                 label: str = "loaded") -> None:
        super().__init__(RecordedStats(subscription))
        self.palette = self.source.palette
        self.subscription_name: str | None = None
        self.stats: dict[str, Any] = {}
        self.ranges: dict[str, list[tuple[int, int]]] = {}
        self.space = SLOT_SPACE
        self.version: str | None = None
        self._wanted = subscription
        figure = make_subplots(rows=2, cols=1, row_heights=[0.45, 0.55], vertical_spacing=0.25,
                               subplot_titles=("key hash ranges", "backlog per subscription"))
        figure.add_trace(go.Bar(name="ranges", orientation="h", hoverinfo="text",
                                showlegend=False, textposition="inside"), row=1, col=1)
        figure.add_trace(go.Bar(name="backlog", hoverinfo="x+y", showlegend=False,
                                marker={"color": "#ef6c00"}), row=2, col=1)
        figure.update_layout(height=420, margin={"l": 80, "r": 50, "t": 50, "b": 40})
        self.fig = go.FigureWidget(figure)
        self.table = ipywidgets.HTML()
        self._bind([self.fig, self.table])
        self.source.load(stats, label)

    def update(self, stats: Mapping[str, Any] | str, label: str = "update") -> None:
        """Read a new stats dict (or its JSON text) and keep it as a step labelled
        ``label``; it is drawn unless the view is pinned to an earlier step."""
        self.source.load(stats, label)

    def _update(self, snapshot: Snapshot, events: list[BrokerEvent]) -> None:
        """Make the snapshot's dict the view's, and what it says the view's numbers."""
        self.stats = dict(snapshot.topics[self.source.topic])
        subs: dict[str, Any] = self.stats.get("subscriptions") or {}
        name = self._wanted if self._wanted in subs else next(
            (n for n, s in subs.items() if s.get("type") == "Key_Shared"), next(iter(subs), None)
        )
        self.subscription_name = name
        sub = subs.get(name) or {}
        self.ranges = subscription_key_hash_ranges(sub)
        self.space = key_hash_space(self.ranges)
        consumers = sub.get("consumers") or []
        if any(c.get("keyHashRangeArrays") for c in consumers):
            self.version = "4.x"
        elif any(c.get("keyHashRanges") for c in consumers):
            self.version = "3.x"
        else:
            self.version = None

    def summary(self, state: Any = None) -> dict[str, Any]:
        st = self if state is None else state
        subs: dict[str, Any] = st.stats.get("subscriptions") or {}
        sub = subs.get(st.subscription_name) or {}
        return {
            "subscription": st.subscription_name,
            "type": sub.get("type"),
            "key_shared_mode": sub.get("keySharedMode"),
            "version": st.version,
            "space": st.space,
            "ranges": {n: list(r) for n, r in st.ranges.items()},
            "backlog": {n: int(s.get("msgBacklog") or 0) for n, s in subs.items()},
            "consumers": [str(c.get("consumerName")) for c in sub.get("consumers") or ()],
            "recently_joined": dict(sub.get("consumersAfterMarkDeletePosition") or {}),
            "draining": {
                str(c.get("consumerName")): int(c.get("drainingHashesCount") or 0)
                for c in sub.get("consumers") or () if "drainingHashesCount" in c
            },
        }

    def draw(self, st: Any) -> None:
        subs: dict[str, Any] = st.stats.get("subscriptions") or {}
        bars = sorted((s, e, n) for n, rs in st.ranges.items() for s, e in rs)
        with self.fig.batch_update():
            ranges, backlog = self.fig.data
            ranges.base = [b[0] for b in bars]
            ranges.x = [b[1] - b[0] + 1 for b in bars]
            ranges.y = ["ranges"] * len(bars)
            ranges.text = [b[2] for b in bars]
            ranges.hovertext = [f"{b[2]}: [{b[0]}, {b[1]}]" for b in bars]
            ranges.marker.color = [self.palette.color(b[2]) for b in bars]
            backlog.x = list(subs)
            backlog.y = [int(s.get("msgBacklog") or 0) for s in subs.values()]
            self.fig.layout.xaxis.range = [0, st.space]
            self.fig.layout.title = {
                "text": f"{st.subscription_name or 'no subscription'} "
                        f"({st.version or 'no key hash ranges'})",
                "font": {"size": 14},
            }
        self.table.value = self._table_html(st, subs)

    def _table_html(self, st: Any, subs: Mapping[str, Any]) -> str:
        sub = subs.get(st.subscription_name) or {}
        joined = sub.get("consumersAfterMarkDeletePosition") or {}
        rows = []
        for c in sub.get("consumers") or ():
            name = str(c.get("consumerName"))
            ranges = ", ".join(f"[{s}, {e}]" for s, e in consumer_key_hash_ranges(c))
            notes = []
            if name in joined:
                notes.append(f"recently joined, waits for mark-delete to pass {joined[name]}")
            if c.get("drainingHashesCount"):
                notes.append(f"{c['drainingHashesCount']} draining hash(es)")
            if c.get("blockedConsumerOnUnackedMsgs"):
                notes.append("blocked on unacked messages")
            rows.append(
                f"<tr><td style='color:{self.palette.color(name)}'><b>{html.escape(name)}</b>"
                f"</td><td>{c.get('availablePermits', '—')}</td>"
                f"<td>{c.get('unackedMessages', '—')}</td><td>{html.escape(ranges)}</td>"
                f"<td>{html.escape('; '.join(notes))}</td></tr>"
            )
        head = (f"<b>{html.escape(str(st.subscription_name))}</b>: type {sub.get('type')}, "
                f"mode {sub.get('keySharedMode', '—')}, backlog {sub.get('msgBacklog', '—')}, "
                f"unacked {sub.get('unackedMessages', '—')}")
        return (f"{head}<table><tr><th>consumer</th><th>permits</th><th>unacked</th>"
                f"<th>key hash ranges</th><th></th></tr>{''.join(rows)}</table>")
