"""A view's history: every frame it drew, kept as a step that can be drawn again.

Each refresh of a :class:`~.stepper.Stepper` ends with a :class:`Step`: a label (what the
what-if core just did, e.g. ``"add consumer C4"``, or the time of a live frame) and the
immutable state of each view it draws (:class:`~.stepper.State`). :class:`HistoryBar`
is the ◀ slider ▶ row under the picture that scrubs through the steps; ``view.at(n)`` and
``view.show_step(label)`` pin a view to one of them. The history keeps the last
``limit`` steps; a step keeps its number when older ones are dropped.
"""

from __future__ import annotations

import html
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import ipywidgets

__all__ = ["History", "HistoryBar", "Step"]


@dataclass(frozen=True)
class Step:
    """One drawn frame: its number, its label, the source's clock and the view's state
    (``parts``: each member's state, when one picture is drawn by several views)."""

    index: int
    label: str
    time_ms: int | None
    state: Mapping[str, Any]
    parts: tuple[Mapping[str, Any], ...] = ()


class History:
    """The steps of one view, oldest first, numbered from 0."""

    def __init__(self, limit: int = 1000) -> None:
        if limit < 1:
            raise ValueError(f"a history keeps at least one step, not {limit}")
        self._steps: deque[Step] = deque(maxlen=limit)
        self._next = 0

    def __len__(self) -> int:
        return self._next

    def __iter__(self) -> Iterator[Step]:
        return iter(list(self._steps))

    @property
    def labels(self) -> list[str]:
        return [step.label for step in self._steps]

    @property
    def latest(self) -> Step | None:
        return self._steps[-1] if self._steps else None

    def record(self, label: str, time_ms: int | None, state: Mapping[str, Any],
               parts: tuple[Mapping[str, Any], ...] = ()) -> Step:
        step = Step(self._next, label, time_ms, state, parts or (state,))
        self._steps.append(step)
        self._next += 1
        return step

    def __getitem__(self, index: int) -> Step:
        """Step ``index`` (negative counts from the latest, as for a list)."""
        if not self._steps:
            raise IndexError("this view has drawn no step yet")
        number = index + self._next if index < 0 else index
        first = self._steps[0].index
        if not first <= number < self._next:
            raise IndexError(
                f"no step {index}: this view has steps {first}..{self._next - 1}"
            )
        return self._steps[number - first]

    def find(self, label: str) -> Step:
        """The latest step labelled ``label`` — or, failing that, whose label contains it."""
        for match in (lambda s: s.label == label, lambda s: label in s.label):
            for step in reversed(self._steps):
                if match(step):
                    return step
        known = ", ".join(repr(s.label) for s in self._steps) or "none"
        raise KeyError(f"no step labelled {label!r}; the steps are: {known}")


class HistoryBar(ipywidgets.HBox):
    """◀ ▶ buttons, a step slider and the shown step's label; moving calls ``show(n)``."""

    def __init__(self, show: Callable[[int], None]) -> None:
        self._show = show
        self._syncing = False
        self.back = ipywidgets.Button(description="◀", tooltip="previous step",
                                      layout={"width": "36px"})
        self.forward = ipywidgets.Button(description="▶", tooltip="next step",
                                         layout={"width": "36px"})
        self.slider = ipywidgets.IntSlider(
            min=0, max=0, value=0, description="step", continuous_update=True,
            layout={"width": "320px"},
        )
        self.label = ipywidgets.HTML()
        self.back.on_click(lambda _b: self._move(-1))
        self.forward.on_click(lambda _b: self._move(+1))
        self.slider.observe(self._slid, names="value")
        super().__init__([self.back, self.slider, self.forward, self.label],
                         layout={"align_items": "center"})

    def _move(self, delta: int) -> None:
        value = min(self.slider.max, max(self.slider.min, self.slider.value + delta))
        if value != self.slider.value:
            self.slider.value = value

    def _slid(self, change: dict[str, Any]) -> None:
        if not self._syncing:
            self._show(int(change["new"]))

    def sync(self, shown: Step, first: int, last: int, pinned: bool) -> None:
        """Show ``shown`` among steps ``first..last`` without calling back."""
        self._syncing = True
        try:
            with self.hold_sync():
                self.slider.min, self.slider.max = first, max(first, last)
                self.slider.value = shown.index
                self.back.disabled = shown.index <= first
                self.forward.disabled = shown.index >= last
                where = "latest" if shown.index == last else f"of {last}"
                pin = " · pinned" if pinned and shown.index != last else ""
                self.label.value = (f"<b>{html.escape(shown.label)}</b> "
                                    f"<span style='color:#666'>({where}{pin})</span>")
        finally:
            self._syncing = False
