"""One descriptor that is readable when any of many sockets is ready (epoll, or the
platform's selector).

The broker's loop waits on one poller (``broker/poller.py``). A transport with many TCP
sockets registers only its :class:`Readiness` descriptor there, and when it is readable asks
:meth:`Readiness.ready` which sockets are ready, without waiting. Linux's ``epoll`` is used
as is (no Python layer per call); elsewhere :class:`selectors.DefaultSelector` (kqueue on
macOS) reports the same event bits.
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

    def __init__(self) -> None:
        self._epoll = select.epoll() if hasattr(select, "epoll") else None
        if self._epoll is not None:
            self.register: Callable[[int, int], None] = self._epoll.register
            self.modify: Callable[[int, int], None] = self._epoll.modify
            self.unregister: Callable[[int], None] = self._epoll.unregister
            self.fileno: Callable[[], int] = self._epoll.fileno
            self.close: Callable[[], None] = self._epoll.close
            self.ready: Callable[[], list[tuple[int, int]]] = partial(self._epoll.poll, 0)
            return
        self._selector = selectors.DefaultSelector()
        if not hasattr(self._selector, "fileno"):
            self._selector.close()
            raise OSError("this platform's selector has no descriptor a poller can watch")
        self.fileno = self._selector.fileno  # type: ignore[attr-defined]
        self.close = self._selector.close
        self.register = self._register
        self.modify = self._modify
        self.unregister = self._selector.unregister  # type: ignore[assignment]
        self.ready = self._ready

    # -- the selectors fallback -----------------------------------------------------------

    @staticmethod
    def _events(events: int) -> int:
        return ((selectors.EVENT_READ if events & READ else 0)
                | (selectors.EVENT_WRITE if events & WRITE else 0))

    def _register(self, fd: int, events: int) -> None:
        self._selector.register(fd, self._events(events))

    def _modify(self, fd: int, events: int) -> None:
        self._selector.modify(fd, self._events(events))

    def _ready(self) -> list[tuple[int, int]]:
        return [(key.fd, (READ if events & selectors.EVENT_READ else 0)
                 | (WRITE if events & selectors.EVENT_WRITE else 0))
                for key, events in self._selector.select(0)]
