"""Dashboard: one topic/subscription at a glance — the views that matter for its type, in tabs.

Key_Shared gets the hash ranges (or, with consistent hashing, the ring), flow, cursor and
timeline; Failover and Exclusive get the failover grid, cursor, timeline and flow; Shared
gets flow, cursor and timeline. A header line keeps the numbers (type, consumers, backlog,
unacked) in view. In what-if mode one control panel above the tabs drives the core; in
live mode, where the type is only known from the first stats, the tabs appear then.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import ipywidgets

from .base import View
from .cursor import CursorView
from .failover import FailoverView
from .flow import FlowView
from .hash_range import HashRangeView, view_keys
from .hash_ring import HashRingView
from .source import BrokerEvent, Snapshot, Source
from .static import html_to_lines
from .timeline import RedeliveryTimeline

__all__ = ["Dashboard"]


class Dashboard(View):
    """Tabs of the views relevant to the subscription's type, with a header of numbers.

    The tabs are parts of the dashboard's picture (they share its stepper): one step bar
    scrubs them all, and the one control block above the tabs drives the core."""

    _history_fields = ("sub_type", "numbers")

    def __init__(self, source: Source, keys: Sequence[str | None] | None = None) -> None:
        """``keys``: the keys the hash views draw (default: those the what-if core has
        published, else sixteen sample keys)."""
        super().__init__(source)
        self.message_keys = view_keys(source, keys)
        self.sub_type: str | None = None
        self.views: dict[str, View] = {}
        self.header = ipywidgets.HTML()
        self.tabs = ipywidgets.Tab()
        self.numbers: dict[str, Any] = {}
        published = ", ".join(k or "-" for k in self.message_keys)
        self._bind([self.header, self.tabs], controls=True, keys=published)

    def figures(self, all_figures: bool = False) -> list[Any]:
        return [fig for view in self.views.values() for fig in view.figures(all_figures)]

    def caption(self) -> list[str]:
        return html_to_lines(self.header.value)

    def summary(self, state: Any = None) -> dict[str, Any]:
        st = self if state is None else state
        return {"type": st.sub_type, "tabs": list(self.views), **st.numbers}

    def _update(self, snapshot: Snapshot, events: list[BrokerEvent]) -> None:
        subs = [snapshot.subscription(self.source.subscription, t) or {} for t in snapshot.topics]
        sub_type = next((s.get("type") for s in subs if s.get("type")), None)
        if sub_type is None and self.whatif is not None:
            sub_type = str(self.whatif.sub_type)
        self.sub_type = sub_type
        self.numbers = {
            "partitions": len(snapshot.topics),
            "consumers": sorted({str(c.get("consumerName")) for s in subs
                                 for c in s.get("consumers") or ()}),
            "backlog": sum(int(s.get("msgBacklog") or 0) for s in subs),
            "unacked": sum(int(s.get("unackedMessages") or 0) for s in subs),
        }
        if not self.views and self.sub_type is not None:
            self._build_tabs()  # they join the stepper, which updates them next

    def draw(self, st: Any) -> None:
        n = st.numbers
        self.header.value = (
            f"<b>{html.escape(self.source.topic)}</b> · subscription "
            f"<b>{html.escape(self.source.subscription)}</b> · {st.sub_type or '?'} · "
            f"{n['partitions']} partition(s) · consumers {html.escape(', '.join(n['consumers']))}"
            f" · backlog <b>{n['backlog']}</b> · unacked <b>{n['unacked']}</b>"
        )

    def _build_tabs(self) -> None:
        source, keys, part = self.source, self.message_keys, {"stepper": self.stepper}
        factories: dict[str, Any] = {}
        if self.sub_type == "Key_Shared":
            whatif = self.whatif
            use_ring = whatif.settings.key_shared_use_consistent_hashing if whatif else None
            sticky = whatif is not None and whatif.key_shared_mode == "STICKY"
            if use_ring is not True or sticky:
                factories["hash ranges"] = lambda: HashRangeView(source, keys, **part)
            if use_ring is not False and not sticky:
                factories["hash ring"] = lambda: HashRingView(source, keys, **part)
            factories["flow"] = lambda: FlowView(source, **part)
        elif self.sub_type in ("Failover", "Exclusive"):
            factories["failover"] = lambda: FailoverView(source, **part)
        else:
            factories["flow"] = lambda: FlowView(source, **part)
        factories["cursor"] = lambda: CursorView(source, **part)
        factories["timeline"] = lambda: RedeliveryTimeline(source, **part)
        if self.sub_type in ("Failover", "Exclusive"):
            factories["flow"] = lambda: FlowView(source, **part)
        self.views = {title: make() for title, make in factories.items()}
        self.tabs.children = tuple(self.views.values())
        for i, title in enumerate(self.views):
            self.tabs.set_title(i, title)
