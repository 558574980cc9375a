"""RedeliveryTimeline: one lane per message, every step of its life as a mark on a time axis.

Answers "why did my message come back?", "who got it, when, how many times?" and "why did
the poison message end in the DLQ?". Each lane is one entry (``ledger:entry``) — or, with
``lanes="consumer"``, one consumer — and each broker event that names the entry becomes a
mark: published → dispatched (to whom, with its redelivery count) → acked, or → redelivery
requested / nacked / ack timeout → a waiting segment (the back-off) → dispatched again → …
→ dead-lettered or sent to the retry topic. Those last two are published by the client on
other topics; their events carry ``real_topic`` and ``origin_message_id`` (the properties the
client sets), and a timeline of ``real_topic`` draws them on the original message's lane.

The mark kinds are data (:data:`KINDS`), keyed by event type: the broker's events and the
client's own kinds (nacks, ack timeouts, scheduled redeliveries:
:mod:`pulsarlab.broker.client.events`) are drawn with their registered style wherever they
name entries (``entries``, ``positions`` or ``position``), and :func:`register_kind` adds or
restyles one without touching the rest. An event of a type this version does not know (an
:class:`~pulsarlab.broker.events.UnknownEvent`) draws nothing.
Marks live in numpy columns (:class:`TimelineModel`), so 10 000 messages — tens of
thousands of marks — go to plotly as a handful of typed arrays per frame.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from pulsarlab.broker.client.events import REASON_KINDS, RedeliveryScheduled
from pulsarlab.broker.events import (
    Acked,
    DeadLettered,
    Dispatched,
    RedeliveryRequested,
    Retried,
    UnknownEvent,
)

from .base import View
from .pulsar_stats import Position, format_position
from .source import BrokerEvent, Snapshot, Source
from .stepper import Stepper

__all__ = [
    "DEFAULT_KIND",
    "KINDS",
    "Mark",
    "MarkKind",
    "RedeliveryTimeline",
    "TimelineModel",
    "marks_from_event",
    "origin_position",
    "register_kind",
]

IN_FLIGHT, WAITING, QUEUED = "in flight", "waiting", "queued"
PHASES = (QUEUED, IN_FLIGHT, WAITING)
_PHASE_STYLE = {
    QUEUED: {"color": "#cfd8dc", "width": 1},
    IN_FLIGHT: {"color": "#64b5f6", "width": 2},
    WAITING: {"color": "#ff8a65", "width": 2, "dash": "dot"},
}


@dataclass(frozen=True)
class MarkKind:
    """How one event type is drawn, and what its lane does after it."""

    name: str
    label: str
    symbol: str
    color: str | None
    """Marker colour; ``None`` = the consumer's colour."""
    then: str | None
    """The phase that follows (:data:`IN_FLIGHT`, :data:`WAITING`, :data:`QUEUED`), or
    ``None`` when the message's story ends here (until another mark says otherwise)."""


KINDS: dict[str, MarkKind] = {}


def register_kind(kind: MarkKind) -> None:
    """Add (or restyle) a mark kind; events of type ``kind.name`` are drawn with it."""
    KINDS[kind.name] = kind


for _kind in (
    MarkKind("published", "published", "circle-open", "#78909c", QUEUED),
    MarkKind("delayed", "delayed delivery", "diamond-open", "#7e57c2", WAITING),
    MarkKind("dispatched", "dispatched", "triangle-right", None, IN_FLIGHT),
    MarkKind("filtered", "filtered out", "x-thin-open", "#9e9e9e", None),
    MarkKind("acked", "acked", "circle", "#2e7d32", None),
    MarkKind("redelivery_requested", "redelivery requested", "x", "#ef6c00", WAITING),
    MarkKind("consumer_removed", "consumer left: to redeliver", "x-open", "#ef6c00", WAITING),
    MarkKind("nacked", "nacked", "x", "#d32f2f", WAITING),
    MarkKind("ack_timeout", "ack timeout", "hourglass", "#8e24aa", WAITING),
    MarkKind("scheduled_redelivery", "redelivery scheduled", "hexagon-open", "#ff7043", WAITING),
    MarkKind("retried", "sent to retry topic", "star", "#f9a825", None),
    MarkKind("dead_lettered", "dead-lettered", "square", "#212121", None),
    MarkKind("corrupt_entry_skipped", "corrupt, skipped", "x-open", "#b71c1c", None),
):
    register_kind(_kind)

