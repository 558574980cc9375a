"""Buttons that drive a what-if core: consumers, publishing, receive/ack/nack, time.

:class:`WhatIfControls` is the generic panel the cursor, timeline and flow views (and the
dashboard) show in what-if mode. Every button calls a :class:`~.whatif.WhatIf` method, so
what the views then draw is what the real broker core did.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

import ipywidgets

from pulsarlab.broker.errors import PulsarLabError

from .base import error_html
from .whatif import WhatIf

__all__ = ["WhatIfControls", "next_free_name", "parse_keys"]

_STEPS_MS = (("+100 ms", 100), ("+1 s", 1000), ("+10 s", 10_000), ("+60 s", 60_000))


def next_free_name(names: Iterable[str]) -> str:
    """The first of ``C1``, ``C2``, … that no connected consumer has."""
    taken = set(names)
    return next(f"C{n}" for n in itertools.count(1) if f"C{n}" not in taken)


def parse_keys(text: str) -> list[str | None]:
    """``"a, b, -"`` → ``["a", "b", None]`` (``-`` publishes a key-less message)."""
    return [None if k == "-" else k for k in (part.strip() for part in text.split(",")) if k]


class WhatIfControls(ipywidgets.VBox):
    """Consumer, producer and clock buttons for a :class:`WhatIf` source."""

    def __init__(
        self,
        whatif: WhatIf,
        keys: str = "k1, k2, k3, k4",
        on_action: Callable[[], object] | None = None,
    ) -> None:
        """``on_action`` runs before each button's action (a view unpins itself there)."""
        super().__init__()
        self.whatif = whatif
        self.on_action = on_action
        self.message = ipywidgets.HTML()
        self.clock = ipywidgets.HTML()
        self.new_name = ipywidgets.Text(placeholder="new consumer name")
        self._suggested = ""
        self.priority = ipywidgets.BoundedIntText(
            value=0, min=0, max=100, description="priority", layout={"width": "150px"}
        )
        add = ipywidgets.Button(description="add consumer", icon="plus", layout={"width": "auto"})
        add.on_click(lambda _b: self._run(self._add))
        self.consumer = ipywidgets.Dropdown(description="consumer", options=[])
        remove = ipywidgets.Button(description="remove consumer", icon="minus",
                                   layout={"width": "auto"})
        remove.on_click(lambda _b: self._run(whatif.remove_consumer, self.consumer.value))
        receive = ipywidgets.Button(description="receive all")
        receive.on_click(lambda _b: self._run(whatif.receive, self.consumer.value))
        ack = ipywidgets.Button(description="ack received", button_style="success")
        ack.on_click(lambda _b: self._run(whatif.ack, self.consumer.value))
        nack = ipywidgets.Button(description="nack received", button_style="warning")
        nack.on_click(lambda _b: self._run(whatif.nack, self.consumer.value))
        self.keys_box = ipywidgets.Text(value=keys, description="keys")
        publish = ipywidgets.Button(description="publish keys", icon="paper-plane")
        publish.on_click(lambda _b: self._run(whatif.publish, parse_keys(self.keys_box.value)))
        steps = []
        for label, ms in _STEPS_MS:
            button = ipywidgets.Button(description=label, layout={"width": "80px"})
            button.on_click(lambda _b, ms=ms: self._run(whatif.advance, ms))
            steps.append(button)
        self.buttons: dict[str, ipywidgets.Button] = {
            b.description: b for b in (add, remove, receive, ack, nack, publish, *steps)
        }
        self.buttons["remove"] = remove  # its earlier label, for existing callers
        self.children = (
            ipywidgets.HBox([self.new_name, self.priority, add]),
            ipywidgets.HBox([self.consumer, remove, receive, ack, nack]),
            ipywidgets.HBox([self.keys_box, publish]),
            ipywidgets.HBox([self.clock, *steps]),
            self.message,
        )
        whatif.on_change(self.sync)
        self.sync()

    def _add(self) -> None:
        self.whatif.add_consumer(self.new_name.value.strip(), priority_level=self.priority.value)

    def _run(self, action: Callable[..., object], *args: object) -> None:
        if self.on_action is not None:
            self.on_action()
        try:
            action(*args)
        except (PulsarLabError, ValueError, KeyError) as exc:  # a rule said no: show it
            self.message.value = error_html(str(exc).strip("'\""))
        else:
            self.message.value = ""

    def sync(self) -> None:
        """Follow the core: consumer list and clock."""
        names = self.whatif.consumer_names
        with self.hold_sync():
            if list(self.consumer.options) != names:
                current = self.consumer.value
                self.consumer.options = names
                if current in names:
                    self.consumer.value = current
                elif names:  # never leave the buttons aimed at nobody
                    self.consumer.value = names[0]
            if self.new_name.value in (self._suggested, *names):  # not a name being typed
                self._suggested = self.new_name.value = next_free_name(names)
            elapsed = (self.whatif.now_ms() - self.whatif.start_ms) / 1000
            self.clock.value = f"simulated time <b>t = {elapsed:.3f} s</b>"
