"""StatsView: draw a REAL cluster's ``pulsar-admin topics stats`` output.

Paste (or load) the JSON a Pulsar broker prints and see what pulsarlab's live views show:
each consumer's key hash ranges on the key-space line, its permits and unacked messages,
and the backlog of every subscription. Both range forms are read — 3.x ``keyHashRanges``
strings (``"[0, 16384]"``) and 4.0 ``keyHashRangeArrays`` pairs — as are 3.x's
``consumersAfterMarkDeletePosition`` (recently joined consumers) and 4.0's draining hashes.
Nothing here talks to a broker: it is a picture of one dict, redrawn by
:meth:`StatsView.update`. Like every view it keeps each dict it drew as a step of its
history (:mod:`~.history`): the slider under the plot scrubs back, ``at(n)`` /
``show_step(label)`` / ``pin()`` hold one, and ``still(n)`` is a picture of one.
"""

from __future__ import annotations

import copy
import html
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import ipywidgets
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .base import Still, _Text, sync_figures
from .history import History, HistoryBar, Step
from .pulsar_stats import (
    SLOT_SPACE,
    consumer_key_hash_ranges,
    key_hash_space,
    subscription_key_hash_ranges,
)
from .source import Palette
from .static import html_to_lines, picture_bundle, picture_svg

__all__ = ["StatsView"]