DEFAULT_KIND = MarkKind("event", "event", "circle-dot", "#607d8b", None)
"""Style of an event type nobody registered."""


@dataclass(frozen=True)
class Mark:
    """One step of one message's life."""

    time_ms: int
    kind: str
    consumer: str | None = None
    redelivery_count: int = -1
    """As the broker sent it with a delivery (``-1`` where it does not apply)."""


def _position(value: Any) -> Position | None:
    if isinstance(value, list | tuple) and len(value) >= 2:
        return int(value[0]), int(value[1])
    return None


def origin_position(event: BrokerEvent, topic: str | None) -> Position | None:
    """The original entry of a retry/dead-letter hop whose ``real_topic`` is ``topic``.

    ``origin_message_id`` is the id's string form: ``(ledger,entry,partition,batch)``
    (this client) or ``ledger:entry:partition`` (Java's).
    """
    if topic is None or not isinstance(event, DeadLettered | Retried):
        return None
    text = event.origin_message_id
    if event.real_topic != topic or not isinstance(text, str):
        return None
    parts = text.strip("()").replace(":", ",").split(",")
    try:
        return int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        return None


def _kind(event: BrokerEvent) -> str:
    """The mark kind of an event: its type, or for a redelivery request the client kind
    behind its ``reason`` (``nacked``, ``ack_timeout``) or the reason itself where that is
    a registered kind (``consumer_removed`` …)."""
    if isinstance(event, RedeliveryRequested) and isinstance(event.reason, str):
        reason = str(REASON_KINDS.get(event.reason, event.reason))
        if reason in KINDS:
            return reason
    return str(event.type)


def marks_from_event(
    event: BrokerEvent, topic: str | None = None
) -> Iterator[tuple[Position, Mark]]:
    """The marks an event puts on message lanes (none if it names no entry).

    Reads a dispatch's ``entries`` (``[[ledger, entry, redelivery_count], ...]``) and the
    ``positions`` (``[[ledger, entry], ...]``) or ``position`` of any other type. A
    retry or dead-letter hop of a message of ``topic`` (see :func:`origin_position`) marks
    the original's lane.
    """
    if isinstance(event, UnknownEvent):
        return
    kind = _kind(event)
    time_ms, consumer = event.time_ms, event.consumer
    default_count = event.redelivery_count if isinstance(event, RedeliveryScheduled) else -1
    origin = origin_position(event, topic)
    if origin is not None:
        yield origin, Mark(time_ms, kind, consumer, default_count)
        return
    if isinstance(event, Dispatched):
        for entry in event.entries:
            position = _position(entry)
            if position is not None:
                count = int(entry[2]) if len(entry) > 2 else default_count
                yield position, Mark(time_ms, kind, consumer, count)
    for value in getattr(event, "positions", None) or ():
        position = _position(value)
        if position is not None:
            yield position, Mark(time_ms, kind, consumer, default_count)
    position = _position(getattr(event, "position", None))
    if position is not None:
        yield position, Mark(time_ms, kind, consumer, default_count)


class _Column:
    """A growable numpy array (amortised O(1) append)."""

    def __init__(self, dtype: Any) -> None:
        self._data = np.zeros(1024, dtype=dtype)
        self.size = 0

    def append(self, value: Any) -> None:
        if self.size == len(self._data):
            self._data = np.concatenate([self._data, np.zeros_like(self._data)])
        self._data[self.size] = value
        self.size += 1

    @property
    def values(self) -> np.ndarray:
        return self._data[: self.size]


