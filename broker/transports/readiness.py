"""Many descriptors, each watched for reading and maybe writing, in one ``epoll`` (or the
platform's selector).

The broker's loop waits in one :class:`Readiness` (``broker/poller.py`` holds it): its
ZeroMQ sockets' descriptors, the waker, the REST API's loop and every TCP socket of the
pulsar:// transports, which register and modify their sockets in it themselves. A transport
made without the loop's keeps its own (tests, tools) and asks :meth:`Readiness.ready`
without waiting. Linux's ``epoll`` is used as is (no Python layer per call); elsewhere
:class:`selectors.DefaultSelector` (kqueue on macOS) reports the same event bits.
"""

from __future__ import annotations

import select
import selectors
from collections.abc import Callable
from functools import partial

__all__ = ["READ", "READABLE", "WRITE", "Readiness"]

# epoll's bits (EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP); the fallback reports the same.
READ = 0x001
WRITE = 0x004
_ERROR = 0x008
_HANGUP = 0x010
READABLE = READ | _ERROR | _HANGUP  # a read tells what happened: data, EOF or the error


class Readiness:
    """Sockets by descriptor, each watched for :data:`READ` and maybe :data:`WRITE`."""

    def __init__(self, *, use_epoll: bool = True) -> None:
        """``use_epoll=False`` takes the selectors fallback even where there is ``epoll``
        (tests run both)."""
        self._epoll = select.epoll() if use_epoll and hasattr(select, "epoll") else None
        if self._epoll is not None:
            self.register: Callable[[int, int], None] = self._epoll.register
            self.modify: Callable[[int, int], None] = self._epoll.modify
            self.unregister: Callable[[int], None] = self._epoll.unregister
            self.fileno: Callable[[], int] = self._epoll.fileno
            self.close: Callable[[], None] = self._epoll.close
            self.ready: Callable[[], list[tuple[int, int]]] = partial(self._epoll.poll, 0)
            #: ``wait(seconds)``: the ready descriptors and their events, waiting at most
            #: ``seconds`` (a negative number: until one is ready).
            self.wait: Callable[[float], list[tuple[int, int]]] = self._epoll.poll
            return
        self._selector = selectors.DefaultSelector()
        # Only a readiness waited on from outside (a transport's own, in tests and tools)
        # needs a descriptor; the broker loop waits in its readiness itself.
        self.fileno = getattr(self._selector, "fileno", self._no_descriptor)
        self.close = self._selector.close
        self.register = self._register
        self.modify = self._modify
        self.unregister = self._selector.unregister  # type: ignore[assignment]
        self.ready = self._ready
        self.wait = self._wait

    # -- the selectors fallback -----------------------------------------------------------

    @staticmethod
    def _no_descriptor() -> int:
        raise OSError("this platform's selector has no descriptor another poller can watch")

    @staticmethod
    def _events(events: int) -> int:
        return ((selectors.EVENT_READ if events & READ else 0)
                | (selectors.EVENT_WRITE if events & WRITE else 0))

    def _register(self, fd: int, events: int) -> None:
        self._selector.register(fd, self._events(events))

    def _modify(self, fd: int, events: int) -> None:
        self._selector.modify(fd, self._events(events))

    def _ready(self) -> list[tuple[int, int]]:
        return self._wait(0)

    def _wait(self, seconds: float) -> list[tuple[int, int]]:
        return [(key.fd, (READ if events & selectors.EVENT_READ else 0)
                 | (WRITE if events & selectors.EVENT_WRITE else 0))
                for key, events in self._selector.select(None if seconds < 0 else seconds)]