class StatsView(ipywidgets.VBox):
    """A recorded ``topics stats`` dict: ranges, consumers and backlog."""

    def __init__(self, stats: Mapping[str, Any] | str, subscription: str | None = None, *,
                 label: str = "loaded") -> None:
        super().__init__()
        self.palette = Palette()
        self.subscription_name: str | None = None
        self.stats: dict[str, Any] = {}
        self.ranges: dict[str, list[tuple[int, int]]] = {}
        self.space = SLOT_SPACE
        self.version: str | None = None
        self.frames = 0
        self.history = History()
        self.history_bar = HistoryBar(self._scrub)
        self.pinned: int | None = None
        """The step the view is pinned to (``None``: it follows the latest)."""
        self._shown: int | None = None
        figure = make_subplots(rows=2, cols=1, row_heights=[0.45, 0.55], vertical_spacing=0.25,
                               subplot_titles=("key hash ranges", "backlog per subscription"))
        figure.add_trace(go.Bar(name="ranges", orientation="h", hoverinfo="text",
                                showlegend=False, textposition="inside"), row=1, col=1)
        figure.add_trace(go.Bar(name="backlog", hoverinfo="x+y", showlegend=False,
                                marker={"color": "#ef6c00"}), row=2, col=1)
        figure.update_layout(height=420, margin={"l": 80, "r": 50, "t": 50, "b": 40},
                             modebar={"orientation": "v"})
        self.fig = go.FigureWidget(figure)
        self.table = ipywidgets.HTML()
        self.children = (self.fig, self.history_bar, self.table)
        self._wanted = subscription
        self.update(stats, label)

    @property
    def widget(self) -> StatsView:
        return self

    def picture(self) -> str:
        """A static SVG of the step shown (see :mod:`~.static`)."""
        step = self.step
        return picture_svg([self.fig], html_to_lines(self.table.value),
                           f"step {step.index}: {step.label}")

    def describe(self) -> str:
        return self._describe(self.step)

    def _describe(self, step: Step) -> str:
        return f"<StatsView step {step.index} ({step.label!r}): {self.fig.layout.title.text or ''}>"

    def __repr__(self) -> str:
        return self.describe()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        sync_figures(self)
        bundle = dict(super()._repr_mimebundle_(**kwargs) or {})
        bundle["text/plain"] = self.describe()
        bundle.update(picture_bundle(self.picture(), bundle["text/plain"]))
        return bundle

    def update(self, stats: Mapping[str, Any] | str, label: str = "update") -> None:
        """Read a new stats dict (or its JSON text) and keep it as a step labelled
        ``label``; it is drawn unless the view is pinned to an earlier step."""
        self._load(json.loads(stats) if isinstance(stats, str) else dict(stats))
        step = self.history.record(label, None, {"stats": copy.deepcopy(self.stats)})
        if self.pinned is None:
            self._draw()
            self._shown = step.index
        self._sync_bar()
        self.frames += 1

    def _load(self, stats: dict[str, Any]) -> None:
        """Make ``stats`` the view's dict, and what it says the view's numbers."""
        self.stats = stats
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

    # -- history --------------------------------------------------------------------------

    @property
    def step(self) -> Step:
        """The step the view shows."""
        return self.history[self._shown if self._shown is not None else -1]

    def at(self, step: int) -> StatsView:
        """Pin the view to step ``step`` (``-1``: the latest so far) and return it."""
        index = self.history[step].index
        self.pinned = index
        self._show(index)
        return self

    def pin(self) -> StatsView:
        """Pin the view to the step it shows now."""
        return self.at(self.step.index)

    def show_step(self, label: str) -> StatsView:
        """Pin the view to the latest step labelled ``label`` (or containing it)."""
        return self.at(self.history.find(label).index)

    def follow(self) -> StatsView:
        """Unpin: show the latest step, and every new one."""
        self.pinned = None
        self._show(-1)
        return self

    def still(self, step: int | str = -1) -> Still:
        """A picture of one step (a number or a label) that stays as it is."""
        chosen = self.history.find(step) if isinstance(step, str) else self.history[step]
        fig, table = self.fig, self.table
        self.fig, self.table = go.Figure(fig), _Text(table.value)  # drawn, no widget touched
        try:
            with self._showing(chosen):
                self._draw()
            svg = picture_svg([self.fig], html_to_lines(self.table.value),
                              f"step {chosen.index}: {chosen.label}")
            title = "<picture of " + self._describe(chosen)[1:]
        finally:
            self.fig, self.table = fig, table
        return Still(svg, title)

    def _scrub(self, index: int) -> None:
        """The slider moved: show that step; at the end the view follows again."""
        self.pinned = None if index == len(self.history) - 1 else index
        self._show(index)

    def _show(self, index: int) -> None:
        step = self.history[index]
        with self._showing(step):
            self._draw()
        self._shown = step.index
        self._sync_bar()

    @contextmanager
    def _showing(self, step: Step) -> Iterator[None]:
        """Within the block the view's dict and numbers are ``step``'s."""
        latest = self.stats
        self._load(step.state["stats"])
        try:
            yield
        finally:
            self._load(latest)

    def _sync_bar(self) -> None:
        latest = self.history.latest
        if latest is not None:
            first = next(iter(self.history)).index
            self.history_bar.sync(self.step, first, latest.index, self.pinned is not None)

    def summary(self) -> dict[str, Any]:
        subs: dict[str, Any] = self.stats.get("subscriptions") or {}
        sub = subs.get(self.subscription_name) or {}
        return {
            "subscription": self.subscription_name,
            "type": sub.get("type"),
            "key_shared_mode": sub.get("keySharedMode"),
            "version": self.version,
            "space": self.space,
            "ranges": {n: list(r) for n, r in self.ranges.items()},
            "backlog": {n: int(s.get("msgBacklog") or 0) for n, s in subs.items()},
            "consumers": [str(c.get("consumerName")) for c in sub.get("consumers") or ()],
            "recently_joined": dict(sub.get("consumersAfterMarkDeletePosition") or {}),
            "draining": {
                str(c.get("consumerName")): int(c.get("drainingHashesCount") or 0)
                for c in sub.get("consumers") or () if "drainingHashesCount" in c
            },
        }

    def _draw(self) -> None:
        subs: dict[str, Any] = self.stats.get("subscriptions") or {}
        bars = sorted((s, e, n) for n, rs in self.ranges.items() for s, e in rs)
        with self.hold_sync(), self.fig.batch_update():
            ranges, backlog = self.fig.data
            ranges.base = [b[0] for b in bars]
            ranges.x = [b[1] - b[0] + 1 for b in bars]
            ranges.y = ["ranges"] * len(bars)
            ranges.text = [b[2] for b in bars]
            ranges.hovertext = [f"{b[2]}: [{b[0]}, {b[1]}]" for b in bars]
            ranges.marker.color = [self.palette.color(b[2]) for b in bars]
            backlog.x = list(subs)
            backlog.y = [int(s.get("msgBacklog") or 0) for s in subs.values()]
            self.fig.layout.xaxis.range = [0, self.space]
            self.fig.layout.title = {
                "text": f"{self.subscription_name or 'no subscription'} "
                        f"({self.version or 'no key hash ranges'})",
                "font": {"size": 14},
            }
        self.table.value = self._table_html(subs)

    def _table_html(self, subs: Mapping[str, Any]) -> str:
        sub = subs.get(self.subscription_name) or {}
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
        head = (f"<b>{html.escape(str(self.subscription_name))}</b>: type {sub.get('type')}, "
                f"mode {sub.get('keySharedMode', '—')}, backlog {sub.get('msgBacklog', '—')}, "
                f"unacked {sub.get('unackedMessages', '—')}")
        return (f"{head}<table><tr><th>consumer</th><th>permits</th><th>unacked</th>"
                f"<th>key hash ranges</th><th></th></tr>{''.join(rows)}</table>")
