"""Dashboard: one topic/subscription at a glance — the views that matter for its type, in tabs.

Key_Shared gets the hash ranges (or, with consistent hashing, the ring), flow, cursor and
timeline; Failover and Exclusive get the failover grid, cursor, timeline and flow; Shared
gets flow, cursor and timeline. A header line keeps the numbers (type, consumers, backlog,
unacked) in view. In what-if mode one control panel above the tabs drives the core; in
live mode, where the type is only known from the first stats, the tabs appear then.
"""

from __future__ import annotations

import contextlib
import html
from collections.abc import Sequence
from typing import Any

import ipywidgets

from .base import View
from .controls import WhatIfControls
from .cursor import CursorView
from .failover import FailoverView
from .flow import FlowView
from .hash_range import DEFAULT_KEYS, HashRangeView
from .hash_ring import HashRingView
from .source import BrokerEvent, Snapshot, Source
from .static import html_to_lines
from .timeline import RedeliveryTimeline

__all__ = ["Dashboard"]


class Dashboard(View):
    """Tabs of the views relevant to the subscription's type, with a header of numbers."""

    def __init__(self, source: Source, keys: Sequence[str | None] = DEFAULT_KEYS) -> None:
        super().__init__(source)
        self.message_keys = list(keys)
        self.sub_type: str | None = None
        self.views: dict[str, View] = {}
        self.header = ipywidgets.HTML()
        self.tabs = ipywidgets.Tab()
        self._numbers: dict[str, Any] = {}
        children: list[ipywidgets.Widget] = [self.header]
        if source.simulated:
            children.append(WhatIfControls(self.require_whatif(), on_action=self.follow))
        children += [self.tabs, self.message]
        self._bind(children)

    _history_fields = ("sub_type", "_numbers")

    def at(self, step: int) -> Dashboard:
        """Pin the dashboard — and each tab at the step of the same label — to ``step``."""
        super().at(step)
        label = self.history[step].label
        for view in self.views.values():
            with contextlib.suppress(KeyError):
                view.show_step(label)
        return self

    def follow(self) -> Dashboard:
        super().follow()
        for view in self.views.values():
            view.follow()
        return self

    def figures(self) -> list[Any]:
        return [fig for view in self.views.values() for fig in view.figures()]

    def caption(self) -> list[str]:
        return html_to_lines(self.header.value)

    def summary(self) -> dict[str, Any]:
        return {"type": self.sub_type, "tabs": list(self.views), **self._numbers}

    def _update(self, snapshot: Snapshot, events: list[BrokerEvent]) -> None:
        subs = [snapshot.subscription(self.source.subscription, t) or {} for t in snapshot.topics]
        sub_type = next((s.get("type") for s in subs if s.get("type")), None)
        if sub_type is None and self.whatif is not None:
            sub_type = str(self.whatif.sub_type)
        self.sub_type = sub_type
        self._numbers = {
            "partitions": len(snapshot.topics),
            "consumers": sorted({str(c.get("consumerName")) for s in subs
                                 for c in s.get("consumers") or ()}),
            "backlog": sum(int(s.get("msgBacklog") or 0) for s in subs),
            "unacked": sum(int(s.get("unackedMessages") or 0) for s in subs),
        }

    def _draw(self) -> None:
        n = self._numbers
        self.header.value = (
            f"<b>{html.escape(self.source.topic)}</b> · subscription "
            f"<b>{html.escape(self.source.subscription)}</b> · {self.sub_type or '?'} · "
            f"{n['partitions']} partition(s) · consumers {html.escape(', '.join(n['consumers']))}"
            f" · backlog <b>{n['backlog']}</b> · unacked <b>{n['unacked']}</b>"
        )
        if not self.views and self.sub_type is not None:
            self._build_tabs()

    def _build_tabs(self) -> None:
        source = self.source
        keys = self.message_keys
        factories: dict[str, Any] = {}
        if self.sub_type == "Key_Shared":
            whatif = self.whatif
            use_ring = whatif.settings.key_shared_use_consistent_hashing if whatif else None
            sticky = whatif is not None and whatif.key_shared_mode == "STICKY"
            if use_ring is not True or sticky:
                factories["hash ranges"] = lambda: HashRangeView(source, keys)
            if use_ring is not False and not sticky:
                factories["hash ring"] = lambda: HashRingView(source, keys)
            factories["flow"] = lambda: FlowView(source, controls=False)
        elif self.sub_type in ("Failover", "Exclusive"):
            factories["failover"] = lambda: FailoverView(source, controls=False)
        else:
            factories["flow"] = lambda: FlowView(source, controls=False)
        factories["cursor"] = lambda: CursorView(source, controls=False)
        factories["timeline"] = lambda: RedeliveryTimeline(source, controls=False)
        if self.sub_type in ("Failover", "Exclusive"):
            factories["flow"] = lambda: FlowView(source, controls=False)
        self.views = {title: make() for title, make in factories.items()}
        self.tabs.children = tuple(self.views.values())
        for i, title in enumerate(self.views):
            self.tabs.set_title(i, title)
