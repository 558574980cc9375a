"""Clocks for the sans-I/O core: the core asks a clock for the time, never the OS.

The shell passes :class:`WallClock`; tests and the widgets' what-if mode pass
:class:`ManualClock` and move time by hand, so timing rules are tested without sleeping.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Anything that tells the time in milliseconds since the epoch."""

    def now_ms(self) -> int: ...


class WallClock:
    """The real time, for the I/O shell."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that only moves when told to."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError("a clock cannot move backwards")
        self._now += ms
        return self._now

    def set(self, now_ms: int) -> None:
        if now_ms < self._now:
            raise ValueError("a clock cannot move backwards")
        self._now = now_ms
