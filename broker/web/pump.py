"""An asyncio loop that another loop drives: the broker thread serves the admin REST API.

The broker's loop waits on its ZeroMQ poller; Tornado needs an asyncio loop. Rather than a
second thread (each admin call then costs two cross-thread wake-ups, most of its latency),
the broker polls this loop's selector descriptor beside its sockets and, when it is ready
or a timer is due, calls :meth:`PumpedLoop.pump`: the I/O ready now and the callbacks it
schedules run to completion, without ever waiting.

Only asyncio's public API is used. A pump is the documented idiom
``loop.call_soon(loop.stop); loop.run_forever()`` — the selector is polled without waiting
(a callback is ready) and what is ready runs — except that the callback scheduled first
stops the loop only when no other was scheduled since; else it schedules itself again, so
one ``run_forever`` runs a round per generation of callbacks (and a pump runs it again if
the last round's I/O scheduled one). What the driver must know beyond the descriptor —
whether a callback is ready, when the next timer is due — the loop learns by
overriding the public scheduling methods (``call_soon``, ``call_at``, ``call_later``)
rather than reading the base loop's ready queue and timer heap. Callbacks scheduled from
another thread (``call_soon_threadsafe``) wake the selector's self-pipe, so the
descriptor announces them.
"""

from __future__ import annotations

import asyncio
import heapq
import selectors
import sys
from typing import Any

# Rounds of callbacks one pump runs at most before the broker's own work has its turn.
MAX_ROUNDS = 64

# A timer heap holding this many more entries than after its last clean-up is rebuilt
# without the cancelled ones (Tornado cancels a timeout per request).
_COMPACT_AT = 64


class PumpedLoop(asyncio.SelectorEventLoop):
    """A selector event loop run in steps by :meth:`pump` rather than ``run_forever``."""

    def __init__(self) -> None:
        selector = selectors.DefaultSelector()
        super().__init__(selector)
        self.selector = selector
        self._pump_soon = False  # a callback was scheduled since the last round began
        self._pump_timers: list[asyncio.TimerHandle] = []  # heap, by when()
        self._pump_compact_at = _COMPACT_AT
        self._pump_id = 0  # pumps so far
        self._pump_rounds = 0  # rounds of the current pump

    @staticmethod
    def supported() -> bool:
        """Whether the platform's selector has a descriptor another poller can watch
        (epoll, kqueue; not Windows' select)."""
        return sys.platform != "win32" and hasattr(selectors.DefaultSelector, "fileno")

    def fileno(self) -> int:
        """The selector's descriptor: readable when any I/O of this loop is ready."""
        return self.selector.fileno()  # type: ignore[attr-defined]

    # The public scheduling methods, noted on their way to the base loop.

    def call_soon(self, callback: Any, *args: Any, context: Any = None) -> asyncio.Handle:
        self._pump_soon = True
        return super().call_soon(callback, *args, context=context)

    def call_at(self, when: float, callback: Any, *args: Any,
                context: Any = None) -> asyncio.TimerHandle:
        timer = super().call_at(when, callback, *args, context=context)
        heapq.heappush(self._pump_timers, timer)
        if len(self._pump_timers) >= self._pump_compact_at:
            self._compact_timers()
        return timer

    def call_later(self, delay: float, callback: Any, *args: Any,
                   context: Any = None) -> asyncio.TimerHandle:
        if delay is None:
            raise TypeError("delay must not be None")
        return self.call_at(self.time() + delay, callback, *args, context=context)

    def _compact_timers(self) -> None:
        timers = self._pump_timers  # in place: a pump holds it
        timers[:] = [timer for timer in timers if not timer.cancelled()]
        heapq.heapify(timers)
        self._pump_compact_at = len(timers) + _COMPACT_AT

    def _next_timer(self) -> asyncio.TimerHandle | None:
        timers = self._pump_timers
        while timers and timers[0].cancelled():
            heapq.heappop(timers)
        return timers[0] if timers else None

    def wait_ms(self, cap_ms: float) -> float:
        """How long the driving loop may wait (at most ``cap_ms``) before :meth:`pump` has
        work that no descriptor announces: a callback ready now, or the next timer."""
        if self._pump_soon:
            return 0
        timer = self._next_timer()
        if timer is None:
            return cap_ms
        return max(0.0, min(cap_ms, (timer.when() - self.time()) * 1000))

    def pump(self) -> None:
        """Run the ready I/O, due timers and every callback they schedule (bounded by
        :data:`MAX_ROUNDS`), never blocking."""
        self._pump_id += 1
        self._pump_rounds = 0
        began = self.time()
        # A callback the last round's I/O scheduled after the stopping one ran: one more
        # run here costs less than another turn of the driver's loop.
        while self._pump_rounds < MAX_ROUNDS:
            self._pump_rounds += 1
            self.call_soon(self._end_round, self._pump_id)  # ready: the poll does not wait
            self._pump_soon = False
            self.run_forever()
            if not self._pump_soon:
                break
        # Every timer due when the pump began has run (or was cancelled).
        timers = self._pump_timers
        while timers and (timers[0].cancelled() or timers[0].when() <= began):
            heapq.heappop(timers)

    def _end_round(self, pump_id: int) -> None:
        """The last callback of a round: another round if a callback was scheduled since
        this one (it then runs after them), else the pump stops."""
        if pump_id != self._pump_id:  # left behind by a pump a callback's exception cut
            return
        if self._pump_soon and self._pump_rounds < MAX_ROUNDS:
            self._pump_rounds += 1
            self.call_soon(self._end_round, pump_id)
            self._pump_soon = False
        else:
            self.stop()
