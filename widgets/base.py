"""The base of every view: a source, a refresh that recomputes state and then draws it.

A view is an ``ipywidgets.VBox`` (so it displays itself). :meth:`View.refresh` reads the
source's snapshot and new events, recomputes the view's plain-Python state (what tests
assert on: ranges, shares, strips, lanes) in :meth:`View._update`, then pushes it into the
plotly ``FigureWidget`` inside ``batch_update()`` in :meth:`View._draw` — one comm burst per
frame. A lock serialises refreshes: in live mode the binding's thread is the only writer,
but a user may also call :meth:`View.refresh` from the kernel.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import ipywidgets

from pulsarlab.broker.errors import PulsarLabError

from .source import Snapshot, Source

if TYPE_CHECKING:
    from .whatif import WhatIf

__all__ = ["View", "error_html"]


def error_html(message: str) -> str:
    return f"<span style='color:#c62828'>{html.escape(message)}</span>"


class View(ipywidgets.VBox):
    """A live-or-what-if picture of one topic/subscription."""

    def __init__(self, source: Source, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.source = source
        self.frames = 0
        self.message = ipywidgets.HTML()
        self._lock = threading.RLock()
        self._events_seen = 0
        self._bound = False

    @classmethod
    def for_subscription(cls, connection: Any, topic: str, subscription: str,
                         **kwargs: Any) -> View:
        """This view of ``topic``/``subscription`` on any broker, following it live.

        ``connection``: a :class:`pulsarlab.cluster.Connection` — a pulsarlab broker's
        event stream, or a Pulsar cluster's admin REST API polled every 2 s (with a
        staleness label and a what-if button; see :mod:`.cluster_source`)."""
        from .cluster_source import open_view

        return open_view(cls, connection, topic, subscription, **kwargs)

    @property
    def widget(self) -> View:
        """The displayable widget (the view itself)."""
        return self

    @property
    def whatif(self) -> WhatIf | None:
        """The what-if core behind this view, or ``None`` in live mode."""
        return cast("WhatIf", self.source) if self.source.simulated else None

    def require_whatif(self) -> WhatIf:
        """The what-if core; a live view cannot change the broker."""
        whatif = self.whatif
        if whatif is None:
            raise ValueError("this view follows a live broker: change it with a client")
        return whatif

    def _bind(self, children: list[ipywidgets.Widget]) -> None:
        """Show ``children``, follow the source and draw the first frame."""
        self.children = tuple(children)
        if not self._bound:
            self._bound = True
            self.source.on_change(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        """Recompute the state from the source and redraw (one frame)."""
        with self._lock:
            snapshot = self.source.snapshot()
            if snapshot is None:
                self.message.value = "waiting for the topic's first stats…"
                return
            events, self._events_seen = self.source.events.since(self._events_seen)
            self._update(snapshot, events)
            with self.hold_sync():
                self._draw()
            self.frames += 1

    def _update(self, snapshot: Snapshot, events: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def _draw(self) -> None:
        raise NotImplementedError

    def _act(self, action: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a what-if button's action; show a broker error instead of raising it."""
        try:
            result = action(*args, **kwargs)
        except (PulsarLabError, ValueError, KeyError) as exc:
            self.message.value = error_html(str(exc).strip("'\""))
            return None
        self.message.value = ""
        return result

    def seconds(self, time_ms: int) -> float:
        """A broker timestamp as seconds since the source started."""
        return (time_ms - self.source.start_ms) / 1000.0
