"""The base of every view: a source, a refresh that recomputes state and then draws it.

A view is an ``ipywidgets.VBox`` (so it displays itself). :meth:`View.refresh` reads the
source's snapshot and new events, recomputes the view's plain-Python state (what tests
assert on: ranges, shares, strips, lanes) in :meth:`View._update`, records it as a step of
the view's :class:`~.history.History`, then pushes it into the plotly ``FigureWidget``
inside ``batch_update()`` in :meth:`View._draw` — one comm burst per frame. A lock
serialises refreshes: in live mode the binding's thread is the only writer, but a user may
also call :meth:`View.refresh` from the kernel.

Every view can show an earlier step again: the slider under its picture scrubs back, and
``view.at(n)`` / ``view.show_step(label)`` pin it (a tutorial pins each view cell to the
step its text describes). Displayed, a view also carries a static SVG of the step it shows
(:mod:`~.static`), so a notebook opened without a kernel still has the picture.
"""

from __future__ import annotations

import copy
import html
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, cast

import ipywidgets
import plotly.graph_objects as go

from pulsarlab.broker.errors import PulsarLabError

from .history import History, HistoryBar, Step
from .source import BrokerEvent, Snapshot, Source
from .static import html_to_lines, picture_bundle, picture_svg

if TYPE_CHECKING:
    from .whatif import WhatIf

__all__ = ["Still", "View", "error_html", "sync_figures"]


def error_html(message: str) -> str:
    return f"<span style='color:#c62828'>{html.escape(message)}</span>"


def sync_figures(widget: ipywidgets.Widget) -> None:
    """Make every plotly figure under ``widget`` start a new browser view from its current
    data and layout.

    A ``FigureWidget`` sends each change to the views already open, but a view opened later
    starts from the state the figure last published, which plotly refreshes only when the
    figure itself is displayed — never when it is a child of a box (a view). Drawn from that
    stale state, traces lose what the draws set (a colour, points) and plotly's defaults
    take their place. So a view publishes its figures' state when it is built and when it
    is displayed.

    The state is *sent* even when the kernel's copy did not change: the browser's copy is
    kept up to date by handlers that plotly's 5 MB front-end module installs only once it
    has loaded, so the draws made before that (a figure built and drawn in one cell) never
    reached it. A view opened from that copy was an empty plot (tutorial 06's first view,
    on one Run All in three), and ◀/▶ — restyles of traces that view never had — did not
    bring it back. Sent just before the display message, the full state is what the new
    view starts from.
    """
    if isinstance(widget, go.FigureWidget):
        widget._repr_mimebundle_()  # plotly's own refresh of the state a new view reads
        if widget.comm is not None:  # traitlets sends only a change: send it regardless
            widget.send_state(["_widget_data", "_widget_layout"])
    for child in getattr(widget, "children", ()):
        sync_figures(child)


def reopen_figures(widget: ipywidgets.Widget) -> bool:
    """Give each plotly figure under ``widget`` that was never displayed a new comm whose
    *opening* message carries its whole current state; re-send the boxes that hold them.

    A figure's comm opens, in plotly's constructor, with empty data and layout; everything
    after arrives as updates. In JupyterLab a view opened soon after (a view built and
    displayed in one Run All) was at times drawn from that empty opening state — empty axes
    with ``data=[]``, tutorial 06's blank first view, one Run All in three — and the
    updates never reach a plot already drawn. Opened again just before the display, the
    model is born with the data, so no update has to win that race. Returns whether a
    figure was reopened (the caller re-sends the box's ``children``)."""
    reopened = False
    if isinstance(widget, go.FigureWidget):
        if widget.comm is not None and not getattr(widget, "_pulsarlab_displayed", False):
            widget._pulsarlab_displayed = True
            widget._repr_mimebundle_()  # the state to open with: data and layout as drawn
            widget.comm = None  # the old front-end model is left unused
            widget._model_id = None
            widget.open()
            return True
        return False
    children = getattr(widget, "children", ())
    for child in children:
        reopened = reopen_figures(child) or reopened
    if reopened and widget.comm is not None:
        widget.send_state(["children"])
    return reopened


_WAITING = "waiting for the topic's first stats…"

