"""Clocks and timers for the sans-I/O core: the core asks a clock for the time, never the OS.

The shell passes :class:`LoopClock` (the wall clock read once per turn of its loop);
tests and the widgets' what-if mode pass
:class:`ManualClock` and move time by hand, so timing rules are tested without sleeping.
Timers (:class:`TimerQueue`) fire only when the core's ``tick`` runs them at the clock's
time.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class Clock(Protocol):
    """Anything that tells the time in milliseconds since the epoch."""

    def now_ms(self) -> int: ...


class WallClock:
    """The real time, for the I/O shell."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class LoopClock:
    """The real time read once per turn of the shell's loop: :meth:`read` when the loop
    wakes up, and every :meth:`now_ms` until the next read answers that time (a burst of
    commands is handled at one instant, as one group commit makes it durable at one)."""

    def __init__(self) -> None:
        self._now = time.time_ns() // 1_000_000

    def read(self) -> int:
        """Read the wall clock (never backwards) and return it."""
        now = time.time_ns() // 1_000_000
        if now > self._now:
            self._now = now
        return self._now

    def now_ms(self) -> int:
        return self._now


class HousekeepingGate:
    """Lets the shell's loop run the core's ``tick`` (timers, housekeeping, pings) at most
    once per millisecond of its clock: a burst of turns within one millisecond would repeat
    work that costs microseconds per topic and subscription for nothing. A turn that had to
    skip it makes the next poll wait at most one millisecond, so nothing due waits longer.
    """

    def __init__(self) -> None:
        self._last = -1  # the millisecond of the last tick
        self.skipped = False

    def due(self, now_ms: int) -> bool:
        """Whether this turn (at ``now_ms``) runs the tick; remembers that it did."""
        self.skipped = now_ms == self._last
        if not self.skipped:
            self._last = now_ms
        return not self.skipped

    def wait_ms(self, wait_ms: int) -> int:
        """How long the next poll may wait, given how long it would (ms)."""
        return 1 if self.skipped else wait_ms


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


@dataclass(order=True)
class TimerHandle:
    """A scheduled callback; :meth:`cancel` stops it from running."""

    at_ms: int
    seq: int
    callback: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class TimerQueue:
    """The core's timers, run by the caller when the clock says they are due."""

    def __init__(self) -> None:
        self._heap: list[TimerHandle] = []
        self._seq = itertools.count()

    def schedule(self, at_ms: int, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` at ``at_ms`` (ms since the epoch) or at the first tick after."""
        handle = TimerHandle(at_ms, next(self._seq), callback)
        heapq.heappush(self._heap, handle)
        return handle

    def next_deadline(self) -> int | None:
        """When the earliest live timer is due, if any is."""
        heap = self._heap
        while heap and heap[0].cancelled:
            heapq.heappop(heap)
        return heap[0].at_ms if heap else None

    def run_due(self, now_ms: int) -> None:
        """Run every live timer due at or before ``now_ms``, earliest first."""
        heap = self._heap
        while heap and heap[0].at_ms <= now_ms:
            handle = heapq.heappop(heap)
            if not handle.cancelled:
                handle.callback()
