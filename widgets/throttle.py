"""Frame coalescing: turn a flood of "something changed" into at most a few redraws a second.

A broker can emit thousands of events a second; a Jupyter server drops comm messages past
1000 a second (about 4 per figure update), and a browser draws far fewer frames than that.
:class:`FrameThrottle` keeps the latest state dirty and draws it at most ``max_fps`` times a
second, always drawing the final state once the burst ends. It is passive (no thread, no
timer of its own): its single writer — the live binding's reader thread — calls
:meth:`FrameThrottle.request` when something changed and :meth:`FrameThrottle.poll` when it
wakes up, sleeping at most :meth:`FrameThrottle.delay` in between. The clock is injectable,
so tests drive it without sleeping.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable

__all__ = ["FrameThrottle"]

log = logging.getLogger("pulsarlab.widgets")


class FrameThrottle:
    """Coalesces redraw requests into at most ``max_fps`` calls of ``render`` a second."""

    def __init__(
        self,
        render: Callable[[], None],
        max_fps: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_fps <= 0:
            raise ValueError(f"max_fps must be > 0, not {max_fps!r}")
        self._render = render
        self.interval = 1.0 / max_fps
        self._clock = clock
        self._last = -math.inf
        self.dirty = False
        self.requests = 0
        self.frames = 0

    def request(self) -> bool:
        """Note that the state changed; draw now if a frame is due. Returns whether it drew."""
        self.requests += 1
        self.dirty = True
        return self.poll()

    def poll(self) -> bool:
        """Draw if the state is dirty and the last frame is at least one interval old."""
        if not self.dirty:
            return False
        if self._clock() - self._last < self.interval:
            return False
        return self.flush()

    def flush(self) -> bool:
        """Draw now if dirty, whatever the rate (the last frame before stopping)."""
        if not self.dirty:
            return False
        self.dirty = False
        self._last = self._clock()
        self.frames += 1
        try:
            self._render()
        except Exception:
            log.exception("a widget frame failed to render")
        return True

    def delay(self) -> float | None:
        """Seconds until a pending frame is due (0 if due now), or ``None`` if nothing is."""
        if not self.dirty:
            return None
        return max(0.0, self._last + self.interval - self._clock())
