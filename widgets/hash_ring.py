"""HashRingView: Key_Shared consistent hashing as a ring (the default selector since 2.10).

Answers "how much of the key space does each consumer own?" and "which keys move when a
consumer joins or leaves?" — on a ring a newcomer takes a little from everybody, unlike
AUTO_SPLIT's halving. The ring is the one of the release the broker behaves like (its
``pulsar_version``, or the view's own ``pulsar_version=`` override; 3.3 when a source's
stats do not say): 3.x's 31-bit ring, or 4.0's ``[1, 65535]`` (PIP-379), always drawn as
0°..360°. Each consumer's points (100 by default,
``murmur(name + "\\0" + nameIndex + "\\0" + i)`` since 3.3.2 — reduced to ``% 65535 + 1`` in
4.0 —, ``murmur(name + "\\0" + i)`` before) sit on the outer circle; the band inside is
one arc per run of ring the same consumer owns (a legend names the colours); keys sit on
the inner circle, coloured by owner, and a key typed in the lookup box is marked and
named. After a change, the stretches of ring that changed owner are marked in black on a
track between the band and the keys (apart from the band, which stays readable with
hundreds of runs), and the keys that moved are ringed. The table gives each consumer's
exact keyspace share (they sum to 1) from the broker's own selector. Typing a consumer
name highlights the keys that would move if it joined (or left); in what-if mode the
buttons make the change. :meth:`HashRingView.zoom` shows one sector of the ring. The ring
is a pure function of the consumer names, so live mode rebuilds it with the broker's
selector class from the names in stats.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Sequence
from typing import Any

import ipywidgets
import plotly.graph_objects as go

from pulsarlab.broker.pulsar_version import DEFAULT_PULSAR_VERSION, PulsarVersion
from pulsarlab.broker.selectors import (
    DEFAULT_NUMBER_OF_POINTS,
    INT_MAX,
    ConsistentHashingStickyKeyConsumerSelector40,
    ConsistentHashRing,
    HashRange,
)

from .base import View
from .hash_range import view_keys
from .keys import (
    HashRing,
    key_info,
    key_space,
    moved_keys,
    owners,
    preview_change,
    ring_of,
    ring_points,
)
from .source import BrokerEvent, Snapshot, Source
from .stepper import Stepper

__all__ = ["Arc", "HashRingView", "changed_arcs", "degrees", "merge_arcs"]

_HIGHLIGHT = "#d50000"
_CHANGED = "#000000"
_BAND = (0.80, 0.18)
"""(inner radius, thickness) of the owners' band: one arc per run of ring one consumer owns."""
_CHANGED_TRACK = (0.68, 0.08)
"""(inner radius, thickness) of the track inside the band that marks the stretches of ring
that changed owner in the step (drawn apart from the band, so the owners stay readable)."""
_CHANGED_MIN_WIDTH = 1.0
"""Degrees: a changed stretch is often a sliver of a degree; drawn at least this wide —
less when there are many (widened, they would cover more than a quarter of the track)."""
_POINTS_R, _KEYS_R, _LOOKUP_R = 1.04, 0.55, 0.42
_KEY_STEP, _KEY_GAP_DEG = 0.09, 6.0


def _key_radii(angles: dict[str, float]) -> dict[str, float]:
    """Each key's radius: keys whose hashes lie within a few degrees of each other step
    inwards, so every key's diamond shows (eight keys overlapped to fewer on one circle)."""
    radii: dict[str, float] = {}
    placed: list[tuple[float, float]] = []
    for key, angle in sorted(angles.items(), key=lambda item: item[1]):
        taken = {r for a, r in placed
                 if min(abs(a - angle), 360 - abs(a - angle)) < _KEY_GAP_DEG}
        level = 0
        while _KEYS_R - level * _KEY_STEP in taken and level < 3:
            level += 1
        radii[key] = _KEYS_R - level * _KEY_STEP
        placed.append((angle, radii[key]))
    return radii

Arc = tuple[int, int, str]
"""``(start, end, owner)``: an inclusive stretch of the ring and who owns it."""

_RING_33: HashRange = (0, INT_MAX)
"""3.x's key space: the 31-bit hashes."""


def merge_arcs(arcs: Sequence[Arc]) -> list[Arc]:
    """Join neighbouring arcs of the same owner (the ring as runs, not one slice a point)."""
    merged: list[Arc] = []
    for start, end, owner in arcs:
        if merged and merged[-1][2] == owner and merged[-1][1] + 1 == start:
            merged[-1] = (merged[-1][0], end, owner)
        else:
            merged.append((start, end, owner))
    return merged


