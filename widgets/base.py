"""The base of every view: bound to a source, it keeps a state and draws any step's state.

A view is an ``ipywidgets.VBox`` (so it displays itself) with two jobs of its own: read
each change of its source into its plain-Python state (what tests assert on: ranges,
shares, strips, lanes) in :meth:`View._update`, and draw a step's immutable state
(:meth:`View.draw`, pushing it into the plotly ``FigureWidget`` inside ``batch_update()`` —
one comm burst per frame). The attributes named in ``_history_fields`` make up that state.

Everything about steps belongs to the view's :class:`~.stepper.Stepper`: the history, the
one step bar under the picture, pinning (``view.at(n)`` / ``show_step(label)`` / ``pin()``
/ ``follow()``, a tutorial pins each view cell to the step its text describes), stills and
the static SVG a displayed view carries. A view built with ``stepper=`` another's joins
that picture (a dashboard's tabs): no step bar and no control block of its own.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

import ipywidgets
import plotly.graph_objects as go

from pulsarlab.broker.errors import PulsarLabError

from .history import History, HistoryBar, Step
from .source import BrokerEvent, Snapshot, Source
from .static import html_to_lines
from .stepper import WAITING, State, Stepper, Still

if TYPE_CHECKING:
    from .whatif import WhatIf

__all__ = ["State", "Still", "View", "error_html", "prepare_display", "reopen_figures",
           "sync_figures"]


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


def prepare_display(widget: ipywidgets.Widget) -> None:
    """What every holder of plotly figures does just before its display message: reopen
    the figures never shown (:func:`reopen_figures`), publish the state of the others
    (:func:`sync_figures`). A :class:`View`, the :class:`~.compare.CompareView` and the
    backlog chart all go through here, so none of them opens blank."""
    reopen_figures(widget)
    sync_figures(widget)


_WAITING = "waiting for the topic's first stats…"

class View(ipywidgets.VBox):
    """A live-or-what-if picture of one topic/subscription."""

    _history_fields: ClassVar[tuple[str, ...]] = ()
    """The attributes that make up one step's state (see :meth:`capture`)."""

    def __init__(self, source: Source, *, stepper: Stepper | None = None,
                 **kwargs: Any) -> None:
        """``stepper``: the picture this view is part of (another view's); without it the
        view is a picture of its own, with its own step bar."""
        super().__init__(**kwargs)
        self.source = source
        self.frames = 0
        """Changes of the source this view has read."""
        self.message = ipywidgets.HTML()
        self.composed = stepper is not None
        """True when the view is part of another's picture (no bar, no controls)."""
        self.stepper = stepper if stepper is not None else Stepper(self)
        self.stepper.join(self)
        self._events_seen = 0

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

    def _bind(self, children: Sequence[ipywidgets.Widget], *, controls: bool = False,
              keys: str | None = None) -> None:
        """Show ``children``, then (what-if, ``controls``, a picture of its own) the
        generic control block publishing ``keys``, then the message line; a view of its
        own puts the step bar under its first child, follows the source and draws."""
        children = list(children)
        if controls and self.source.simulated and not self.composed:
            from .controls import WhatIfControls

            options = {"keys": keys} if keys is not None else {}
            children.append(WhatIfControls(self.require_whatif(), on_action=self.follow,
                                           **options))
        children.append(self.message)
        if not self.composed:
            children.insert(1, self.stepper.bar)
        for fig in self.figures(all_figures=True):  # plotly's toolbar beside the plot
            fig.layout.modebar.orientation = "v"
            fig.layout.margin.r = max(50, fig.layout.margin.r or 0)
        self.children = tuple(children)
        if not self.composed:
            self.source.on_change(self.refresh)
            self.refresh()
        sync_figures(self)

    # -- reading the source ---------------------------------------------------------------

    def refresh(self) -> None:
        """Read the source and record the step (the whole picture's, if composed)."""
        self.stepper.refresh()

    def _refresh_from(self, snapshot: Snapshot) -> None:
        """Read ``snapshot`` and the events since the last one into the view's state."""
        if self.message.value == WAITING:
            self.message.value = ""
        events, self._events_seen = self.source.events.since(self._events_seen)
        self._update(snapshot, events)
        self.frames += 1

    def _step_label(self, snapshot: Snapshot) -> str:
        label = getattr(self.source, "last_action", None)
        if self.source.simulated or label is not None:
            return str(label or "change")
        return f"t = {self.seconds(snapshot.time_ms):.1f} s"

    def capture(self) -> State:
        """The view's state now, as a step keeps it."""
        return State.of(self, self._history_fields)

    def _record(self, label: str) -> Step:
        """Keep the current state as a new step (not a change of the source: a preview)."""
        return self.stepper.record(label)

    def _redraw(self) -> None:
        """Draw the shown step again (an input of the view changed, not the source)."""
        self.stepper.redraw()

    # -- steps (the stepper's) ------------------------------------------------------------

    @property
    def history(self) -> History:
        return self.stepper.history

    @property
    def history_bar(self) -> HistoryBar:
        return self.stepper.bar

    @property
    def pinned(self) -> int | None:
        """The step the picture is pinned to (``None``: it follows the latest)."""
        return self.stepper.pinned

    @property
    def step(self) -> Step:
        """The step the view shows."""
        return self.stepper.step

    def at(self, step: int) -> View:
        """Pin the picture to step ``step`` (``-1``: the latest so far) and return the view.

        New frames are still recorded (the slider grows), but the picture stays on this
        step until the slider moves or a button of the view is used.
        """
        self.stepper.at(step)
        return self

    def pin(self) -> View:
        """Pin the view to the step it shows now (a tutorial's view cell ends with this,
        so later cells that change the source do not change what this output shows)."""
        self.stepper.pin()
        return self

    def show_step(self, label: str) -> View:
        """Pin the view to the latest step labelled ``label`` (or containing it)."""
        return self.at(self.history.find(label).index)

    def follow(self) -> View:
        """Unpin: show the latest step, and every new one."""
        self.stepper.follow()
        return self

    def still(self, step: int | str = -1) -> Still:
        """A picture of one step (a number or a label) that stays as it is: to show the same
        view at two steps in two cells (a pinned view is one widget, shown once)."""
        return self.stepper.still(step, self)

    def step_summary(self, step: int | None = None) -> dict[str, Any]:
        """:meth:`summary` of step ``step`` (default: the shown one)."""
        chosen = self.step if step is None else self.history[step]
        return self.summary(self.stepper.state_of(self, chosen))

    def summary(self, state: Any = None) -> dict[str, Any]:
        """The numbers of ``state`` (default: the latest — the view's own attributes)."""
        return {}

    # -- static picture -------------------------------------------------------------------

    def figures(self, all_figures: bool = False) -> list[go.FigureWidget]:
        """The plotly figures the view shows (drawn into its static picture); with
        ``all_figures``, also those hidden in the step shown."""
        names = ("fig", "ring_fig") if all_figures else ("fig",)
        return [f for f in (getattr(self, n, None) for n in names)
                if isinstance(f, go.FigureWidget | go.Figure)]  # a Figure: a still's copy

    def caption(self) -> list[str]:
        """Text lines under the static picture (the view's table, as text)."""
        table = getattr(self, "table", None)
        return html_to_lines(table.value) if table is not None else []

    def picture(self) -> str:
        """An SVG of the step the view shows: its figures and its table."""
        return self.stepper.picture(self)

    def describe(self) -> str:
        """One line for ``text/plain``: class, shown step and the figure's title."""
        return self.stepper.describe(self)

    def __repr__(self) -> str:
        return self.describe()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        with self.stepper.lock:  # a live binding's thread draws under the same lock
            prepare_display(self)
        return self.stepper.bundle(self, super()._repr_mimebundle_(**kwargs) or {})

    def _update(self, snapshot: Snapshot, events: list[BrokerEvent]) -> None:
        raise NotImplementedError

    def draw(self, state: Any) -> None:
        """Draw ``state`` (a step's :class:`State`, or the view itself for the latest)."""
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
