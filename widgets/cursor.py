"""CursorView: a subscription's cursor over the ledger, entry by entry.

Answers "what exactly is acknowledged?" and "why is my backlog not zero?". The topic's
entries are drawn as a strip, each cell coloured by its state for this subscription:
acknowledged up to the mark-delete position, individually acknowledged above it (the
"holes" Pulsar keeps as ranges), a batch with only some of its messages acknowledged
(batch-index acks; hover shows which indexes are still pending), delivered but not
acknowledged, read but owed to nobody (waiting in the replay set for redelivery: what-if
mode only, where the core's pending acks are known), or not read yet (at or after the read
position). A cluster reports no pending acks, so there a read, unacknowledged entry may be
delivered or waiting in the replay set: the view says "read, unacked" and gives the
subscription's own counts (``unackedMessages``, ``msgInReplay``). Two lines mark the
mark-delete and read positions; the numbers (backlog, holes) come from the same stats.
Everything is read from ``stats-internal`` (``markDeletePosition``, ``readPosition``,
``individuallyDeletedMessages``, ``batchDeletedIndexes``, ``ledgers``).

On a compacted topic a dashed line marks the compaction horizon (the ``__compaction``
cursor's mark-delete), and a cross each entry the compacted ledger leaves out, an open
diamond each batch it keeps with some messages compacted out (``compactedLedger``'s
``compactedOutEntries`` and ``compactedOutBatchIndexes``, which pulsarlab serves): what a
``read_compacted`` reader skips, whatever this subscription's cursor says about the entry.
"""

from __future__ import annotations

from typing import Any

import ipywidgets
import numpy as np
import plotly.graph_objects as go

from .base import View
from .pulsar_stats import (
    Position,
    format_position,
    parse_batch_bits,
    parse_position,
    parse_range_set,
)
from .source import BrokerEvent, Snapshot, Source, stepped_colorscale
from .stepper import Stepper

__all__ = ["CELL_STATES", "CursorView"]

CELL_STATES = (
    "acked", "individually acked", "batch partly acked", "delivered, unacked",
    "read, awaiting redelivery", "unread",
)
"""Strip cell states, in the order of their code in :attr:`CursorView.states`."""

READ_UNACKED = "read, unacked (delivered or in replay)"
"""State 3's name where the pending acks are unknown (a cluster): delivered or in replay."""

_COLORS = ("#c8e6c9", "#2e7d32", "#9ccc65", "#ffb74d", "#e57373", "#90a4ae")
_COMPACTION = "#6a1b9a"
_COMPACTION_CURSOR = "__compaction"




def _label_anchor(x: float, cells: int) -> str:
    """Where a line's label hangs: beside the line near an end of the strip (a centred label
    would be cut by the figure's edge), centred on it elsewhere."""
    fraction = (x + 0.5) / cells
    if fraction < 0.1:
        return "left"
    return "right" if fraction > 0.9 else "center"


