"""FlowView: permits and receiver-queue fill per consumer over time.

Answers "why does one Shared consumer hoard messages?" (its prefetch: the permits it
granted fill its receiver queue whether or not the application reads) and "why does a new
Key_Shared consumer get nothing?" (it is recently joined: it waits until the mark-delete
position passes its join mark, and a consumer sitting on the oldest unacknowledged message
holds everybody there). The top chart is each consumer's available permits
(``availablePermits``), the bottom one its receiver-queue fill (what-if: the simulated
client's queue) and unacknowledged messages (``unackedMessages``, dotted). An hourglass
marks samples where a consumer waits on its join mark (``consumersAfterMarkDeletePosition``),
a red cross the consumer holding the mark-delete back. The table says when a consumer, or
the whole subscription, is blocked on unacked messages (``blockedConsumerOnUnackedMsgs``,
``blockedSubscriptionOnUnackedMsgs``). The x axis is the step number in what-if mode (one
per action, the number the step slider shows) and seconds in live mode.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import ipywidgets
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .base import View
from .pulsar_stats import Position, format_position, parse_position
from .source import BrokerEvent, Snapshot, Source
from .stepper import Stepper

__all__ = ["FlowView", "Series"]


@dataclass
class Series:
    """One consumer's samples."""

    x: list[float] = field(default_factory=list)
    time_ms: list[int] = field(default_factory=list)
    permits: list[int] = field(default_factory=list)
    unacked: list[int] = field(default_factory=list)
    queue: list[int] = field(default_factory=list)
    """Receiver-queue fill (what-if only; -1 when unknown)."""
    waiting: list[bool] = field(default_factory=list)
    holding: list[bool] = field(default_factory=list)