class TimelineModel:
    """Marks per message lane, stored column-wise.

    ``subscription`` keeps only events of that subscription (plus the topic-wide
    ``published``). A cumulative ack closes every open lane at or below its position.
    ``topic`` (full name): retry and dead-letter hops of its messages go on their lanes.
    """

    def __init__(self, subscription: str | None = None, topic: str | None = None) -> None:
        self.subscription = subscription
        self.topic = topic
        self.lane_positions: list[Position] = []
        self.kind_names: list[str] = []
        self.consumer_names: list[str | None] = []
        self._lane_of: dict[Position, int] = {}
        self._kind_code: dict[str, int] = {}
        self._consumer_code: dict[str | None, int] = {}
        self._open: set[int] = set()
        self._time = _Column(np.int64)
        self._lane = _Column(np.int32)
        self._kind = _Column(np.int16)
        self._consumer = _Column(np.int16)
        self._count = _Column(np.int32)

    def __len__(self) -> int:
        return self._time.size

    def ingest(self, events: Iterable[BrokerEvent]) -> int:
        """Add the marks of ``events``; return how many were added."""
        added = 0
        for event in events:
            sub = event.subscription
            if self.subscription is not None and sub is not None and sub != self.subscription:
                continue
            if isinstance(event, Acked) and event.cumulative:
                added += self._cumulative(event)
                continue
            for position, mark in marks_from_event(event, self.topic):
                self._add(position, mark)
                added += 1
        return added

    def _cumulative(self, event: Acked) -> int:
        added = 0
        for position, mark in marks_from_event(event):
            for lane in sorted(self._open):
                if self.lane_positions[lane] <= position:
                    self._add(self.lane_positions[lane], mark)
                    added += 1
        return added

    def _add(self, position: Position, mark: Mark) -> None:
        lane = self._lane_of.get(position)
        if lane is None:
            lane = len(self.lane_positions)
            self._lane_of[position] = lane
            self.lane_positions.append(position)
        kind = self._code(self._kind_code, self.kind_names, mark.kind)
        consumer = self._code(self._consumer_code, self.consumer_names, mark.consumer)
        self._time.append(mark.time_ms)
        self._lane.append(lane)
        self._kind.append(kind)
        self._consumer.append(consumer)
        self._count.append(mark.redelivery_count)
        if KINDS.get(mark.kind, DEFAULT_KIND).then is None:
            self._open.discard(lane)
        else:
            self._open.add(lane)

    @staticmethod
    def _code(codes: dict[Any, int], names: list[Any], value: Any) -> int:
        code = codes.get(value)
        if code is None:
            code = codes[value] = len(names)
            names.append(value)
        return code

    # -- reading --------------------------------------------------------------------------

    def arrays(self, limit: int | None = None) -> dict[str, np.ndarray]:
        """The columns: ``time`` (ms), ``lane``, ``kind``/``consumer`` codes, ``count``
        (of the first ``limit`` marks: the model as it was after that many)."""
        end = len(self) if limit is None else min(limit, len(self))
        return {
            "time": self._time.values[:end],
            "lane": self._lane.values[:end],
            "kind": self._kind.values[:end],
            "consumer": self._consumer.values[:end],
            "count": self._count.values[:end],
        }

    def lane(self, position: Position) -> list[Mark]:
        """The marks of one message, in time order (ties kept in arrival order)."""
        lane = self._lane_of.get((position[0], position[1]))
        if lane is None:
            return []
        a = self.arrays()
        rows = np.flatnonzero(a["lane"] == lane)
        rows = rows[np.argsort(a["time"][rows], kind="stable")]
        return [
            Mark(int(a["time"][i]), self.kind_names[a["kind"][i]],
                 self.consumer_names[a["consumer"][i]], int(a["count"][i]))
            for i in rows
        ]

    def segments(
        self, y: np.ndarray, limit: int | None = None, now_ms: int | None = None
    ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per phase, line coordinates (x in ms, y) joining each mark to the next in its lane.

        ``y`` gives each mark's row. Segments are separated by NaN, ready for one trace each.
        With ``now_ms``, a lane whose last mark leads on (queued, in flight, waiting) runs
        on to that time. ``limit``: only the first ``limit`` marks.
        """
        a = self.arrays(limit)
        order = np.lexsort((np.arange(len(a["time"])), a["time"], a["lane"]))
        time, lane, kind = a["time"][order], a["lane"][order], a["kind"][order]
        ys = y[order].astype(np.float64)
        same = lane[:-1] == lane[1:]
        phase_of_kind = np.array(
            [PHASES.index(p) if (p := KINDS.get(n, DEFAULT_KIND).then) else -1
             for n in self.kind_names] or [-1],
            dtype=np.int8,
        )
        phase = phase_of_kind[kind[:-1]] if len(kind) else np.zeros(0, dtype=np.int8)
        out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        last = np.flatnonzero(np.append(~same, True)) if len(kind) else np.zeros(0, np.int64)
        last_phase = phase_of_kind[kind[last]] if len(last) else np.zeros(0, dtype=np.int8)
        for code, name in enumerate(PHASES):
            pick = np.flatnonzero(same & (phase == code))
            starts, ends = time[pick].astype(np.float64), time[pick + 1].astype(np.float64)
            y0, y1 = ys[pick], ys[pick + 1]
            if now_ms is not None:
                tail = last[(last_phase == code) & (time[last] < now_ms)]
                starts = np.concatenate([starts, time[tail].astype(np.float64)])
                ends = np.concatenate([ends, np.full(len(tail), float(now_ms))])
                y0 = np.concatenate([y0, ys[tail]])
                y1 = np.concatenate([y1, ys[tail]])
            xs = np.column_stack([starts, ends, np.full(len(starts), np.nan)])
            yv = np.column_stack([y0, y1, np.full(len(starts), np.nan)])
            out[name] = (xs.ravel(), yv.ravel())
        return out


class RedeliveryTimeline(View):
    """Per-message (or per-consumer) lanes of published → dispatched → acked/redelivered.

    Marks of one lane at the same instant sit side by side (offset across the lane), a
    lane still in progress runs on to the current time, a redelivered dispatch carries its
    redelivery count (``↻2``), and the marks the step shown added are ringed.
    """

    _history_fields = ("extent", "step_start", "now_ms")

    def __init__(
        self,
        source: Source,
        *,
        lanes: str = "message",
        max_lane_labels: int = 40,
        controls: bool = True,
        stepper: Stepper | None = None,
    ) -> None:
        if lanes not in ("message", "consumer"):
            raise ValueError(f"lanes must be 'message' or 'consumer', not {lanes!r}")
        super().__init__(source, stepper=stepper)
        self.lanes = lanes
        self.max_lane_labels = max_lane_labels
        self.model = TimelineModel(source.subscription, source.topic)
        self.extent = (0, 0)
        """(marks, lanes) of the model in the step shown."""
        self.step_start = 0
        """How many marks there were before the step shown (later ones are new in it)."""
        self.now_ms: int | None = None
        self._trace_of: dict[str, int] = {}
        self.fig = go.FigureWidget(
            data=[go.Scattergl(name=p, mode="lines", line=_PHASE_STYLE[p], hoverinfo="skip")
                  for p in PHASES] + [go.Scatter(
                      name="new in this step", mode="markers", hoverinfo="skip",
                      marker={"symbol": "circle-open", "size": 18, "color": "#d50000",
                              "line": {"width": 2}})],
            layout=go.Layout(
                height=420, margin={"l": 70, "r": 50, "t": 50, "b": 40},
                title={"text": "redelivery timeline", "font": {"size": 14}},
                xaxis={"title": "seconds since start"},
                yaxis={"title": "message" if lanes == "message" else "consumer",
                       "autorange": "reversed"},
                legend={"orientation": "h", "y": -0.2},
            ),
        )
        self._bind([self.fig], controls=controls)

    def lane(self, position: Position) -> list[Mark]:
        """One message's marks (see :meth:`TimelineModel.lane`)."""
        return self.model.lane(position)

    def summary(self, state: Any = None) -> dict[str, Any]:
        st = self if state is None else state
        a = self.model.arrays(st.extent[0])
        counts = np.bincount(a["kind"], minlength=len(self.model.kind_names))
        return {
            "lanes": st.extent[1],
            "marks": st.extent[0],
            "by_kind": {n: int(c) for n, c in zip(self.model.kind_names, counts, strict=True)},
            "max_redelivery_count": int(a["count"].max()) if len(a["count"]) else -1,
        }

    def _update(self, snapshot: Snapshot, events: list[BrokerEvent]) -> None:
        self.step_start = len(self.model)
        self.model.ingest(events)
        self.extent = (len(self.model), len(self.model.lane_positions))
        self.now_ms = snapshot.time_ms

    def _rows(self, st: Any) -> np.ndarray:
        """Each mark's y: its lane, offset across the lane when marks share an instant."""
        a = self.model.arrays(st.extent[0])
        base = (a["lane"] if self.lanes == "message" else a["consumer"]).astype(np.float64)
        if not len(base):
            return base
        order = np.lexsort((np.arange(len(base)), a["time"], base))
        key_row, key_time = base[order], a["time"][order]
        starts = np.append(True, (key_row[1:] != key_row[:-1]) | (key_time[1:] != key_time[:-1]))
        group = np.cumsum(starts) - 1
        first = np.flatnonzero(starts)
        size = np.bincount(group)
        rank = np.arange(len(order)) - first[group]
        spacing = np.minimum(0.22, 0.8 / size[group])
        offset = np.empty(len(base))
        offset[order] = (rank - (size[group] - 1) / 2) * spacing
        return base + offset

    def draw(self, st: Any) -> None:
        a = self.model.arrays(st.extent[0])
        rows = self._rows(st)
        x = (a["time"] - self.source.start_ms) / 1000.0
        segments = self.model.segments(rows, st.extent[0], st.now_ms)
        for name in self.model.kind_names:
            if name not in self._trace_of:
                self._add_kind_trace(name)
        palette = self.source.palette
        consumer_colors = np.array(
            [palette.color(n) for n in self.model.consumer_names] or ["#000000"], dtype=object
        )
        lanes = self.model.lane_positions[: st.extent[1]]
        ledgers = np.fromiter((p[0] for p in lanes), dtype=np.int64, count=len(lanes))
        entries = np.fromiter((p[1] for p in lanes), dtype=np.int64, count=len(lanes))
        with self.fig.batch_update():
            for i, phase in enumerate(PHASES):
                xs, ys = segments[phase]
                self.fig.data[i].x = (xs - self.source.start_ms) / 1000.0
                self.fig.data[i].y = ys
            for code, name in enumerate(self.model.kind_names):
                pick = np.flatnonzero(a["kind"] == code)
                trace = self.fig.data[self._trace_of[name]]
                trace.x = x[pick]
                trace.y = rows[pick]
                counts = a["count"][pick]
                trace.customdata = np.column_stack(
                    [ledgers[a["lane"][pick]], entries[a["lane"][pick]], counts,
                     consumer_names_of(self.model.consumer_names, a["consumer"][pick])]
                )
                trace.text = np.array([f"↻{c}" if c > 0 else "" for c in counts], dtype=object)
                if KINDS.get(name, DEFAULT_KIND).color is None:
                    trace.marker.color = consumer_colors[a["consumer"][pick]]
            new = np.arange(st.step_start, len(x))
            self.fig.data[len(PHASES)].x = x[new]
            self.fig.data[len(PHASES)].y = rows[new]
            self._label_lanes(st)
            self.fig.layout.title.text = (
                f"redelivery timeline — {st.extent[1]} message(s), {st.extent[0]} event(s)"
            )

    def _add_kind_trace(self, name: str) -> None:
        kind = KINDS.get(name, DEFAULT_KIND)
        label = kind.label if kind is not DEFAULT_KIND else name
        self.fig.add_trace(go.Scattergl(
            # the count beside its mark: above it, it sat on the mark of the same instant
            # drawn just above (a nack's ×)
            name=label, mode="markers+text", textposition="middle right",
            textfont={"size": 10, "color": "#b71c1c"},
            marker={"symbol": kind.symbol, "size": 9, "color": kind.color or "#000000"},
            hovertemplate=(
                "%{customdata[0]}:%{customdata[1]} · " + label + " · %{customdata[3]}"
                " · redelivery %{customdata[2]} · t = %{x:.3f} s<extra></extra>"
            ),
        ))
        self._trace_of[name] = len(self.fig.data) - 1

    def _label_lanes(self, st: Any) -> None:
        yaxis = self.fig.layout.yaxis
        lanes = len(self.model.consumer_names) if self.lanes == "consumer" else self.extent[1]
        # a lane is a band of its own height, not the whole plot (one lane filled it)
        self.fig.layout.height = max(240, min(420, 160 + 60 * lanes))
        pad = max(0.0, (3 - lanes) / 2)
        yaxis.range = [lanes - 0.5 + pad, -0.5 - pad] if lanes else None  # top to bottom
        if self.lanes == "consumer":
            names = [n or "—" for n in self.model.consumer_names]
            yaxis.tickvals, yaxis.ticktext = list(range(len(names))), names
        elif st.extent[1] <= self.max_lane_labels:
            yaxis.tickvals = list(range(st.extent[1]))
            yaxis.ticktext = [format_position(p)
                              for p in self.model.lane_positions[: st.extent[1]]]
        else:
            yaxis.tickvals, yaxis.ticktext = None, None


def consumer_names_of(names: list[str | None], codes: np.ndarray) -> np.ndarray:
    """Consumer names for an array of consumer codes (``—`` for none)."""
    table = np.array([n or "—" for n in names] or ["—"], dtype=object)
    return table[codes]
