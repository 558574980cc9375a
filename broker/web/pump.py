"""An asyncio loop that another loop drives: the broker thread serves the admin REST API.

The broker's loop waits on its ZeroMQ poller; Tornado needs an asyncio loop. Rather than a
second thread (each admin call then costs two cross-thread wake-ups, most of its latency),
the broker polls this loop's selector descriptor beside its sockets and, when it is ready
or a timer is due, calls :meth:`PumpedLoop.pump`: the I/O ready now and the callbacks it
schedules run to completion, without ever waiting.
"""

from __future__ import annotations

import asyncio
import selectors
import sys

# Rounds of callbacks one pump runs at most before the broker's own work has its turn.
MAX_ROUNDS = 64


def _noop() -> None:
    pass


class PumpedLoop(asyncio.SelectorEventLoop):
    """A selector event loop run in steps by :meth:`pump` rather than ``run_forever``."""

    def __init__(self) -> None:
        selector = selectors.DefaultSelector()
        super().__init__(selector)
        self.selector = selector

    @staticmethod
    def supported() -> bool:
        """Whether the platform's selector has a descriptor another poller can watch
        (epoll, kqueue; not Windows' select)."""
        return sys.platform != "win32" and hasattr(selectors.DefaultSelector, "fileno")

    def fileno(self) -> int:
        """The selector's descriptor: readable when any I/O of this loop is ready."""
        return self.selector.fileno()  # type: ignore[attr-defined]

    def wait_ms(self, cap_ms: float) -> float:
        """How long the driving loop may wait (at most ``cap_ms``) before :meth:`pump` has
        work that no descriptor announces: a callback ready now, or the next timer."""
        if self._ready:  # type: ignore[attr-defined]
            return 0
        scheduled = self._scheduled  # type: ignore[attr-defined]
        if not scheduled:
            return cap_ms
        return max(0.0, min(cap_ms, (scheduled[0].when() - self.time()) * 1000))

    def pump(self) -> None:
        """Run the ready I/O, due timers and every callback they schedule (bounded by
        :data:`MAX_ROUNDS`), never blocking."""
        asyncio.events._set_running_loop(self)
        try:
            for _ in range(MAX_ROUNDS):
                # A ready callback makes the round poll without waiting.
                self.call_soon(_noop)
                self._run_once()  # type: ignore[attr-defined]
                if not self._ready:  # type: ignore[attr-defined]
                    return
        finally:
            asyncio.events._set_running_loop(None)
