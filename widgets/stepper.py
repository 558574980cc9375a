"""History's one owner: the steps of a picture, the bar that scrubs them, and its still form.

A :class:`Stepper` serves one displayed picture — a single view, or a view made of others
(the dashboard's tabs). Its members are views. On each change of the source it has every
member read the change (``_update``), then records ONE step: a label and, per member, the
immutable :class:`State` that member gives for it (``capture()``). Any step is shown by
handing each member its state (``draw(state)``): no attribute of a view is ever swapped
in or out, so the latest state is always the view's own and an earlier one is only drawn.

The stepper also holds what follows from having steps: the one step bar (◀ slider ▶) of the
picture, pinning (:meth:`Stepper.at`, ``pin``, ``follow``, ``show_step``), a still of a step
(:meth:`Stepper.still`) and the static SVG that goes into a displayed view's bundle, so a
notebook opened without a kernel still has the picture of the step it shows.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .history import History, HistoryBar, Step
from .static import html_to_lines, picture_bundle, picture_svg

if TYPE_CHECKING:
    from .base import View

__all__ = ["WAITING", "State", "Stepper", "Still"]

WAITING = "waiting for the topic's first stats…"


class State(Mapping[str, Any]):
    """One view's state at one step: read-only, by key (``state["ranges"]``) or attribute
    (``state.ranges``). Its values are copies: later changes of the view never reach it."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_values", copy.deepcopy(dict(values)))

    @classmethod
    def of(cls, owner: object, fields: tuple[str, ...]) -> State:
        """The current values of ``owner``'s ``fields``."""
        return cls({name: getattr(owner, name) for name in fields})

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"a step's state has no {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a step's state is read-only")

    def __repr__(self) -> str:
        return f"State({self._values!r})"