def changed_arcs(before: Sequence[Arc], after: Sequence[Arc]) -> list[tuple[int, int, str, str]]:
    """Stretches whose owner differs between two arc lists: ``(start, end, old, new)``."""
    if not before or not after:
        return []
    end = max(before[-1][1], after[-1][1]) + 1  # both cover the whole ring
    cuts = sorted({a[0] for a in before} | {a[0] for a in after} | {end})
    out: list[tuple[int, int, str, str]] = []
    i = j = 0
    for lo, hi in itertools.pairwise(cuts):
        while before[i][1] < lo:
            i += 1
        while after[j][1] < lo:
            j += 1
        old, new = before[i][2], after[j][2]
        if old != new:
            if out and out[-1][1] + 1 == lo and out[-1][2:] == (old, new):
                out[-1] = (out[-1][0], hi - 1, old, new)
            else:
                out.append((lo, hi - 1, old, new))
    return out


def degrees(h: int, key_space: HashRange = _RING_33) -> float:
    """Angle of a hash on a ring covering ``key_space`` (0° at the top, clockwise): 3.x's
    31-bit ring by default, ``(1, 65535)`` for 4.0's."""
    first, last = key_space
    return (h - first) * 360.0 / (last - first + 1)


def _tick_labels(key_space: HashRange) -> list[str]:
    """The hashes at 0°, 90°, 180° and 270° (3.x's as powers of two)."""
    if key_space == _RING_33:
        return ["0", "2^29", "2^30", "3·2^29"]
    first, last = key_space
    return [f"{first + q * (last - first + 1) // 4:,}" for q in range(4)]


def _ring_name(version: PulsarVersion, key_space: HashRange) -> str:
    """What the title calls the ring: nothing extra for the default 3.3, else the release
    (and, off the 31-bit ring, how many slots it has)."""
    if version == PulsarVersion.parse(DEFAULT_PULSAR_VERSION):
        return "consistent-hash ring"
    if key_space == _RING_33:
        return f"Pulsar {version} consistent-hash ring"
    first, last = key_space
    # Short: the title must fit the figure's width beside the step's counts.
    return f"Pulsar {version} ring, {last - first + 1:,} slots"


