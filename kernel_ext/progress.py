"""Progress for long magics: an ipywidgets bar in a kernel, tqdm as a fallback, else nothing.

:class:`Progress` is used from the kernel's main thread only (the magic that runs the long
operation updates it), and redraws at most ten times a second so a fast loop never floods
the Jupyter server's IOPub rate limit. Outside a kernel (terminal IPython, tests) it shows
nothing unless asked to.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["Progress", "in_kernel"]

_MIN_INTERVAL_S = 0.1


def in_kernel(shell: Any = None) -> bool:
    """Whether code runs in a Jupyter kernel (where widgets can be displayed)."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


class Progress:
    """A bar for ``total`` steps, or a status line when ``total`` is ``None``.

    ``enabled=None`` shows it only in a kernel. Use it as a context manager; ``update(done)``
    sets the number of steps done.
    """

    def __init__(self, total: int | None, description: str, *, enabled: bool | None = None,
                 clock: Any = time.monotonic) -> None:
        self.total = total
        self.description = description
        self.done = 0
        self.backend: str | None = None
        self._clock = clock
        self._last = -float("inf")
        self._started = clock()
        self._bar: Any = None
        self._label: Any = None
        self._tqdm: Any = None
        self._box: Any = None
        self._handle: Any = None
        if enabled is None:
            enabled = in_kernel()
        if enabled:
            self._open()

    def _open(self) -> None:
        try:
            import ipywidgets
            from IPython.display import display
        except ImportError:
            ipywidgets = None
        if ipywidgets is not None:
            self._label = ipywidgets.HTML(value=self._text())
            children: list[Any] = []
            if self.total is not None:
                self._bar = ipywidgets.IntProgress(
                    value=0, min=0, max=max(1, self.total), bar_style="info",
                    layout=ipywidgets.Layout(width="40%"),
                )
                children.append(self._bar)
            children.append(self._label)
            self._box = ipywidgets.HBox(children)
            self._handle = display(self._bundle(self._text()), raw=True, display_id=True)
            self.backend = "ipywidgets"
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return
        self._tqdm = tqdm(total=self.total, desc=self.description, leave=True)
        self.backend = "tqdm"

    def _bundle(self, text: str) -> dict[str, Any]:
        """The bar's output: the widget, and its line as text (what a saved notebook keeps
        instead of the box's ``HBox(children=…)`` repr)."""
        bundle = dict(self._box._repr_mimebundle_())
        bundle["text/plain"] = text
        return bundle

    def _text(self, final: str | None = None) -> str:
        if final is not None:
            return f"{self.description}: {final}"
        if self.total is None:
            return f"{self.description}…"
        return f"{self.description}: {self.done}/{self.total}"

    def update(self, done: int, *, force: bool = False) -> None:
        """Record ``done`` steps; redraw if the last redraw is 0.1 s old (or ``force``)."""
        self.done = done
        now = self._clock()
        if not force and now - self._last < _MIN_INTERVAL_S:
            return
        self._last = now
        if self._bar is not None:
            self._bar.value = min(done, self._bar.max)
        if self._label is not None:
            self._label.value = self._text()
        if self._tqdm is not None:
            self._tqdm.n = done
            self._tqdm.refresh()

    def close(self, ok: bool = True, message: str | None = None) -> None:
        """Finish: a full green bar (or a red one when ``ok`` is false) and a final line."""
        elapsed = self._clock() - self._started
        final = message or (f"{self.done} in {elapsed:.1f} s" if self.total is not None
                            else f"done in {elapsed:.1f} s")
        if not ok and message is None:
            final = f"stopped after {self.done}"
        if self._bar is not None:
            self._bar.value = min(self.done, self._bar.max)
            self._bar.bar_style = "success" if ok else "danger"
        if self._label is not None:
            self._label.value = self._text(final)
        if self._handle is not None:
            self._handle.update(self._bundle(self._text(final)), raw=True)
        if self._tqdm is not None:
            self._tqdm.n = self.done
            self._tqdm.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.close(ok=exc_type is None)
