"""HashRingView: Key_Shared consistent hashing as a ring (Pulsar 3.x's default selector).

Answers "how much of the key space does each consumer own?" and "which keys move when a
consumer joins or leaves?" — on a ring a newcomer takes a little from everybody, unlike
AUTO_SPLIT's halving. Each consumer's points (100 by default on the 31-bit ring,
``murmur(name + "\\0" + nameIndex + "\\0" + i)`` since 3.3.2, ``murmur(name + "\\0" + i)``
before) sit on the outer circle; the band inside
is coloured by who owns each arc; keys sit on the inner circle, coloured by owner. The table
gives each consumer's exact keyspace share (they sum to 1) from the broker's own selector.
Typing a consumer name highlights the keys that would move if it joined (or left); in
what-if mode the buttons make the change. The ring is a pure function of the consumer
names, so live mode rebuilds it with the broker's selector class from the names in stats.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import ipywidgets
import plotly.graph_objects as go

from pulsarlab.broker.selectors import (
    DEFAULT_NUMBER_OF_POINTS,
    RING_SIZE,
    ConsistentHashRing,
)

from .base import View
from .hash_range import DEFAULT_KEYS
from .keys import key_info, moved_keys, owners, preview_change, ring_of
from .source import Snapshot, Source

__all__ = ["HashRingView", "degrees"]

_HIGHLIGHT = "#d50000"


def degrees(h: int) -> float:
    """Angle of a 31-bit hash on the ring (0° at the top, clockwise)."""
    return h * 360.0 / RING_SIZE


class HashRingView(View):
    """Consumers' points on the consistent-hash ring, their shares, and keys."""

    def __init__(
        self,
        source: Source,
        keys: Sequence[str | None] = DEFAULT_KEYS,
        *,
        points: int | None = None,
        topic: str | None = None,
    ) -> None:
        super().__init__(source)
        self.message_keys: list[str | None] = list(keys)
        self.topic = topic
        self.points_per_consumer = points
        self.consumers: list[str] = []
        self.points: dict[str, list[int]] = {}
        self.shares: dict[str, float] = {}
        self.key_owners: dict[str | None, str | None] = {}
        self.highlighted: list[str | None] = []
        self.last_moved: list[str | None] = []
        self.selector: ConsistentHashRing | None = None
        self.fig = go.FigureWidget(
            data=[
                go.Barpolar(name="owner arcs", hoverinfo="text", showlegend=False,
                            marker={"line": {"width": 0}}),
                go.Scatterpolar(name="consumer points", mode="markers", hoverinfo="text",
                                showlegend=False, marker={"size": 5}),
                go.Scatterpolar(name="keys", mode="markers", hoverinfo="text",
                                showlegend=False, marker={"size": 10, "symbol": "diamond"}),
                go.Scatterpolar(name="would move", mode="markers", hoverinfo="text",
                                marker={"size": 18, "symbol": "circle-open",
                                        "color": _HIGHLIGHT, "line": {"width": 3}}),
            ],
            layout=go.Layout(
                height=420, margin={"l": 30, "r": 30, "t": 50, "b": 30},
                title={"text": "Key_Shared consistent-hash ring", "font": {"size": 14}},
                polar={
                    "radialaxis": {"visible": False, "range": [0, 1.15]},
                    "angularaxis": {"rotation": 90, "direction": "clockwise",
                                    "tickvals": [0, 90, 180, 270],
                                    "ticktext": ["0", "2^29", "2^30", "3·2^29"]},
                },
                legend={"orientation": "h"},
            ),
        )
        self.table = ipywidgets.HTML()
        self.name_box = ipywidgets.Text(description="consumer", placeholder="name")
        self.name_box.observe(lambda _c: self._act(self.preview), names="value")
        row: list[ipywidgets.Widget] = [self.name_box]
        if source.simulated:
            add = ipywidgets.Button(description="add", icon="plus")
            add.on_click(lambda _b: self._act(self._apply, "add"))
            remove = ipywidgets.Button(description="remove", icon="minus")
            remove.on_click(lambda _b: self._act(self._apply, "remove"))
            publish = ipywidgets.Button(description="publish these keys", icon="paper-plane")
            publish.on_click(
                lambda _b: self._act(self.require_whatif().publish, self.message_keys)
            )
            row += [add, remove, publish]
        self._bind([self.fig, self.table, ipywidgets.HBox(row), self.message])

    # -- actions --------------------------------------------------------------------------

    def preview(self, name: str | None = None) -> list[str | None]:
        """Highlight (and return) the keys that would move if ``name`` joined or left."""
        name = (name if name is not None else self.name_box.value).strip()
        if not name or self.selector is None:
            self.highlighted = []
        else:
            self.highlighted = preview_change(self.selector, self.message_keys, name)
        with self.hold_sync():
            self._draw()
        return self.highlighted

    def _apply(self, what: str) -> None:
        name = self.name_box.value.strip()
        self.highlighted = []
        if what == "add":
            self.require_whatif().add_consumer(name)
        else:
            self.require_whatif().remove_consumer(name)

    # -- state ----------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        return {
            "consumers": list(self.consumers),
            "points": {n: len(p) for n, p in self.points.items()},
            "shares": dict(self.shares),
            "key_owners": dict(self.key_owners),
            "last_moved": list(self.last_moved),
        }

    def _update(self, snapshot: Snapshot, events: list[dict[str, Any]]) -> None:
        sub = snapshot.subscription(self.source.subscription, self.topic) or {}
        names = [str(c.get("consumerName")) for c in sub.get("consumers") or ()]
        count = self.points_per_consumer or int(
            snapshot.settings.get("consistent_hashing_points", DEFAULT_NUMBER_OF_POINTS)
        )
        selector = None
        if self.whatif is not None:
            real = self.whatif.selector()
            if isinstance(real, ConsistentHashRing):  # either 3.3 ring, as the broker has it
                selector = real
        self.selector = selector or ring_of(names, count)
        self.consumers = [c.consumer_name for c in self.selector.consumers]
        self.points = {c.consumer_name: p for c, p in self.selector.consumer_points().items()}
        self.shares = {c.consumer_name: s for c, s in self.selector.keyspace_shares().items()}
        now = owners(self.selector, self.message_keys)
        if self.key_owners and set(self.key_owners) == set(now):
            moved = moved_keys(self.key_owners, now)
            if moved:
                self.last_moved = moved
        self.key_owners = now

    # -- drawing --------------------------------------------------------------------------

    def _draw(self) -> None:
        palette = self.source.palette
        arcs = self._arcs()
        point_names = [n for n, ps in self.points.items() for _ in ps]
        point_hashes = [h for ps in self.points.values() for h in ps]
        keys = [key_info(k, self.key_owners.get(k)) for k in self.message_keys]
        moving = [key_info(k) for k in self.highlighted]
        with self.fig.batch_update():
            band, pts, key_trace, moving_trace = self.fig.data
            band.r = [0.12] * len(arcs)
            band.base = [0.85] * len(arcs)
            band.theta = [degrees(s) + degrees(e - s + 1) / 2 for s, e, _ in arcs]
            band.width = [degrees(e - s + 1) for s, e, _ in arcs]
            band.marker.color = [palette.color(n) for *_, n in arcs]
            band.hovertext = [f"{n}: [{s}, {e}]" for s, e, n in arcs]
            pts.r = [1.05] * len(point_hashes)
            pts.theta = [degrees(h) for h in point_hashes]
            pts.marker.color = [palette.color(n) for n in point_names]
            pts.hovertext = [
                f"{n} point at {h}" for n, h in zip(point_names, point_hashes, strict=True)
            ]
            key_trace.r = [0.6] * len(keys)
            key_trace.theta = [degrees(k.hash) for k in keys]
            key_trace.marker.color = [palette.color(k.owner) for k in keys]
            key_trace.hovertext = [f"{k.key!r}: hash {k.hash} → {k.owner}" for k in keys]
            moving_trace.r = [0.6] * len(moving)
            moving_trace.theta = [degrees(k.hash) for k in moving]
            moving_trace.hovertext = [f"{k.key!r} would move" for k in moving]
            self.fig.layout.title.text = (
                f"consistent-hash ring — {len(self.consumers)} consumer(s), "
                f"{len(point_hashes)} points"
            )
        self.table.value = self._table_html()

    def _arcs(self) -> list[tuple[int, int, str]]:
        """Ring slices ``[start, end]`` with the (first) owner of each, wrap-around included."""
        if self.selector is None:
            return []
        ring = self.selector.ring()
        arcs: list[tuple[int, int, str]] = []
        start = 0
        for point, members in ring:
            arcs.append((start, point, members[0].consumer_name))
            start = point + 1
        if ring and start < RING_SIZE:
            arcs.append((start, RING_SIZE - 1, ring[0][1][0].consumer_name))
        return arcs

    def _table_html(self) -> str:
        rows = []
        for name in self.consumers:
            keys = sum(1 for o in self.key_owners.values() if o == name)
            rows.append(
                f"<tr><td style='color:{self.source.palette.color(name)}'>"
                f"<b>{html.escape(name)}</b></td><td>{len(self.points.get(name, []))}</td>"
                f"<td>{self.shares.get(name, 0.0):.2%}</td><td>{keys}</td></tr>"
            )
        moved = ""
        if self.last_moved:
            listed = ", ".join(html.escape(str(k)) for k in self.last_moved)
            moved = (f"<p>last change moved {len(self.last_moved)} of "
                     f"{len(self.message_keys)} keys: {listed}</p>")
        return (
            "<table><tr><th>consumer</th><th>points</th><th>keyspace share</th>"
            f"<th>keys</th></tr>{''.join(rows)}</table>{moved}"
        )