class HashRingView(View):
    """Consumers' points on the consistent-hash ring, their shares, and keys."""

    _history_fields = ("consumers", "points", "shares", "key_owners", "highlighted",
                       "last_moved", "step_moved", "arcs", "changed", "version", "key_space")

    def __init__(
        self,
        source: Source,
        keys: Sequence[str | None] | None = None,
        *,
        points: int | None = None,
        topic: str | None = None,
        controls: bool = True,
        stepper: Stepper | None = None,
        pulsar_version: str | None = None,
    ) -> None:
        """``pulsar_version`` draws that release's ring whatever the source says; without
        it the ring is the source's (a what-if core's setting; 3.3 when the stats alone
        do not tell)."""
        override = PulsarVersion.parse(pulsar_version) if pulsar_version is not None else None
        super().__init__(source, stepper=stepper)
        self.pulsar_version: PulsarVersion | None = override
        """The release asked for in the constructor (``None``: the source's)."""
        self.message_keys = view_keys(source, keys)
        self.topic = topic
        self.points_per_consumer = points
        self.consumers: list[str] = []
        self.points: dict[str, list[int]] = {}
        self.shares: dict[str, float] = {}
        self.key_owners: dict[str | None, str | None] = {}
        self.highlighted: list[str | None] = []
        self.last_moved: list[str | None] = []
        self.step_moved: list[str | None] = []
        """Keys whose owner changed in the step shown."""
        self.arcs: list[Arc] = []
        self.changed: list[tuple[int, int, str, str]] = []
        """Stretches of ring that changed owner in the step shown: (start, end, old, new)."""
        self.sector: tuple[float, float] | None = None
        """The window :meth:`zoom` chose (thetas), whatever step is shown."""
        self.selector: HashRing | None = None
        self.version = PulsarVersion.parse(DEFAULT_PULSAR_VERSION)
        """The release whose ring is drawn (the override, else the source's)."""
        self.key_space: HashRange = _RING_33
        """The selector's inclusive range of sticky key hashes (the whole ring)."""
        self._legend: dict[str, int] = {}
        self.fig = go.FigureWidget(
            data=[
                go.Barpolar(name="owner arcs", hoverinfo="text", showlegend=False,
                            marker={"line": {"width": 0}}),
                go.Scatterpolar(name="consumer points", mode="markers", hoverinfo="text",
                                showlegend=False, marker={"size": 4}),
                go.Scatterpolar(name="keys", mode="markers", hoverinfo="text",
                                showlegend=False, marker={"size": 10, "symbol": "diamond"}),
                go.Scatterpolar(name="would move", mode="markers", hoverinfo="text",
                                marker={"size": 18, "symbol": "circle-open",
                                        "color": _HIGHLIGHT, "line": {"width": 3}}),
                go.Barpolar(name="changed owner in this step", hoverinfo="text",
                            marker={"color": _CHANGED, "line": {"width": 0}}),
                go.Scatterpolar(name="moved in this step", mode="markers", hoverinfo="text",
                                marker={"size": 16, "symbol": "square-open",
                                        "color": "#ff6d00",
                                        "line": {"width": 3, "color": "#ff6d00"}}),
                go.Scatterpolar(name="looked-up key", mode="markers+text", hoverinfo="text",
                                textposition="top center", showlegend=False,
                                marker={"size": 14, "symbol": "star", "color": "#000000"}),
            ],
            layout=go.Layout(
                height=540, margin={"l": 30, "r": 50, "t": 50, "b": 30},
                title={"text": "Key_Shared consistent-hash ring", "font": {"size": 14}},
                polar={
                    "radialaxis": {"visible": False, "range": [0, 1.15]},
                    "angularaxis": {"rotation": 90, "direction": "clockwise",
                                    "tickvals": [0, 90, 180, 270],
                                    "ticktext": _tick_labels(_RING_33)},
                },
                legend={"orientation": "h", "y": -0.05},
            ),
        )
        self.table = ipywidgets.HTML()
        self.lookup_box = ipywidgets.Text(
            placeholder="type a key", description="key", continuous_update=False
        )
        self.lookup_box.observe(lambda _c: self._redraw(), names="value")
        self.name_box = ipywidgets.Text(description="consumer", placeholder="name")
        self.name_box.observe(lambda _c: self._act(self.preview, record=False), names="value")
        row: list[ipywidgets.Widget] = [self.name_box]
        if source.simulated and controls and not self.composed:
            add = ipywidgets.Button(description="add consumer", icon="plus",
                                    layout={"width": "auto"})
            add.on_click(lambda _b: self._act(self._apply, "add"))
            remove = ipywidgets.Button(description="remove consumer", icon="minus",
                                       layout={"width": "auto"})
            remove.on_click(lambda _b: self._act(self._apply, "remove"))
            publish = ipywidgets.Button(description="publish these keys", icon="paper-plane",
                                        layout={"width": "auto"})
            publish.on_click(
                lambda _b: self._act(self.require_whatif().publish, self.message_keys)
            )
            row += [add, remove, publish]
        children: list[ipywidgets.Widget] = [self.fig, self.lookup_box, self.table]
        if not self.composed:  # a picture made of several views has one control block
            children.append(ipywidgets.HBox(row))
        self._bind(children)

    # -- actions --------------------------------------------------------------------------

    def preview(self, name: str | None = None, *, record: bool = True) -> list[str | None]:
        """Highlight (and return) the keys that would move if ``name`` joined or left.

        The preview is a step of the history (``"preview C5"``) unless ``record`` is false.
        """
        name = (name if name is not None else self.name_box.value).strip()
        if not name or self.selector is None:
            self.highlighted = []
        else:
            self.highlighted = preview_change(self.selector, self.message_keys, name)
        if record:
            self.step_moved, self.changed = [], []  # a preview moves nothing
            self._record(f"preview {name}" if name else "preview cleared")
        elif self.pinned is None:
            with self.hold_sync():
                self.draw(self)
        return self.highlighted

    def zoom(self, around: str | int | None = None, width: float = 30.0) -> HashRingView:
        """Show only ``width`` degrees of ring centred on a key (or a hash of the ring);
        ``zoom()`` shows the whole ring again. Returns the view.

        The window is the reader's, not a step's: it stays while the history is scrubbed,
        applies to a pinned step, and the static picture and :meth:`still` show it too."""
        if around is None:
            self.sector = None
        else:
            h = around if isinstance(around, int) else key_info(around, None, self.selector).hash
            centre = degrees(h, self.key_space)
            self.sector = (centre - width / 2, centre + width / 2)
        self._redraw()
        return self

    def _apply(self, what: str) -> None:
        name = self.name_box.value.strip()
        self.highlighted = []
        if what == "add":
            self.require_whatif().add_consumer(name)
        else:
            self.require_whatif().remove_consumer(name)

    # -- state ----------------------------------------------------------------------------

    def summary(self, state: Any = None) -> dict[str, Any]:
        st = self if state is None else state
        return {
            "consumers": list(st.consumers),
            "points": {n: len(p) for n, p in st.points.items()},
            "shares": dict(st.shares),
            "key_owners": dict(st.key_owners),
            "last_moved": list(st.last_moved),
            "step_moved": list(st.step_moved),
            "changed_arcs": len(st.changed),
        }

    def _update(self, snapshot: Snapshot, events: list[BrokerEvent]) -> None:
        sub = snapshot.subscription(self.source.subscription, self.topic) or {}
        names = [str(c.get("consumerName")) for c in sub.get("consumers") or ()]
        count = self.points_per_consumer or int(
            snapshot.settings.get("consistent_hashing_points", DEFAULT_NUMBER_OF_POINTS)
        )
        told = PulsarVersion.parse(
            str(snapshot.settings.get("pulsar_version", DEFAULT_PULSAR_VERSION))
        )
        self.version = self.pulsar_version or told
        selector = None
        if self.whatif is not None and self.version == told:
            real = self.whatif.selector()
            if isinstance(real, ConsistentHashRing | ConsistentHashingStickyKeyConsumerSelector40):
                selector = real  # the ring the broker has, whichever release
        self.selector = selector or ring_of(names, count, self.version)
        self.key_space = key_space(self.selector)
        consumers = [c.consumer_name for c in self.selector.consumers]
        if consumers != self.consumers:
            self.highlighted = []  # a preview of the change before this one
        self.consumers = consumers
        self.points = ring_points(self.selector)
        arcs = merge_arcs(self._ring_arcs())
        self.shares = self._shares(arcs)
        self.changed = changed_arcs(self.arcs, arcs)
        self.arcs = arcs
        now = owners(self.selector, self.message_keys)
        self.step_moved = []
        if self.key_owners and set(self.key_owners) == set(now):
            moved = moved_keys(self.key_owners, now)
            if moved:
                self.last_moved = self.step_moved = moved
        self.key_owners = now

    def _shares(self, arcs: Sequence[Arc]) -> dict[str, float]:
        """Each consumer's exact fraction of the key space: a 3.x ring's own count (shared
        points split by residue), else the ring's runs (a 4.0 point has one owner)."""
        if isinstance(self.selector, ConsistentHashRing):
            return {c.consumer_name: s for c, s in self.selector.keyspace_shares().items()}
        first, last = self.key_space
        counts = dict.fromkeys(self.consumers, 0)
        for start, end, owner in arcs:
            counts[owner] += end - start + 1
        return {name: count / (last - first + 1) for name, count in counts.items()}

    def _ring_arcs(self) -> list[Arc]:
        """Ring slices ``[start, end]`` with the (first) owner of each, wrap-around included."""
        if self.selector is None:
            return []
        ring = self.selector.ring()
        first, last = self.key_space
        arcs: list[Arc] = []
        start = first
        for point, members in ring:
            arcs.append((start, point, members[0].consumer_name))
            start = point + 1
        if ring and start <= last:
            arcs.append((start, last, ring[0][1][0].consumer_name))
        return arcs

    def owner_of_hash(self, h: int, state: Any = None) -> str | None:
        """The owner of a hash of the ring (see :attr:`key_space`) in ``state`` (default:
        the latest)."""
        st = self if state is None else state
        for start, end, owner in st.arcs:
            if start <= h <= end:
                return owner
        return None

    # -- drawing --------------------------------------------------------------------------

    def draw(self, st: Any) -> None:
        palette = self.source.palette
        arcs = st.arcs
        point_names = [n for n, ps in st.points.items() for _ in ps]
        point_hashes = [h for ps in st.points.values() for h in ps]
        sel, space = self.selector, st.key_space
        keys = [key_info(k, st.key_owners.get(k), sel) for k in self.message_keys]
        moving = [key_info(k, None, sel) for k in st.highlighted]
        moved = [key_info(k, st.key_owners.get(k), sel) for k in st.step_moved]
        size = space[1] - space[0] + 1

        def deg(h: int) -> float:
            return degrees(h, space)

        def span(count: int) -> float:  # degrees covered by ``count`` hashes
            return count * 360.0 / size

        for name in st.consumers:
            if name not in self._legend:
                self.fig.add_trace(go.Scatterpolar(
                    name=name, r=[None], theta=[None], mode="markers", legendgroup=name,
                    marker={"size": 12, "symbol": "square", "color": palette.color(name)},
                    meta="legend",
                ))
                self._legend[name] = len(self.fig.data) - 1
        looked_up = self.lookup_box.value
        with self.fig.batch_update():
            band, pts, key_trace, moving_trace, changed, moved_trace, lookup = self.fig.data[:7]
            band.r = [_BAND[1]] * len(arcs)
            band.base = [_BAND[0]] * len(arcs)
            band.theta = [deg(s) + span(e - s + 1) / 2 for s, e, _ in arcs]
            band.width = [span(e - s + 1) for s, e, _ in arcs]
            band.marker.color = [palette.color(n) for *_, n in arcs]
            band.hovertext = [f"{n}: [{s}, {e}] — {(e - s + 1) / size:.2%} of the ring"
                              for s, e, n in arcs]
            changed.r = [_CHANGED_TRACK[1]] * len(st.changed)
            changed.base = [_CHANGED_TRACK[0]] * len(st.changed)
            changed.theta = [deg(s) + span(e - s + 1) / 2 for s, e, *_ in st.changed]
            least = min(_CHANGED_MIN_WIDTH, 90.0 / max(1, len(st.changed)))
            changed.width = [max(least, span(e - s + 1)) for s, e, *_ in st.changed]
            changed.hovertext = [f"[{s}, {e}]: {old} → {new}" for s, e, old, new in st.changed]
            pts.r = [_POINTS_R] * len(point_hashes)
            pts.theta = [deg(h) for h in point_hashes]
            pts.marker.color = [palette.color(n) for n in point_names]
            pts.hovertext = [
                f"{n} point at {h}" for n, h in zip(point_names, point_hashes, strict=True)
            ]
            radius = _key_radii({k.key: deg(k.hash) for k in keys})
            key_trace.r = [radius[k.key] for k in keys]
            key_trace.theta = [deg(k.hash) for k in keys]
            key_trace.marker.color = [palette.color(k.owner) for k in keys]
            key_trace.hovertext = [f"{k.key!r}: hash {k.hash} → {k.owner}" for k in keys]
            moving_trace.r = [radius.get(k.key, _KEYS_R) for k in moving]
            moving_trace.theta = [deg(k.hash) for k in moving]
            moving_trace.hovertext = [f"{k.key!r} would move" for k in moving]
            moved_trace.r = [radius.get(k.key, _KEYS_R) for k in moved]
            moved_trace.theta = [deg(k.hash) for k in moved]
            moved_trace.hovertext = [f"{k.key!r} moved to {k.owner}" for k in moved]
            if looked_up:
                info = key_info(looked_up, None, sel)
                owner = self.owner_of_hash(info.hash, st)
                lookup.r, lookup.theta = [_LOOKUP_R], [deg(info.hash)]
                lookup.text = [f"{looked_up} → {owner or 'nobody'}"]
                lookup.hovertext = [f"{looked_up!r}: hash {info.hash} → {owner}"]
            else:
                lookup.r, lookup.theta, lookup.text = [], [], []
            for name, index in self._legend.items():
                self.fig.data[index].visible = name in st.consumers
            self.fig.layout.polar.angularaxis.ticktext = _tick_labels(space)
            self.fig.layout.polar.sector = (
                [90 - self.sector[1], 90 - self.sector[0]] if self.sector else [0, 360]
            )
            changes = f", {len(st.changed)} arc(s) changed owner" if st.changed else ""
            self.fig.layout.title.text = (
                f"{_ring_name(st.version, space)} — {len(st.consumers)} consumer(s), "
                f"{len(point_hashes)} points{changes}"
            )
        self.table.value = self._table_html(st)

    def _table_html(self, st: Any) -> str:
        rows = []
        for name in st.consumers:
            keys = sum(1 for o in st.key_owners.values() if o == name)
            rows.append(
                f"<tr><td style='color:{self.source.palette.color(name)}'>"
                f"<b>{html.escape(name)}</b></td><td>{len(st.points.get(name, []))}</td>"
                f"<td>{st.shares.get(name, 0.0):.2%}</td><td>{keys}</td></tr>"
            )
        moved = ""
        if st.step_moved:
            listed = ", ".join(html.escape(str(k)) for k in st.step_moved)
            moved = (f"<p>this step moved {len(st.step_moved)} of "
                     f"{len(self.message_keys)} keys: {listed}</p>")
        return (
            "<table><tr><th>consumer</th><th>points</th><th>keyspace share</th>"
            f"<th>keys</th></tr>{''.join(rows)}</table>{moved}"
        )