class FlowView(View):
    """Permits, receiver-queue fill and unacked messages per consumer over time."""

    _history_fields = ("extent", "current", "waiting", "holding", "mark_delete",
                       "subscription_blocked")

    def __init__(self, source: Source, *, topic: str | None = None, controls: bool = True,
                 stepper: Stepper | None = None) -> None:
        super().__init__(source, stepper=stepper)
        self.topic = topic
        self.series: dict[str, Series] = {}
        self.waiting: dict[str, Position] = {}
        self.holding: list[str] = []
        self.mark_delete: Position | None = None
        self.current: dict[str, dict[str, Any]] = {}
        self.subscription_blocked = False
        self._traces: dict[str, tuple[int, int, int]] = {}
        self.extent: dict[str, int] = {}
        """Samples per consumer in the step shown."""
        queue_title = ("receiver queue fill (solid) · unacked (dotted)" if source.simulated
                       else "unacked (dotted; queue fill is client-side: what-if only)")
        figure = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                               subplot_titles=("available permits", queue_title))
        figure.add_trace(go.Scatter(name="waits for mark-delete", mode="markers",
                                    marker={"symbol": "hourglass", "size": 12,
                                            "color": "#6a1b9a"}), row=1, col=1)
        figure.add_trace(go.Scatter(name="holds mark-delete back", mode="markers",
                                    marker={"symbol": "x", "size": 12, "color": "#c62828"}),
                         row=2, col=1)
        figure.update_layout(height=440, margin={"l": 50, "r": 50, "t": 70, "b": 40},
                             title={"font": {"size": 13}},
                             legend={"orientation": "h", "y": -0.15})
        figure.update_xaxes(title_text="step" if source.simulated else "seconds", row=2, col=1)
        self.fig = go.FigureWidget(figure)
        self.table = ipywidgets.HTML()
        self._bind([self.fig, self.table], controls=controls)

    # -- state ----------------------------------------------------------------------------

    def _update(self, snapshot: Snapshot, events: list[BrokerEvent]) -> None:
        consumers: dict[str, dict[str, Any]] = {}
        waiting: dict[str, Position] = {}
        topics = [self.topic] if self.topic else list(snapshot.topics)
        subscription_blocked = False
        for topic in topics:
            sub = snapshot.subscription(self.source.subscription, topic) or {}
            subscription_blocked |= bool(sub.get("blockedSubscriptionOnUnackedMsgs"))
            for c in sub.get("consumers") or ():
                name = str(c.get("consumerName"))
                now = consumers.setdefault(name, {"permits": 0, "unacked": 0, "blocked": False})
                now["permits"] += int(c.get("availablePermits") or 0)
                now["unacked"] += int(c.get("unackedMessages") or 0)
                now["blocked"] |= bool(c.get("blockedConsumerOnUnackedMsgs"))
            for name, mark in (sub.get("consumersAfterMarkDeletePosition") or {}).items():
                waiting[name] = parse_position(mark)
        cursor = snapshot.cursor(self.source.subscription, topics[0] if topics else None)
        self.mark_delete = parse_position(cursor["markDeletePosition"]) if cursor else None
        self.waiting = waiting
        self.subscription_blocked = subscription_blocked
        self.holding = self._holders(snapshot, consumers) if waiting else []
        self.current = consumers
        # what-if: the number of the step this sample is recorded as (the slider's)
        x = (float(self.stepper.next_index) if self.source.simulated
             else self.seconds(snapshot.time_ms))
        for name, now in consumers.items():
            series = self.series.setdefault(name, Series())
            client = (snapshot.clients or {}).get(name)
            series.x.append(x)
            series.time_ms.append(snapshot.time_ms)
            series.permits.append(now["permits"])
            series.unacked.append(now["unacked"])
            series.queue.append(client.queue if client is not None else -1)
            series.waiting.append(name in waiting)
            series.holding.append(name in self.holding)
        self.extent = {name: len(series.x) for name, series in self.series.items()}

    def _holders(self, snapshot: Snapshot, consumers: dict[str, dict[str, Any]]) -> list[str]:
        """Who keeps the mark-delete from reaching the join marks.

        What-if knows each consumer's pending entries: the holder has the oldest one.
        Live stats do not say, so every consumer with unacked messages is a suspect.
        """
        if snapshot.pending is not None:
            oldest = {n: min(p) for n, p in snapshot.pending.items() if p}
            if not oldest:
                return []
            first = min(oldest.values())
            return [n for n, p in oldest.items() if p == first]
        return [n for n, c in consumers.items() if c["unacked"] and n not in self.waiting]

    def summary(self, state: Any = None) -> dict[str, Any]:
        st = self if state is None else state
        return {
            "consumers": {n: dict(c) for n, c in st.current.items()},
            "waiting": {n: format_position(p) for n, p in st.waiting.items()},
            "holding": list(st.holding),
            "subscription_blocked": st.subscription_blocked,
            "mark_delete": format_position(st.mark_delete) if st.mark_delete else None,
            "samples": dict(st.extent),
        }

    # -- drawing --------------------------------------------------------------------------

    def draw(self, st: Any) -> None:
        for name in self.series:
            if name not in self._traces:
                self._add_consumer_traces(name)
        series_shown = {n: _head(s, st.extent.get(n, 0)) for n, s in self.series.items()}
        wait_x: list[float] = []
        wait_y: list[int] = []
        hold_x: list[float] = []
        hold_y: list[int] = []
        with self.fig.batch_update():
            for name, series in series_shown.items():
                permits_i, queue_i, unacked_i = self._traces[name]
                x = np.asarray(series.x)
                queue = np.asarray(series.queue, dtype=np.float64)
                queue[queue < 0] = np.nan
                self.fig.data[permits_i].x = x
                self.fig.data[permits_i].y = np.asarray(series.permits)
                self.fig.data[queue_i].x, self.fig.data[queue_i].y = x, queue
                self.fig.data[unacked_i].x = x
                self.fig.data[unacked_i].y = np.asarray(series.unacked)
                for i, (w, h) in enumerate(zip(series.waiting, series.holding, strict=True)):
                    if w:
                        wait_x.append(series.x[i])
                        wait_y.append(series.permits[i])
                    if h:
                        hold_x.append(series.x[i])
                        hold_y.append(series.unacked[i])
            self.fig.data[0].x, self.fig.data[0].y = wait_x, wait_y
            self.fig.data[1].x, self.fig.data[1].y = hold_x, hold_y
            if self.source.simulated:
                self.fig.layout.xaxis.dtick = self.fig.layout.xaxis2.dtick = 1
            title = self._title(st)
            self.fig.layout.title.text = title
            # a second title line needs room above the first panel's own title
            self.fig.layout.margin.t = 95 if "<br>" in title else 70
        self.table.value = self._table_html(st)

    def _title(self, st: Any) -> str:
        parts = [f"{n}: {c['permits']} permits, {c['unacked']} unacked"
                 for n, c in st.current.items()]
        notes = []
        if st.waiting:
            notes.append("waiting for the mark-delete: " + ", ".join(st.waiting))
        if st.holding:
            notes.append("holding it back: " + ", ".join(st.holding))
        title = "flow — " + (" · ".join(parts) or "no consumers")
        return title + ("<br><span style='font-size:11px'>" + " · ".join(notes) + "</span>"
                        if notes else "")

    def _add_consumer_traces(self, name: str) -> None:
        color = self.source.palette.color(name)
        line = {"color": color, "shape": "hv"}
        self.fig.add_trace(go.Scatter(name=f"{name} permits", mode="lines+markers", line=line,
                                      legendgroup=name), row=1, col=1)
        permits_i = len(self.fig.data) - 1
        # markers too: the first sample alone is a point, which a line does not draw
        self.fig.add_trace(go.Scatter(name=f"{name} queue", mode="lines+markers", line=line,
                                      legendgroup=name, showlegend=False), row=2, col=1)
        queue_i = len(self.fig.data) - 1
        self.fig.add_trace(go.Scatter(name=f"{name} unacked", mode="lines+markers",
                                      line={**line, "dash": "dot"}, legendgroup=name,
                                      showlegend=False), row=2, col=1)
        self._traces[name] = (permits_i, queue_i, len(self.fig.data) - 1)

    def _table_html(self, st: Any) -> str:
        rows = []
        for name, now in st.current.items():
            series = _head(self.series[name], st.extent.get(name, 0))
            queue = series.queue[-1] if series.queue and series.queue[-1] >= 0 else "—"
            if name in st.waiting:
                state = (f"recently joined: gets only entries before "
                         f"{format_position(st.waiting[name])} until the mark-delete "
                         f"({format_position(st.mark_delete) if st.mark_delete else '?'}) "
                         "passes it")
            elif name in st.holding:
                state = "holds the oldest unacked message: the mark-delete cannot move"
            elif now["blocked"]:
                state = "blocked: too many unacked messages"
            elif now["permits"] == 0:
                state = "no permits: the broker sends nothing until it flows more"
            else:
                state = ""
            rows.append(
                f"<tr><td style='color:{self.source.palette.color(name)}'><b>"
                f"{html.escape(name)}</b></td><td>{now['permits']}</td><td>{queue}</td>"
                f"<td>{now['unacked']}</td><td>{html.escape(state)}</td></tr>"
            )
        blocked = ("<p>subscription blocked: too many unacked messages — no new entries are "
                   "read until acks bring it below half its limit</p>"
                   if st.subscription_blocked else "")
        return ("<table><tr><th>consumer</th><th>permits</th><th>queue</th><th>unacked</th>"
                f"<th></th></tr>{''.join(rows)}</table>{blocked}")


def _head(series: Series, n: int) -> Series:
    """The first ``n`` samples of ``series``."""
    return Series(series.x[:n], series.time_ms[:n], series.permits[:n], series.unacked[:n],
                  series.queue[:n], series.waiting[:n], series.holding[:n])
