"""HashRangeView: the Key_Shared key space split among consumers, with keys as ticks.

Answers "which consumer gets my key?" and "which keys move when I add a consumer?". The
top row is the 0..65535 slot line cut into each consumer's inclusive ranges exactly as the
subscription stats report them (``keyHashRanges``: AUTO_SPLIT's halving, or STICKY's
declared ranges with their gaps); the bottom row shows keys at their slot, coloured by
owner. A key typed in the box shows its hash, slot and owner. In what-if mode, typing a
consumer name highlights the keys that WOULD move if it joined (or, if it is connected,
left) — computed on a copy of the broker's own selector — and the buttons make the change,
animating the split or merge. (A consistent-hashing subscription reports ranges on the
31-bit ring; they are drawn on that axis — see :class:`~.hash_ring.HashRingView`.)
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import ipywidgets
import plotly.graph_objects as go

from pulsarlab.broker.errors import PulsarLabError

from .base import View
from .controls import parse_keys
from .keys import KeyInfo, key_info, moved_keys, preview_change
from .pulsar_stats import SLOT_SPACE, key_hash_space, subscription_key_hash_ranges
from .source import BrokerEvent, Snapshot, Source
from .stepper import Stepper

__all__ = ["HashRangeView", "parse_hash_ranges"]

DEFAULT_KEYS = tuple(f"key-{i}" for i in range(16))
"""The keys a view draws when neither the caller nor a what-if core's messages name any."""


def view_keys(source: Source, keys: Sequence[str | None] | None) -> list[str | None]:
    """The keys a view draws: ``keys`` when given; else the keys a what-if core has
    published (each once, in order; tutorial 02's ``A B C D``); else :data:`DEFAULT_KEYS`."""
    if keys is not None:
        return list(keys)
    published = getattr(source, "published_keys", ()) if source.simulated else ()
    return list(published or DEFAULT_KEYS)
_NAMED_KEYS = 8
"""At most this many keys are labelled with their names on the plot."""
_HIGHLIGHT = "#d50000"
_MOVED = "#ff6d00"


def parse_hash_ranges(text: str) -> list[tuple[int, int]]:
    """``"0-16383, 32768-49151"`` → ``[(0, 16383), (32768, 49151)]``."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if part:
            start, _, end = part.partition("-")
            out.append((int(start), int(end)))
    return out


def _key_label(key: str | None) -> str:
    return "(no key)" if key is None else key


def _alternating(xs: Sequence[float]) -> list[str]:
    """Text positions above and below in turn, left to right, so neighbours' names do
    not overlap."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    places = [""] * len(xs)
    for rank, i in enumerate(order):
        places[i] = "top center" if rank % 2 == 0 else "bottom center"
    return places


