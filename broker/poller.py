"""The broker loop's wait: raw descriptors and ZeroMQ sockets in one system call.

ZeroMQ's own poll checks every ZeroMQ socket's command mailbox (two system calls each)
before and after it waits, on every turn, busy or not. Here the loop waits in one ``epoll``
(or the platform's selector) holding raw descriptors (the TCP listeners' readiness, the
waker, the REST API's loop) and each ZeroMQ socket's ``FD``, the descriptor that signals its
mailbox. A ZeroMQ socket is asked for its ``EVENTS`` only when that descriptor fired, or
when the loop used the socket since (a ``recv`` or ``send`` may take the mailbox's signal
while messages wait). A broker serving only pulsar:// clients thus costs one ``epoll_wait``
a turn.
"""

from __future__ import annotations

import select
import selectors
import time
from collections.abc import Callable

import zmq

__all__ = ["LoopPoller", "WatchedSocket"]


class WatchedSocket:
    """A ZeroMQ socket in the poller. Set :attr:`dirty` after using it outside a turn that
    found it ready (a send): its mailbox is then checked before the next wait. (An
    attribute, not a method: the broker sets it on every ZeroMQ send.)"""

    __slots__ = ("dirty", "fd", "socket")

    def __init__(self, socket: zmq.Socket) -> None:
        self.socket = socket
        self.fd: int = socket.getsockopt(zmq.FD)
        self.dirty = True  # unknown until asked

    def readable(self) -> bool:
        """Whether a message waits (reads the mailbox, which clears its signal)."""
        self.dirty = False
        return bool(self.socket.getsockopt(zmq.EVENTS) & zmq.POLLIN)


class LoopPoller:
    """Raw descriptors and ZeroMQ sockets, each watched for reading."""

    def __init__(self, *, use_epoll: bool = True) -> None:
        self._sockets: dict[int, WatchedSocket] = {}
        self._epoll = select.epoll() if use_epoll and hasattr(select, "epoll") else None
        self._selector: selectors.BaseSelector | None = None
        if self._epoll is not None:
            wait = self._epoll.poll
            self._wait: Callable[[float], list[int]] = (
                lambda seconds: [fd for fd, _events in wait(seconds)])
        else:
            selector = selectors.DefaultSelector()
            self._selector = selector
            self._wait = lambda seconds: [key.fd for key, _ in selector.select(seconds)]

    def add_descriptor(self, fd: int) -> None:
        """Watch a raw descriptor: reported ready while readable."""
        if self._epoll is not None:
            self._epoll.register(fd, select.EPOLLIN)
        else:
            assert self._selector is not None
            self._selector.register(fd, selectors.EVENT_READ)

    def add_socket(self, socket: zmq.Socket) -> WatchedSocket:
        """Watch a ZeroMQ socket: reported ready (by its ``fd``) while a message waits."""
        watched = WatchedSocket(socket)
        self.add_descriptor(watched.fd)
        self._sockets[watched.fd] = watched
        return watched

    def poll(self, wait_ms: float) -> list[int]:
        """The descriptors ready, waiting at most ``wait_ms`` (not at all when a ZeroMQ
        socket used since the last wait holds a message). A ZeroMQ socket reported ready
        counts as used: the caller reads it. A wake-up for ZeroMQ's own commands only (no
        message) waits on for the rest of the time, as ZeroMQ's poll does."""
        sockets = self._sockets
        ready = [fd for fd, watched in sockets.items() if watched.dirty and watched.readable()]
        seconds = 0.0 if ready else wait_ms / 1000
        until = None
        while True:
            fired = self._wait(seconds)
            for fd in fired:
                watched = sockets.get(fd)
                if watched is None or (fd not in ready and watched.readable()):
                    ready.append(fd)
            if ready or not fired or not seconds:
                break
            now = time.monotonic()
            if until is None:
                until = now + seconds  # close enough: the wait began a moment ago
            seconds = until - now
            if seconds <= 0:
                break
        for fd in ready:
            watched = sockets.get(fd)
            if watched is not None:
                watched.dirty = True
        return ready

    def close(self) -> None:
        if self._epoll is not None:
            self._epoll.close()
        elif self._selector is not None:
            self._selector.close()