class CursorView(View):
    """The ledger as a strip: mark-delete, read position, holes, batch-index acks."""

    _history_fields = ("positions", "states", "mark_delete", "read_position", "holes",
                       "batch_bits", "pending", "backlog", "changed", "horizon",
                       "compacted_out_ranges", "compacted_out_batches", "unacked",
                       "in_replay")

    def __init__(
        self,
        source: Source,
        *,
        topic: str | None = None,
        max_entries: int = 2000,
        controls: bool = True,
        stepper: Stepper | None = None,
    ) -> None:
        super().__init__(source, stepper=stepper)
        self.topic = topic
        self.max_entries = max_entries
        self.positions: list[Position] = []
        self.states = np.zeros(0, dtype=np.int8)
        self.mark_delete: Position | None = None
        self.read_position: Position | None = None
        self.holes: list[tuple[Position, Position]] = []
        self.batch_bits: dict[Position, int] = {}
        self.pending: set[Position] | None = None
        self.backlog = 0
        self.unacked: int | None = None
        """The subscription's ``unackedMessages`` (its stats; ``None``: not reported)."""
        self.in_replay: int | None = None
        """The subscription's ``msgInReplay`` (its stats; ``None``: not reported)."""
        self.changed: list[int] = []
        """Indexes (into :attr:`positions`) of the cells whose state changed in the step."""
        self.horizon: Position | None = None
        """The compaction horizon (``None``: the topic was never compacted)."""
        self.compacted_out_ranges: list[tuple[Position, Position]] = []
        """Entries up to the horizon the compacted ledger leaves out, as ranges."""
        self.compacted_out_batches: dict[Position, int] = {}
        """Batches the compacted ledger keeps with some messages out (bits set: out)."""
        self.fig = go.FigureWidget(
            data=[go.Heatmap(
                zmin=0, zmax=len(CELL_STATES), colorscale=stepped_colorscale(_COLORS),
                showscale=False,
                hoverinfo="text", xgap=1,
            ), go.Scatter(
                name="changed in this step", mode="markers", hoverinfo="skip", meta="legend",
                marker={"symbol": "square-open", "size": 18, "color": "#d50000",
                        "line": {"width": 2}},
            ), go.Scatter(
                name="left out by compaction", mode="markers", hoverinfo="skip",
                marker={"symbol": "x", "size": 11, "color": _COMPACTION},
            ), go.Scatter(
                name="batch partly compacted out", mode="markers", hoverinfo="skip",
                marker={"symbol": "diamond-open", "size": 13, "color": _COMPACTION},
            )] + [go.Scatter(  # colour keys of the cell states, in the legend only
                name=name, x=[None], y=[None], mode="markers", meta="legend",
                hoverinfo="skip", marker={"symbol": "square", "size": 12, "color": color},
            ) for name, color in zip(CELL_STATES, _COLORS, strict=True)],
            layout=go.Layout(
                height=270, margin={"l": 20, "r": 50, "t": 50, "b": 40}, showlegend=True,
                legend={"orientation": "h", "y": -0.45, "x": 0, "font": {"size": 11}},
                title={"text": "cursor", "font": {"size": 14}},
                yaxis={"visible": False}, xaxis={"title": "entry (ledger:entry)"},
            ),
        )
        self.table = ipywidgets.HTML()
        self._bind([self.fig, self.table], controls=controls)

    # -- state ----------------------------------------------------------------------------

    @property
    def strip(self) -> list[tuple[Position, str]]:
        """Each drawn entry with its state name."""
        return [(p, CELL_STATES[s]) for p, s in zip(self.positions, self.states, strict=True)]

    @property
    def compacted_out(self) -> list[Position]:
        """The drawn entries the compacted ledger leaves out."""
        return [self.positions[i] for i in _compacted_out(self)]

    def summary(self, state: Any = None) -> dict[str, Any]:
        st = self if state is None else state
        counts = np.bincount(st.states, minlength=len(CELL_STATES))
        compaction = {} if st.horizon is None else {
            "compaction_horizon": format_position(st.horizon),
            "compacted_out": len(_compacted_out(st)),
            "partly_compacted_batches": sum(p in st.compacted_out_batches
                                            for p in st.positions),
        }
        return {**compaction,
            "mark_delete": format_position(st.mark_delete) if st.mark_delete else None,
            "read_position": format_position(st.read_position) if st.read_position else None,
            "holes": len(st.holes),
            "individually_acked": int(counts[1]),
            "partial_batches": int(counts[2]),
            "delivered_unacked": int(counts[3]),
            "awaiting_redelivery": int(counts[4]),
            "unread": int(counts[5]),
            "backlog": st.backlog,
        }

    def _update(self, snapshot: Snapshot, events: list[BrokerEvent]) -> None:
        topic = self.topic or next(iter(snapshot.internal), None)
        internal = snapshot.internal.get(topic) if topic else None
        cursor = snapshot.cursor(self.source.subscription, topic)
        sub = snapshot.subscription(self.source.subscription, topic) or {}
        self.backlog = int(sub.get("msgBacklog") or 0)
        self.unacked, self.in_replay = sub.get("unackedMessages"), sub.get("msgInReplay")
        if not internal or not cursor:
            self.positions, self.states = [], np.zeros(0, dtype=np.int8)
            return
        self.mark_delete = parse_position(cursor["markDeletePosition"])
        self.read_position = parse_position(cursor["readPosition"])
        self.holes = parse_range_set(cursor.get("individuallyDeletedMessages", ""))
        self.batch_bits = {
            parse_position(p): parse_batch_bits(bits)
            for p, bits in (cursor.get("batchDeletedIndexes") or {}).items()
        }
        compaction = (internal.get("cursors") or {}).get(_COMPACTION_CURSOR)
        compacted = internal.get("compactedLedger") or {}
        self.horizon = parse_position(compaction["markDeletePosition"]) if compaction else None
        self.compacted_out_ranges = parse_range_set(compacted.get("compactedOutEntries", ""))
        self.compacted_out_batches = {
            parse_position(p): parse_batch_bits(bits)
            for p, bits in (compacted.get("compactedOutBatchIndexes") or {}).items()
        }
        positions = [
            (int(ledger["ledgerId"]), e)
            for ledger in internal.get("ledgers") or ()
            for e in range(int(ledger.get("entries") or 0))
        ]
        start = 0
        if len(positions) > self.max_entries:
            first_unacked = next(
                (i for i, p in enumerate(positions) if p > self.mark_delete), len(positions)
            )
            start = max(0, min(first_unacked - 5, len(positions) - self.max_entries))
        self.pending = (
            {p for ps in snapshot.pending.values() for p in ps}
            if snapshot.pending is not None else None
        )
        before = dict(zip(self.positions, self.states.tolist(), strict=True))
        self.positions = positions[start:start + self.max_entries]
        self.states = np.fromiter(
            (self._state(p) for p in self.positions), dtype=np.int8, count=len(self.positions)
        )
        self.changed = [i for i, (p, state) in enumerate(zip(self.positions, self.states,
                                                                 strict=True))
                        if before and before.get(p) != state]

    def _state(self, position: Position) -> int:
        if self.mark_delete is not None and position <= self.mark_delete:
            return 0
        if any(lower < position <= upper for lower, upper in self.holes):
            return 1
        if position in self.batch_bits:
            return 2
        if self.read_position is not None and position < self.read_position:
            return 4 if self.pending is not None and position not in self.pending else 3
        return 5

    # -- drawing --------------------------------------------------------------------------

    def _hover(self, st: Any, position: Position, state: int) -> str:
        text = f"{format_position(position)}: {_state_names(st)[state]}"
        bits = st.batch_bits.get(position)
        if bits is not None:
            pending = [i for i in range(bits.bit_length()) if bits >> i & 1]
            text += f" — indexes still unacked: {pending}"
        if any(lower < position <= upper for lower, upper in st.compacted_out_ranges):
            text += " — left out by compaction: a read_compacted reader skips it"
        gone = st.compacted_out_batches.get(position)
        if gone is not None:
            indexes = [i for i in range(gone.bit_length()) if gone >> i & 1]
            text += f" — compaction left out its messages {indexes}"
        return text

    def draw(self, st: Any) -> None:
        n = len(st.positions)
        index = {p: i for i, p in enumerate(st.positions)}
        shapes, notes = [], []
        if st.horizon is not None:
            x = self._line_x(st, st.horizon, index, True)
            if x is not None:
                shapes.append({"type": "line", "x0": x, "x1": x, "y0": -0.9, "y1": 0.9,
                               "line": {"color": _COMPACTION, "width": 2, "dash": "dash"}})
                notes.append({"x": x, "y": 0.9, "text": "compaction horizon",
                              "showarrow": False, "font": {"color": _COMPACTION},
                              "yshift": 12, "xanchor": "right"})
        for label, position, after, color in (
            ("mark-delete", st.mark_delete, True, "#1b5e20"),
            ("read", st.read_position, False, "#0d47a1"),
        ):
            x = self._line_x(st, position, index, after)
            if x is not None:
                shapes.append({"type": "line", "x0": x, "x1": x, "y0": -0.7, "y1": 0.7,
                               "line": {"color": color, "width": 3}})
                notes.append({"x": x, "y": 0.7 if after else -0.7, "text": label,
                              "showarrow": False, "font": {"color": color},
                              "yshift": 10 if after else -10,
                              "xanchor": _label_anchor(x, max(n, 10))})
        for i in range(1, n):
            if st.positions[i][0] != st.positions[i - 1][0]:
                shapes.append({"type": "line", "x0": i - 0.5, "x1": i - 0.5, "y0": -0.5,
                               "y1": 0.5, "line": {"color": "#424242", "dash": "dot"}})
                notes.append({"x": i - 0.5, "y": -0.5, "text": f"ledger {st.positions[i][0]}",
                              "showarrow": False, "yshift": -12, "font": {"size": 10}})
        with self.fig.batch_update():
            heat = self.fig.data[0]
            heat.z = (st.states.astype(np.float32) + 0.5).reshape(1, n)
            heat.x = np.arange(n)
            heat.hovertext = [[self._hover(st, p, s) for p, s in zip(st.positions, st.states,
                                                                  strict=True)]]
            for trace, name in zip(self.fig.data[-len(CELL_STATES):], _state_names(st),
                                   strict=True):
                trace.name = name
            self.fig.data[1].x = list(st.changed)
            self.fig.data[1].y = [0] * len(st.changed)
            for trace, xs in ((self.fig.data[2], _compacted_out(st)),
                              (self.fig.data[3], [i for i, p in enumerate(st.positions)
                                                  if p in st.compacted_out_batches])):
                trace.x, trace.y, trace.showlegend = xs, [0] * len(xs), bool(xs)
            self.fig.layout.xaxis.range = [-0.5, max(n, 10) - 0.5]
            self.fig.layout.xaxis.dtick = 1 if n <= 30 else None
            # ticks name the entries that exist, as the text and the table do (no 6..9)
            self.fig.layout.xaxis.tickvals = list(range(n)) if n <= 30 else None
            self.fig.layout.xaxis.ticktext = ([format_position(p) for p in st.positions]
                                              if n <= 30 else None)
            self.fig.layout.yaxis.range = [-0.9, 0.9]
            self.fig.layout.shapes = shapes
            self.fig.layout.annotations = notes
            summary = self.summary(st)
            self.fig.layout.title.text = (
                f"cursor of {self.source.subscription!r}: mark-delete {summary['mark_delete']}, "
                f"read {summary['read_position']}, backlog {st.backlog}"
            )
        self.table.value = self._table_html(st)

    def _line_x(
        self, st: Any, position: Position | None, index: dict[Position, int], after: bool
    ) -> float | None:
        """x of the line just after ``position`` (mark-delete) or just before it (read)."""
        if position is None or not st.positions:
            return None
        if position in index:
            return index[position] + (0.5 if after else -0.5)
        if position < st.positions[0]:
            return -0.5
        return len(st.positions) - 0.5

    def _table_html(self, st: Any) -> str:
        s = self.summary(st)  # the cell states' colour keys are the figure's legend
        compaction = "" if st.horizon is None else (
            f"<br>compaction horizon <b>{s['compaction_horizon']}</b> · left out by "
            f"compaction <b>{s['compacted_out']}</b> · batches partly compacted out "
            f"<b>{s['partly_compacted_batches']}</b> (a read_compacted reader skips them)"
        )
        if st.pending is None:  # a cluster: which read entries were delivered is unknown
            unacked = (f"read, unacked <b>{s['delivered_unacked']}</b> (the subscription's "
                       f"stats: unacked <b>{_count(st.unacked)}</b>, in replay "
                       f"<b>{_count(st.in_replay)}</b>)")
        else:
            unacked = (f"delivered, unacked <b>{s['delivered_unacked']}</b> · awaiting "
                       f"redelivery <b>{s['awaiting_redelivery']}</b>")
        return (
            f"backlog <b>{s['backlog']}</b> · holes (individually acked ranges) "
            f"<b>{s['holes']}</b> · partly acked batches <b>{s['partial_batches']}</b> · "
            f"{unacked} · unread <b>{s['unread']}</b>{compaction}"
        )


def _state_names(st: Any) -> tuple[str, ...]:
    """The cell states' names as ``st`` can tell them: without pending acks (a cluster), a
    read, unacknowledged entry is delivered or in replay."""
    if st.pending is not None:
        return CELL_STATES
    return (*CELL_STATES[:3], READ_UNACKED, *CELL_STATES[4:])


def _count(value: Any) -> str:
    return "—" if value is None else str(value)


def _compacted_out(st: Any) -> list[int]:
    """Indexes (into ``st.positions``) of the entries the compacted ledger leaves out."""
    ranges = st.compacted_out_ranges
    return [i for i, p in enumerate(st.positions)
            if any(lower < p <= upper for lower, upper in ranges)]