class View(ipywidgets.VBox):
    """A live-or-what-if picture of one topic/subscription."""

    _history_fields: ClassVar[tuple[str, ...]] = ()
    """The attributes that make up one step (copied into the history after each frame)."""

    def __init__(self, source: Source, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.source = source
        self.frames = 0
        self.message = ipywidgets.HTML()
        self.history = History()
        self.pinned: int | None = None
        """The step the view is pinned to (``None``: it follows the latest)."""
        self.history_bar = HistoryBar(self._scrub)
        self._shown: int | None = None
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
        """Show ``children`` (the history bar goes under the first), follow the source and
        draw the first frame."""
        children = list(children)
        children.insert(1, self.history_bar)
        for name in ("fig", "ring_fig"):  # plotly's toolbar beside the plot, not on the title
            fig = getattr(self, name, None)
            if isinstance(fig, go.FigureWidget):
                fig.layout.modebar.orientation = "v"
                fig.layout.margin.r = max(50, fig.layout.margin.r or 0)
        self.children = tuple(children)
        if not self._bound:
            self._bound = True
            self.source.on_change(self.refresh)
        self.refresh()
        sync_figures(self)

    def refresh(self) -> None:
        """Recompute the state from the source, record it as a step and draw it (unless the
        view is pinned to an earlier step: then only the slider grows)."""
        with self._lock:
            snapshot = self.source.snapshot()
            if snapshot is None:
                self.message.value = _WAITING
                return
            if self.message.value == _WAITING:
                self.message.value = ""
            events, self._events_seen = self.source.events.since(self._events_seen)
            self._update(snapshot, events)
            self._record(self._step_label(snapshot), snapshot.time_ms)
            self.frames += 1

    def _step_label(self, snapshot: Snapshot) -> str:
        if self.source.simulated:
            return str(getattr(self.source, "last_action", "change"))
        return f"t = {self.seconds(snapshot.time_ms):.1f} s"

    # -- history --------------------------------------------------------------------------

    def _record(self, label: str, time_ms: int | None = None) -> Step:
        """Keep the current state as a new step; draw it unless pinned elsewhere."""
        with self._lock:
            state = {f: copy.deepcopy(getattr(self, f)) for f in self._history_fields}
            step = self.history.record(label, time_ms, state)
            if self.pinned is None:
                with self.hold_sync():
                    self._draw()
                self._shown = step.index
            self._sync_bar()
            return step

    @contextmanager
    def _showing(self, step: Step | None) -> Iterator[None]:
        """Within the block the view's state is ``step``'s (``None``: the latest)."""
        with self._lock:
            if step is None or step.index == len(self.history) - 1:
                yield
                return
            current = {f: getattr(self, f) for f in self._history_fields}
            for name, value in step.state.items():
                setattr(self, name, value)
            try:
                yield
            finally:
                for name, value in current.items():
                    setattr(self, name, value)

    def _show(self, index: int) -> None:
        with self._lock:
            step = self.history[index]
            with self._showing(step), self.hold_sync():
                self._draw()
            self._shown = step.index
            self._sync_bar()

    def _redraw(self) -> None:
        """Draw the shown step again (an input of the view changed, not the source)."""
        with self._lock:
            if len(self.history):
                self._show(self._shown if self._shown is not None else -1)

    def _sync_bar(self) -> None:
        latest = self.history.latest
        if latest is None:
            return
        shown = self.history[self._shown] if self._shown is not None else latest
        first = next(iter(self.history)).index
        self.history_bar.sync(shown, first, latest.index, self.pinned is not None)

    def _scrub(self, index: int) -> None:
        """The slider moved: show that step; at the end the view follows again."""
        self.pinned = None if index == len(self.history) - 1 else index
        self._show(index)

    @property
    def step(self) -> Step:
        """The step the view shows."""
        return self.history[self._shown if self._shown is not None else -1]

    def at(self, step: int) -> View:
        """Pin the view to step ``step`` (``-1``: the latest so far) and return it.

        New frames are still recorded (the slider grows), but the picture stays on this
        step until the slider moves or a button of the view is used.
        """
        index = self.history[step].index
        self.pinned = index
        self._show(index)
        return self

    def pin(self) -> View:
        """Pin the view to the step it shows now (a tutorial's view cell ends with this,
        so later cells that change the source do not change what this output shows)."""
        return self.at(self.step.index)

    def still(self, step: int | str = -1) -> Still:
        """A picture of one step (a number or a label) that stays as it is: to show the same
        view at two steps in two cells (a pinned view is one widget, shown once)."""
        with self._lock:
            chosen = self.history.find(step) if isinstance(step, str) else self.history[step]
            swapped = {name: getattr(self, name) for name in ("fig", "ring_fig", "table")
                       if hasattr(self, name)}
            # traces a draw adds to the copies must not be looked up in the real figures
            registries = {name: dict(getattr(self, name)) for name in _TRACE_REGISTRIES
                          if hasattr(self, name)}
            try:
                for name, value in swapped.items():
                    setattr(self, name, _Text(value.value) if name == "table"
                            else go.Figure(value))
                with self._showing(chosen):
                    self._draw()
                    svg = picture_svg(self.figures(), self.caption(),
                                      f"step {chosen.index}: {chosen.label}")
                    title = "<picture of " + self.describe_step(chosen)[1:]
            finally:
                for name, value in (swapped | registries).items():
                    setattr(self, name, value)
            self._redraw()
            return Still(svg, title)

    def show_step(self, label: str) -> View:
        """Pin the view to the latest step labelled ``label`` (or containing it)."""
        return self.at(self.history.find(label).index)

    def follow(self) -> View:
        """Unpin: show the latest step, and every new one."""
        self.pinned = None
        if len(self.history):
            self._show(-1)
        return self

    def step_summary(self, step: int | None = None) -> dict[str, Any]:
        """:meth:`summary` of step ``step`` (default: the shown one)."""
        chosen = self.step if step is None else self.history[step]
        with self._showing(chosen):
            return self.summary()

    def summary(self) -> dict[str, Any]:
        return {}

    # -- static picture -------------------------------------------------------------------

    def figures(self) -> list[go.FigureWidget]:
        """The plotly figures the view shows (drawn into its static picture)."""
        fig = getattr(self, "fig", None)
        return [fig] if fig is not None else []

    def caption(self) -> list[str]:
        """Text lines under the static picture (the view's table, as text)."""
        table = getattr(self, "table", None)
        return html_to_lines(table.value) if table is not None else []

    def picture(self) -> str:
        """An SVG of the step the view shows: its figures and its table."""
        with self._lock:
            step = self.history.latest and self.step
            title = f"step {step.index}: {step.label}" if step else ""
            return picture_svg(self.figures(), self.caption(), title)

    def describe(self) -> str:
        """One line for ``text/plain``: class, shown step and the figure's title."""
        return self.describe_step(self.step if len(self.history) else None)

    def describe_step(self, step: Step | None) -> str:
        figs = self.figures()
        title = figs[0].layout.title.text if figs and figs[0].layout.title.text else ""
        where = f" step {step.index} ({step.label!r})" if step else ""
        return f"<{type(self).__name__}{where}: {title}>"

    def __repr__(self) -> str:
        return self.describe()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        with self._lock:  # a live binding's thread draws under the same lock
            reopen_figures(self)
            sync_figures(self)
        bundle = dict(super()._repr_mimebundle_(**kwargs) or {})
        bundle["text/plain"] = self.describe()
        bundle.update(picture_bundle(self.picture(), bundle["text/plain"]))
        return bundle

    def _update(self, snapshot: Snapshot, events: list[BrokerEvent]) -> None:
        raise NotImplementedError

    def _draw(self) -> None:
        raise NotImplementedError

    def _act(self, action: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a what-if button's action; show a broker error instead of raising it.

        A button click is the reader taking over: a pinned view follows again."""
        self.follow()
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


_TRACE_REGISTRIES = ("_legend", "_ring_legend", "_trace_of", "_traces")
"""Views' maps from a name to the index of a trace they added to their figure."""


class _Text:
    """Stands in for an HTML widget while a still is drawn (no widget, no comm)."""

    def __init__(self, value: str) -> None:
        self.value = value


class Still:
    """A picture of one step of a view, displayed as an image (no widget)."""

    def __init__(self, svg: str, text: str) -> None:
        self.svg = svg
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return {"text/plain": self.text, **picture_bundle(self.svg, self.text)}