class HashRangeView(View):
    """Hash ranges per consumer (AUTO_SPLIT or STICKY) with keys coloured by owner."""

    _history_fields = ("mode", "ranges", "space", "key_owners", "highlighted", "last_moved",
                       "step_moved", "message_keys")

    def __init__(
        self,
        source: Source,
        keys: Sequence[str | None] | None = None,
        *,
        topic: str | None = None,
        controls: bool = True,
        stepper: Stepper | None = None,
    ) -> None:
        super().__init__(source, stepper=stepper)
        self.message_keys = view_keys(source, keys)
        self.topic = topic
        self.ranges: dict[str, list[tuple[int, int]]] = {}
        self.space = SLOT_SPACE
        self.mode: str | None = None
        self.key_owners: dict[str | None, str | None] = {}
        self.highlighted: list[str | None] = []
        self.last_moved: list[str | None] = []
        self.step_moved: list[str | None] = []
        """Keys whose owner changed in the step shown (outlined in the picture)."""
        self.fig = go.FigureWidget(
            data=[
                go.Bar(name="ranges", orientation="h", hoverinfo="text", showlegend=False),
                go.Scatter(
                    name="keys", mode="markers", hoverinfo="text", showlegend=False,
                    marker={"symbol": "line-ns-open", "size": 22, "line": {"width": 3}},
                ),
                go.Scatter(
                    name="would move", mode="markers", hoverinfo="text",
                    marker={"symbol": "circle-open", "size": 26, "color": _HIGHLIGHT,
                            "line": {"width": 3}},
                ),
                go.Scatter(
                    name="moved in this step", mode="markers", hoverinfo="text",
                    marker={"symbol": "square-open", "size": 24, "color": _MOVED,
                            "line": {"width": 3, "color": _MOVED}},
                ),
                go.Scatter(
                    name="looked-up key", mode="markers+text", hoverinfo="text",
                    textposition="top center", showlegend=False, cliponaxis=False,
                    marker={"symbol": "triangle-down", "size": 14, "color": "#000000"},
                ),
            ],
            layout=go.Layout(
                height=280, margin={"l": 60, "r": 50, "t": 50, "b": 40}, barmode="overlay",
                title={"text": "Key_Shared hash ranges", "font": {"size": 14}},
                xaxis={"range": [0, SLOT_SPACE], "title": "slot = hash % 65536"},
                yaxis={"categoryorder": "array", "categoryarray": ["keys", "ranges"],
                       "range": [-0.6, 1.6], "fixedrange": True},
                legend={"orientation": "h", "y": -0.3},
            ),
        )
        self.table = ipywidgets.HTML()
        self.lookup_box = ipywidgets.Text(
            placeholder="type a key", description="key", continuous_update=False
        )
        self.lookup_result = ipywidgets.HTML()
        self.lookup_box.observe(lambda _c: self._redraw(), names="value")
        children: list[ipywidgets.Widget] = [
            self.fig, ipywidgets.HBox([self.lookup_box, self.lookup_result]), self.table,
        ]
        if source.simulated and controls and not self.composed:
            children.append(self._what_if_controls())
        self._bind(children)

    # -- what-if controls -----------------------------------------------------------------

    def _what_if_controls(self) -> ipywidgets.Widget:
        self.name_box = ipywidgets.Text(
            description="consumer", placeholder="name", continuous_update=True
        )
        self.ranges_box = ipywidgets.Text(
            description="ranges", placeholder="STICKY only: 0-16383, 32768-49151"
        )
        self.name_box.observe(lambda _c: self._act(self.preview, record=False), names="value")
        self.ranges_box.observe(lambda _c: self._act(self.preview, record=False), names="value")
        add = ipywidgets.Button(description="add consumer", icon="plus",
                                layout={"width": "auto"})
        add.on_click(lambda _b: self._act(self.add_consumer))
        remove = ipywidgets.Button(description="remove consumer", icon="minus",
                                   layout={"width": "auto"})
        remove.on_click(lambda _b: self._act(self.remove_consumer))
        publish = ipywidgets.Button(description="publish these keys", icon="paper-plane",
                                    layout={"width": "auto"})
        publish.on_click(lambda _b: self._act(self.require_whatif().publish, self.message_keys))
        keys_box = ipywidgets.Text(value=", ".join(k or "-" for k in self.message_keys),
                                   description="keys", continuous_update=False)

        def set_keys(_change: Any) -> None:
            self.message_keys = parse_keys(keys_box.value)
            self.refresh()

        keys_box.observe(set_keys, names="value")
        return ipywidgets.VBox([
            ipywidgets.HBox([self.name_box, self.ranges_box, add, remove]),
            ipywidgets.HBox([keys_box, publish]),
        ])

    def preview(
        self, name: str | None = None, hash_ranges: Sequence[tuple[int, int]] | None = None,
        *, record: bool = True,
    ) -> list[str | None]:
        """Highlight (and return) the keys that would move if ``name`` joined or left.

        What-if only: it runs the change on a copy of the broker's selector. The preview
        is a step of the history (``"preview C5"``) unless ``record`` is false.
        """
        if self.whatif is None:
            return []
        name = (name if name is not None else self.name_box.value).strip()
        if hash_ranges is None:
            hash_ranges = parse_hash_ranges(self.ranges_box.value)
        selector = self.whatif.selector()
        if not name or selector is None:
            self.highlighted = []
        else:
            try:
                self.highlighted = preview_change(
                    selector, self.message_keys, name, hash_ranges or ()
                )
            except PulsarLabError:
                self.highlighted = []
                raise
        if record:
            self.step_moved = []  # a preview moves nothing
            self._record(f"preview {name}" if name else "preview cleared")
        elif self.pinned is None:
            with self.hold_sync():
                self.draw(self)
        return self.highlighted

    def add_consumer(
        self, name: str | None = None, hash_ranges: Sequence[tuple[int, int]] | None = None
    ) -> None:
        """What-if: connect ``name`` (STICKY: with ``hash_ranges``)."""
        name = (name if name is not None else self.name_box.value).strip()
        if hash_ranges is None:
            hash_ranges = parse_hash_ranges(self.ranges_box.value)
        self.highlighted = []
        self.require_whatif().add_consumer(name, hash_ranges=hash_ranges or None)

    def remove_consumer(self, name: str | None = None) -> None:
        """What-if: disconnect ``name``."""
        name = (name if name is not None else self.name_box.value).strip()
        self.highlighted = []
        self.require_whatif().remove_consumer(name)

    # -- state ----------------------------------------------------------------------------

    def owner_of_hash(self, h: int, state: Any = None) -> str | None:
        """The consumer whose reported range holds ``h`` (its slot, on the slot line) in
        ``state`` (default: the latest)."""
        st = self if state is None else state
        point = h % SLOT_SPACE if st.space == SLOT_SPACE else h
        for name, ranges in st.ranges.items():
            if any(start <= point <= end for start, end in ranges):
                return name
        return None

    def lookup(self, key: str | None) -> KeyInfo:
        """The key's hash, slot and owner right now."""
        info = key_info(key)
        return KeyInfo(key, info.hash, info.slot, self._owner(info.hash))

    def _lookup(self, st: Any, key: str | None) -> KeyInfo:
        """The key's hash, slot and owner in ``st``: the owner the step computed for one
        of its keys, else the one its ranges give."""
        info = key_info(key)
        owner = (st.key_owners[key] if key in st.key_owners
                 else self.owner_of_hash(info.hash, st))
        return KeyInfo(key, info.hash, info.slot, owner)

    def _owner(self, h: int) -> str | None:
        selector = self.whatif.selector() if self.whatif else None
        if selector is not None:
            consumer = selector.select(h)
            return consumer.consumer_name if consumer is not None else None
        return self.owner_of_hash(h)

    def key_table(self) -> list[KeyInfo]:
        return [self.lookup(k) for k in self.message_keys]

    def summary(self, state: Any = None) -> dict[str, Any]:
        st = self if state is None else state
        return {
            "mode": st.mode,
            "space": st.space,
            "ranges": {n: list(r) for n, r in st.ranges.items()},
            "shares": {n: self._share(st, r) for n, r in st.ranges.items()},
            "key_owners": dict(st.key_owners),
            "last_moved": list(st.last_moved),
        }

    def _share(self, st: Any, ranges: Sequence[tuple[int, int]]) -> float:
        """Fraction of the key space in ``ranges`` (AUTO_SPLIT's top bound 65536 is no slot)."""
        top = st.space - 1
        return sum(min(e, top) - s + 1 for s, e in ranges if s <= top) / st.space

    def _update(self, snapshot: Snapshot, events: list[BrokerEvent]) -> None:
        sub = snapshot.subscription(self.source.subscription, self.topic) or {}
        self.mode = sub.get("keySharedMode")
        ranges = subscription_key_hash_ranges(sub)
        if ranges != self.ranges:
            self.highlighted = []  # a preview of the change before this one
        self.ranges = ranges
        self.space = key_hash_space(self.ranges)
        owners = {k: self._owner(key_info(k).hash) for k in self.message_keys}
        before = self.key_owners
        self.step_moved = []
        if before and set(before) == set(owners):
            moved = moved_keys(before, owners)
            if moved:
                self.last_moved = self.step_moved = moved
        self.key_owners = owners

    # -- drawing --------------------------------------------------------------------------

    def _x(self, st: Any, info: KeyInfo) -> int:
        return info.slot if st.space == SLOT_SPACE else info.hash

    def draw(self, st: Any) -> None:
        palette = self.source.palette
        bars = sorted(
            (start, end, name) for name, ranges in st.ranges.items() for start, end in ranges
        )
        infos = [key_info(k, st.key_owners.get(k)) for k in st.message_keys]
        moving = [key_info(k) for k in st.highlighted]
        moved = [key_info(k, st.key_owners.get(k)) for k in st.step_moved]
        looked_up = self.lookup_box.value
        axis = "slot = hash % 65536" if st.space == SLOT_SPACE else "31-bit hash (ring)"
        old_bounds = tuple(self.fig.data[0].base or ())
        new_bounds = tuple(b[0] for b in bars)
        # animate a split or merge as it happens; plotly.js cannot animate bars away (a
        # shrinking array blanks the figure), and scrubbing the history jumps
        changed = (old_bounds != new_bounds and len(new_bounds) >= len(old_bounds)
                   and self.stepper.animating)
        batch = self.fig.batch_animate(duration=500) if changed else self.fig.batch_update()
        with batch:
            ranges_trace, keys_trace, moving_trace, moved_trace, lookup_trace = self.fig.data
            ranges_trace.base = [b[0] for b in bars]
            ranges_trace.x = [b[1] - b[0] + 1 for b in bars]
            ranges_trace.y = ["ranges"] * len(bars)
            ranges_trace.marker.color = [palette.color(b[2]) for b in bars]
            ranges_trace.text = [f"{b[2]} [{b[0]}, {b[1]}]" for b in bars]
            ranges_trace.textposition = "inside"
            ranges_trace.hovertext = [
                f"{b[2]}: [{b[0]}, {b[1]}] — {self._share(st, [b[:2]]):.1%}" for b in bars
            ]
            keys_trace.x = [self._x(st, i) for i in infos]
            keys_trace.y = ["keys"] * len(infos)
            keys_trace.marker.color = [palette.color(i.owner) for i in infos]
            keys_trace.hovertext = [_describe(i) for i in infos]
            # a few keys are named on the plot (tutorial 02: "every A goes to one consumer");
            # sixteen sample keys would only be a smudge of letters
            named = len(infos) <= _NAMED_KEYS
            keys_trace.mode = "markers+text" if named else "markers"
            keys_trace.text = [_key_label(i.key) for i in infos] if named else None
            keys_trace.textposition = _alternating([self._x(st, i) for i in infos])
            moving_trace.x = [self._x(st, i) for i in moving]
            moving_trace.y = ["keys"] * len(moving)
            moving_trace.hovertext = [f"{i.key} would move" for i in moving]
            moved_trace.x = [self._x(st, i) for i in moved]
            moved_trace.y = ["keys"] * len(moved)
            moved_trace.hovertext = [f"{i.key} moved to {i.owner}" for i in moved]
            if looked_up:
                info = self._lookup(st, looked_up)
                lookup_trace.x, lookup_trace.y = [self._x(st, info)], ["keys"]
                lookup_trace.text = [f"{looked_up} → {info.owner or 'nobody'}"]
                # beside the marker near an edge: centred, a long key ran off the plot
                where = self._x(st, info) / self.space
                lookup_trace.textposition = ("top right" if where < 0.25 else
                                             "top left" if where > 0.75 else "top center")
                lookup_trace.hovertext = [_describe(info)]
            else:
                lookup_trace.x, lookup_trace.y, lookup_trace.text = [], [], []
            self.fig.layout.xaxis.range = [0, st.space]
            self.fig.layout.xaxis.title.text = axis
            self.fig.layout.title.text = (
                f"Key_Shared {st.mode or ''} hash ranges — {len(st.ranges)} consumer(s)"
            )
        self.table.value = self._table_html(st)
        self._show_lookup(st)

    def _table_html(self, st: Any) -> str:
        rows = []
        for name, ranges in st.ranges.items():
            share = self._share(st, ranges)
            keys = [k for k, o in st.key_owners.items() if o == name]
            rows.append(
                f"<tr><td style='color:{self.source.palette.color(name)}'>"
                f"<b>{html.escape(name)}</b></td>"
                f"<td>{', '.join(f'[{s}, {e}]' for s, e in ranges)}</td>"
                f"<td>{share:.1%}</td><td>{len(keys)}</td></tr>"
            )
        unowned = [k for k, o in st.key_owners.items() if o is None]
        note = ""
        if unowned and st.ranges:
            note = (f"<p>{len(unowned)} key(s) fall in no consumer's range: their messages wait "
                    "in the replay set until a consumer covers them.</p>")
        moved = ""
        if st.last_moved:
            moved = ("<p>last change moved: "
                     + ", ".join(html.escape(str(k)) for k in st.last_moved) + "</p>")
        return (
            "<table><tr><th>consumer</th><th>ranges (inclusive)</th><th>share</th>"
            f"<th>keys</th></tr>{''.join(rows)}</table>{note}{moved}"
        )

    def _show_lookup(self, st: Any) -> None:
        text = self.lookup_box.value
        if not text:
            self.lookup_result.value = ""
            return
        info = self._lookup(st, text)
        self.lookup_result.value = html.escape(_describe(info))


def _describe(info: KeyInfo) -> str:
    return (f"{info.key!r} → hash {info.hash}, slot {info.slot}, "
            f"owner {info.owner or 'nobody'}")