class Stepper:
    """The steps of one picture; ``owner`` is the view displayed (its figures are pictured)."""

    def __init__(self, owner: View) -> None:
        self.owner = owner
        self.members: list[View] = []
        self.history = History()
        self.pinned: int | None = None
        """The step shown while later ones are recorded (``None``: it follows the latest)."""
        self.bar = HistoryBar(self._scrub)
        self.lock = threading.RLock()
        self.animating = False
        """True while a new step is drawn as it happens (a view may animate the change)."""
        self.picturing = False
        """True while a still is drawn into copies (a view leaves its other widgets be)."""
        self._shown: int | None = None

    def join(self, view: View) -> int:
        """Make ``view`` a member; its states are part of every step from now on."""
        self.members.append(view)
        return len(self.members) - 1

    # -- recording ------------------------------------------------------------------------

    def refresh(self) -> None:
        """Have every member read the source's change, record the step and draw it (unless
        pinned to an earlier step: then only the bar grows)."""
        with self.lock:
            source = self.owner.source
            snapshot = source.snapshot()
            if snapshot is None:
                for view in self.members:
                    view.message.value = WAITING
                return
            i = 0
            while i < len(self.members):  # a member may add members (the dashboard's tabs)
                self.members[i]._refresh_from(snapshot)
                i += 1
            self.record(self.owner._step_label(snapshot), snapshot.time_ms)

    @property
    def next_index(self) -> int:
        """The number the next recorded step gets."""
        return len(self.history)

    def record(self, label: str, time_ms: int | None = None) -> Step:
        """Keep every member's current state as a new step; draw it unless pinned."""
        with self.lock:
            parts = tuple(view.capture() for view in self.members)
            step = self.history.record(label, time_ms, parts[0], parts)
            if self.pinned is None:
                self.animating = True
                try:
                    self._draw(step)
                finally:
                    self.animating = False
            else:
                self._sync_bar()
            return step

    # -- showing --------------------------------------------------------------------------

    def _draw(self, step: Step) -> None:
        for i, view in enumerate(self.members):
            if i < len(step.parts):  # a member that joined later has no state in earlier steps
                with view.hold_sync():
                    view.draw(step.parts[i])
        self._shown = step.index
        self._sync_bar()

    def show(self, index: int) -> None:
        with self.lock:
            self._draw(self.history[index])

    def redraw(self) -> None:
        """Draw the shown step again (an input of a view changed, not the source)."""
        with self.lock:
            if len(self.history):
                self.show(self._shown if self._shown is not None else -1)

    def state_of(self, view: View, step: Step | None = None) -> Any:
        """``view``'s state in ``step`` (default: the step shown)."""
        chosen = step if step is not None else self.step
        return chosen.parts[self.members.index(view)]

    def _sync_bar(self) -> None:
        latest = self.history.latest
        if latest is None:
            return
        first = next(iter(self.history)).index
        self.bar.sync(self.step, first, latest.index, self.pinned is not None)

    def _scrub(self, index: int) -> None:
        """The slider moved: show that step; at the end the picture follows again."""
        self.pinned = None if index == len(self.history) - 1 else index
        self.show(index)

    @property
    def step(self) -> Step:
        """The step shown."""
        return self.history[self._shown if self._shown is not None else -1]

    def at(self, step: int) -> None:
        """Pin to step ``step`` (``-1``: the latest so far)."""
        with self.lock:
            index = self.history[step].index
            self.pinned = index
            self.show(index)

    def pin(self) -> None:
        """Pin to the step shown now. A live binding's thread records steps under the lock:
        a change it has read in part (a view's model already holds an event a cell waited
        for) is recorded and shown before the step is chosen, not after."""
        with self.lock:
            self.at(self.step.index)

    def find(self, step: int | str) -> Step:
        """A step by number or by label (see :meth:`History.find`)."""
        return self.history.find(step) if isinstance(step, str) else self.history[step]

    def follow(self) -> None:
        """Unpin: show the latest step, and every new one."""
        self.pinned = None
        if len(self.history):
            self.show(-1)

    # -- pictures -------------------------------------------------------------------------

    def picture(self, view: View | None = None) -> str:
        """An SVG of the step shown: ``view``'s figures and caption (default: the owner's)."""
        view = view or self.owner
        with self.lock:
            step = self.step if len(self.history) else None
            title = f"step {step.index}: {step.label}" if step else ""
            return picture_svg(view.figures(), view.caption(), title)

    def describe(self, view: View | None = None, step: Step | None = None) -> str:
        """One line for ``text/plain``: class, step and the first figure's title."""
        view = view or self.owner
        if step is None and len(self.history):
            step = self.step
        figs = view.figures()
        title = figs[0].layout.title.text if figs and figs[0].layout.title.text else ""
        title = " · ".join(html_to_lines(title))  # text/plain: no <br>, <span>, &amp;
        where = f" step {step.index} ({step.label!r})" if step else ""
        return f"<{type(view).__name__}{where}: {title}>"

    def still(self, step: int | str = -1, view: View | None = None) -> Still:
        """A picture of one step that stays as it is. The step is drawn into copies of the
        members' outputs (:data:`OUTPUTS`), never into the displayed widgets: a browser
        showing them gets no message."""
        view = view or self.owner
        with self.lock:
            chosen = self.find(step)
            saved = [_draw_into_copies(member) for member in self.members]
            self.picturing = True
            try:
                for i, member in enumerate(self.members):
                    if i < len(chosen.parts):
                        member.draw(chosen.parts[i])
                title = f"step {chosen.index}: {chosen.label}"
                svg = picture_svg(view.figures(), view.caption(), title)
                text = "<picture of " + self.describe(view, chosen)[1:]
            finally:
                self.picturing = False
                for member, outputs in zip(self.members, saved, strict=True):
                    for name, value in outputs.items():
                        setattr(member, name, value)
            return Still(svg, text)

    def bundle(self, view: View, widget_bundle: Mapping[str, Any]) -> dict[str, Any]:
        """A displayed view's bundle: the widget, one line of text and the step's picture."""
        bundle = dict(widget_bundle)
        bundle["text/plain"] = self.describe(view)
        bundle.update(picture_bundle(self.picture(view), bundle["text/plain"]))
        return bundle


OUTPUTS = ("fig", "ring_fig", "table", "header", "lookup_result", "ring_shown")
"""What a view's ``draw`` writes to: the figures, HTML widgets and flags a still copies."""
_REGISTRIES = ("_legend", "_ring_legend", "_trace_of", "_traces")
"""Views' maps from a name to the index of a trace they added to their figure."""


class _Text:
    """Stands in for an HTML widget while a still is drawn (no widget, no comm)."""

    def __init__(self, value: str) -> None:
        self.value = value


def _draw_into_copies(view: View) -> dict[str, Any]:
    """Point ``view``'s outputs at copies; return the originals to put back."""
    import ipywidgets
    import plotly.graph_objects as go

    saved = {name: getattr(view, name) for name in (*OUTPUTS, *_REGISTRIES)
             if hasattr(view, name)}
    for name, value in saved.items():
        if isinstance(value, go.FigureWidget):
            value = go.Figure(value)
        elif isinstance(value, ipywidgets.HTML):
            value = _Text(value.value)
        elif isinstance(value, dict):
            value = dict(value)  # traces a still adds must not be looked up in the real figure
        setattr(view, name, value)
    return saved


class Still:
    """A picture of one step of a view, displayed as an image (no widget)."""

    def __init__(self, svg: str, text: str) -> None:
        self.svg = svg
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return {"text/plain": self.text, **picture_bundle(self.svg, self.text)}
