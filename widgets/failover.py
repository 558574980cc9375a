"""FailoverView: who is active on each partition, who stands by, and what a failover did.

Answers "who becomes active when B dies?" and "why did messages arrive twice?". The grid
has one row per consumer and one column per partition: active (delivering), switching (the
new active consumer waits ``active_consumer_failover_delay_ms`` before the cursor rewinds to
the mark-delete position), standby (same priority level, not picked), lower priority (never
eligible while a better level is connected) or disconnected. Rows are sorted as the broker
ranks consumers (priority level, then name), so partition ``i`` going to
``eligible[i % n]`` reads straight off the picture. Entries delivered to more than one
consumer (the rewind after a switch) are counted as duplicates. A non-partitioned topic
also shows the 3.x consumer ring that picks its active consumer (the topic's hash walks to
the next consumer point). In what-if mode each consumer has a disconnect/reconnect button.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

import ipywidgets
import plotly.graph_objects as go

from pulsarlab.broker import TopicName
from pulsarlab.broker.events import ActiveConsumerChanged, CursorRewound, Dispatched
from pulsarlab.broker.selectors import (
    active_consumer_hash_ring,
    eligible_consumers,
    murmur3_32_hash,
    sort_consumers,
)

from .base import View
from .hash_ring import degrees
from .keys import Probe
from .source import BrokerEvent, Snapshot, Source, stepped_colorscale
from .stepper import Stepper

__all__ = ["STATES", "FailoverView"]

STATES = ("disconnected", "lower priority", "standby", "switching", "active")
"""Cell states, in the order of their numeric code in :attr:`FailoverView.grid`."""

_STAR = "★ hash of the topic name (the next point clockwise is the active consumer)"

_COLORS = ("#eeeeee", "#c5cae9", "#90caf9", "#ffb300", "#2e7d32")




class FailoverView(View):
    """Partitions × consumers: active / switching / standby, with failover buttons."""

    _history_fields = ("partitions", "consumers", "priorities", "active", "switching", "grid",
                       "ring", "topic_point", "changed_cells")

    def __init__(self, source: Source, *, controls: bool = True,
                 stepper: Stepper | None = None) -> None:
        super().__init__(source, stepper=stepper)
        self.partitions: list[str] = []
        self.consumers: list[str] = []
        self.priorities: dict[str, int] = {}
        self.active: dict[int, str | None] = {}
        self.switching: dict[int, tuple[str | None, str | None, int]] = {}
        self.grid: list[list[int]] = []
        self.ring: list[tuple[int, str]] = []
        self.topic_point: int | None = None
        self.changed_cells: list[tuple[str, int]] = []
        """(consumer, partition) cells whose state changed in the step shown (outlined)."""
        self._ring_legend: dict[str, int] = {}
        self.consumers_before: list[str] = []
        self._delivered_to: dict[tuple[str, int, int], set[str]] = {}
        self._pending: dict[str, tuple[str | None, str | None, int]] = {}
        self.fig = go.FigureWidget(
            data=[go.Heatmap(
                zmin=0, zmax=len(STATES), colorscale=stepped_colorscale(_COLORS),
                showscale=False,
                texttemplate="%{text}", hoverinfo="text", xgap=2, ygap=2,
            )],
            layout=go.Layout(
                height=300, margin={"l": 120, "r": 20, "t": 40, "b": 40},
                title={"text": "Failover: partitions × consumers", "font": {"size": 14}},
                yaxis={"autorange": "reversed"},
            ),
        )
        self.ring_fig = go.FigureWidget(
            data=[
                go.Scatterpolar(name="consumer points", mode="markers", hoverinfo="text",
                                showlegend=False, marker={"size": 6}),
                go.Scatterpolar(name=_STAR, mode="markers", hoverinfo="text",
                                marker={"size": 16, "symbol": "star", "color": "#000000"}),
                go.Scatterpolar(name="active consumer's point", mode="markers",
                                hoverinfo="text",
                                marker={"size": 16, "symbol": "circle-open", "color": "#000000",
                                        "line": {"width": 2}}),
            ],
            layout=go.Layout(
                height=380, margin={"l": 30, "r": 50, "t": 50, "b": 30}, showlegend=True,
                legend={"orientation": "h", "y": -0.05},
                title={"text": "non-partitioned topic: the consumer ring", "font": {"size": 13}},
                polar={"radialaxis": {"visible": False, "range": [0, 1.2]},
                       "angularaxis": {"rotation": 90, "direction": "clockwise",
                                       "showticklabels": False}},
            ),
        )
        self.ring_box = ipywidgets.Box([self.ring_fig], layout={"display": "none"})
        self.ring_shown = False
        """Whether the step drawn has a consumer ring (then the box shows it)."""
        self.table = ipywidgets.HTML()
        self.toggles = ipywidgets.HBox()
        self._known: dict[str, int] = {}
        self._toggle_state: list[tuple[str, bool]] = []
        children: list[ipywidgets.Widget] = [self.fig, self.table, self.ring_box]
        if source.simulated and not self.composed:
            children.insert(2, self.toggles)
        self._bind(children, controls=controls, keys="-, -, -")

    # -- state ----------------------------------------------------------------------------

    def _update(self, snapshot: Snapshot, events: list[BrokerEvent]) -> None:
        self._follow(events)
        self.partitions = sorted(snapshot.topics, key=_partition_index)
        connected: dict[str, int] = {}
        per_partition: dict[int, dict[str, Any]] = {}
        for topic in self.partitions:
            sub = snapshot.subscription(self.source.subscription, topic) or {}
            index = max(0, _partition_index(topic))
            per_partition[index] = sub
            for c in sub.get("consumers") or ():
                connected[str(c.get("consumerName"))] = int(c.get("priorityLevel") or 0)
        self._known.update(connected)
        self.priorities = dict(self._known)
        ordered = sort_consumers(Probe(n, priority_level=p) for n, p in self._known.items())
        self.consumers = [c.consumer_name for c in ordered]
        eligible = {c.consumer_name for c in eligible_consumers(
            Probe(n, priority_level=p) for n, p in connected.items()
        )}
        self.active = {i: sub.get("activeConsumerName") for i, sub in per_partition.items()}
        self.switching = {
            max(0, _partition_index(t)): pending for t, pending in self._pending.items()
            if t in snapshot.topics
        }
        grid = []
        for name in self.consumers:
            row = []
            for i in range(len(self.partitions)):
                if name not in connected:
                    state = 0
                elif self.active.get(i) == name:
                    state = 3 if i in self.switching else 4
                elif name in eligible:
                    state = 2
                else:
                    state = 1
                row.append(state)
            grid.append(row)
        before = {(n, i): state for n, row in zip(self.consumers_before, self.grid, strict=False)
                  for i, state in enumerate(row)}
        self.changed_cells = [
            (name, i) for name, row in zip(self.consumers, grid, strict=True)
            for i, state in enumerate(row) if before and before.get((name, i), 0) != state
        ]
        self.grid = grid
        self.consumers_before = list(self.consumers)
        self._update_ring(connected)

    def _follow(self, events: Iterable[BrokerEvent]) -> None:
        sub_name = self.source.subscription
        for event in events:
            if event.subscription != sub_name:
                continue
            topic = event.topic
            match event:
                case ActiveConsumerChanged(previous=str(), active=str()):
                    self._pending[topic] = (event.previous, event.active, event.time_ms)
                case ActiveConsumerChanged() | CursorRewound():
                    self._pending.pop(topic, None)
                case Dispatched():
                    for ledger, entry, *_ in event.entries:
                        self._delivered_to.setdefault((topic, ledger, entry), set()).add(
                            event.consumer
                        )

    def _update_ring(self, connected: dict[str, int]) -> None:
        if len(self.partitions) != 1 or _partition_index(self.partitions[0]) >= 0:
            self.ring, self.topic_point = [], None
            return
        eligible = eligible_consumers(Probe(n, priority_level=p) for n, p in connected.items())
        self.ring = [(h, c.consumer_name) for h, c in active_consumer_hash_ring(eligible)]
        self.topic_point = murmur3_32_hash(self.partitions[0])

    @property
    def duplicates(self) -> list[tuple[str, int, int]]:
        """Entries that were delivered to more than one consumer."""
        return sorted(k for k, names in self._delivered_to.items() if len(names) > 1)

    def by_consumer(self, state: Any = None) -> dict[str, list[int]]:
        """Consumer → the partitions it is active on (in ``state``; default: the latest)."""
        st = self if state is None else state
        out: dict[str, list[int]] = {n: [] for n in st.consumers}
        for i, name in sorted(st.active.items()):
            if name is not None:
                out.setdefault(name, []).append(i)
        return out

    def summary(self, state: Any = None) -> dict[str, Any]:
        st = self if state is None else state
        return {
            "partitions": len(st.partitions),
            "consumers": list(st.consumers),
            "active": dict(st.active),
            "by_consumer": self.by_consumer(st),
            "switching": dict(st.switching),
            "duplicates": len(self.duplicates),
        }

    # -- drawing --------------------------------------------------------------------------

    def draw(self, st: Any) -> None:
        labels = [f"P{max(0, _partition_index(t))}" for t in st.partitions]
        rows = [f"{n} (prio {st.priorities.get(n, 0)})" for n in st.consumers]
        text = [[STATES[s] if s else "" for s in row] for row in st.grid]
        hover = [
            [f"{name} on {label}: {STATES[s]}" for label, s in zip(labels, row, strict=True)]
            for name, row in zip(st.consumers, st.grid, strict=True)
        ]
        index = {name: r for r, name in enumerate(st.consumers)}
        outlines = [
            {"type": "rect", "x0": i - 0.5, "x1": i + 0.5, "y0": index[name] - 0.5,
             "y1": index[name] + 0.5, "line": {"color": "#d50000", "width": 3}}
            for name, i in st.changed_cells if name in index
        ]
        with self.fig.batch_update():
            heat = self.fig.data[0]
            heat.z = [[s + 0.5 for s in row] for row in st.grid]
            heat.x = labels
            heat.y = rows
            heat.text = text
            heat.hovertext = hover
            self.fig.layout.shapes = outlines
            self.fig.layout.height = max(220, 100 + 45 * len(rows))
            self.fig.layout.margin.t = 64  # the title's two lines
            self.fig.layout.title.text = self._title(st, len(outlines))
        self._draw_ring(st)
        self.table.value = self._table_html(st)
        if self.source.simulated and not self.stepper.picturing:
            self._sync_toggles(st)

    def _title(self, st: Any, changed: int) -> str:
        """Who delivers on each partition (a consumer still in its failover delay is
        *switching*, not active), short enough for the figure's width; the cells that
        changed on a second, smaller line."""
        switching = [i for i in sorted(st.active) if i in st.switching]
        delivering = {i: n for i, n in sorted(st.active.items()) if i not in switching}
        if len(st.active) > 4:  # by consumer: "A on P0, P3, P6 · B on P1, P4, P7"
            groups: dict[str, list[int]] = {}
            for i, name in delivering.items():
                groups.setdefault(name or "nobody", []).append(i)
            active = " · ".join(f"{n} on " + ", ".join(f"P{i}" for i in ps)
                                for n, ps in groups.items())
        else:
            active = ", ".join(f"P{i}→{n or 'nobody'}" for i, n in delivering.items())
        moving = ", ".join(f"P{i}→{st.active[i]}" for i in switching)
        line = f"Failover: active {active}" if active else "Failover: no active consumer"
        if moving:
            line += f"; switching {moving}"
        notes = [f"{changed} cell(s) changed (outlined)"] if changed else []
        if switching:
            notes.append("switching: waiting out the failover delay")
        return line + (f"<br><span style='font-size:11px'>{' · '.join(notes)}</span>"
                       if notes else "")

    def figures(self, all_figures: bool = False) -> list[go.FigureWidget]:
        return [self.fig, self.ring_fig] if self.ring_shown or all_figures else [self.fig]

    def _draw_ring(self, st: Any) -> None:
        palette = self.source.palette
        self.ring_shown = bool(st.ring)
        if not self.stepper.picturing:
            self.ring_box.layout.display = "flex" if st.ring else "none"
        for name in dict.fromkeys(n for _, n in st.ring):
            if name not in self._ring_legend:
                self.ring_fig.add_trace(go.Scatterpolar(
                    name=f"{name}'s points", r=[None], theta=[None], mode="markers", meta="legend",
                    marker={"size": 10, "color": palette.color(name)},
                ))
                self._ring_legend[name] = len(self.ring_fig.data) - 1
        chosen = self._chosen_point(st)
        with self.ring_fig.batch_update():
            points, star, active = self.ring_fig.data[:3]
            points.r = [1.0] * len(st.ring)
            points.theta = [degrees(h) for h, _ in st.ring]
            points.marker.color = [palette.color(n) for _, n in st.ring]
            points.hovertext = [f"{n} point at {h}" for h, n in st.ring]
            if st.topic_point is not None:
                star.r, star.theta = [0.8], [degrees(st.topic_point)]
                star.hovertext = [f"hash of the topic name: {st.topic_point}"]
            else:
                star.r, star.theta = [], []
            if chosen is not None:
                active.r, active.theta = [1.0], [degrees(chosen[0])]
                active.hovertext = [f"{chosen[1]}: the first point at or after the topic's hash"]
            else:
                active.r, active.theta = [], []
            names = {n for _, n in st.ring}
            for name, index in self._ring_legend.items():
                self.ring_fig.data[index].visible = name in names

    def _chosen_point(self, st: Any) -> tuple[int, str] | None:
        """The consumer point the topic's hash walks to (clockwise, wrapping)."""
        if st.topic_point is None or not st.ring:
            return None
        ordered = sorted(st.ring)
        return next((p for p in ordered if p[0] >= st.topic_point), ordered[0])

    def _table_html(self, st: Any) -> str:
        parts = []
        for name, partitions in self.by_consumer(st).items():
            color = self.source.palette.color(name)
            listed = ", ".join(f"P{i}" for i in partitions) or "—"
            parts.append(f"<span style='color:{color}'><b>{html.escape(name)}</b></span>: {listed}")
        lines = ["active on: " + " · ".join(parts)]
        delay = self._delay_ms()
        for i, (previous, new, since) in sorted(st.switching.items()):
            due = f" (rewind at t = {self.seconds(since + delay):.3f} s)" if delay else ""
            lines.append(f"P{i}: {html.escape(str(previous))} → {html.escape(str(new))} "
                         f"switching since t = {self.seconds(since):.3f} s{due}")
        if self.duplicates:
            lines.append(f"{len(self.duplicates)} entries were delivered to more than one "
                         "consumer (the new active consumer re-reads from the mark-delete).")
        return "<br>".join(lines)

    def _delay_ms(self) -> int:
        snapshot = self.source.snapshot()
        return int((snapshot.settings if snapshot else {}).get(
            "active_consumer_failover_delay_ms", 0))

    def _sync_toggles(self, st: Any) -> None:
        connected = set(self.require_whatif().consumer_names)
        wanted = [(n, n in connected) for n in st.consumers]
        if self._toggle_state == wanted:
            return
        self._toggle_state = wanted
        buttons = []
        for name, up in wanted:
            button = ipywidgets.Button(
                description=f"{'disconnect' if up else 'reconnect'} {name}",
                button_style="danger" if up else "success",
            )
            button.on_click(lambda _b, name=name, up=up: self._act(self.toggle, name, up))
            buttons.append(button)
        self.toggles.children = tuple(buttons)

    def toggle(self, name: str, connected: bool | None = None) -> None:
        """Disconnect ``name`` (if connected) or reconnect it with its priority level."""
        whatif = self.require_whatif()
        if connected is None:
            connected = name in whatif.consumer_names
        if connected:
            whatif.remove_consumer(name)
        else:
            whatif.add_consumer(name, priority_level=self.priorities.get(name, 0))


def _partition_index(topic: str) -> int:
    return TopicName.get(topic).partition_index
