"""The broker loop's wait: every descriptor and ZeroMQ socket in one system call.

ZeroMQ's own poll checks every ZeroMQ socket's command mailbox (two system calls each)
before and after it waits, on every turn, busy or not. Here the loop waits in one
:class:`~.transports.readiness.Readiness` (``epoll``, or the platform's selector) holding raw
descriptors (the waker, the REST API's loop), every TCP socket of the pulsar:// transports
(registered by the transports themselves, for reading and maybe writing) and each ZeroMQ
socket's ``FD``, the descriptor that signals its mailbox. A ZeroMQ socket is asked for its
``EVENTS`` only when that descriptor fired, or when the loop used the socket since (a
``recv`` or ``send`` may take the mailbox's signal while messages wait). A broker serving
only pulsar:// clients thus costs one ``epoll_wait`` a turn.
"""

from __future__ import annotations

import time

import zmq

from .transports.readiness import READ, Readiness

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
    """Raw descriptors and ZeroMQ sockets, each watched for reading, and the descriptors
    others register in :attr:`readiness` themselves."""

    def __init__(self, *, use_epoll: bool = True) -> None:
        self._sockets: dict[int, WatchedSocket] = {}
        #: The one epoll (or selector) the loop waits in; transports register their
        #: sockets here with their own events.
        self.readiness = Readiness(use_epoll=use_epoll)
        self._wait = self.readiness.wait

    def add_descriptor(self, fd: int) -> None:
        """Watch a raw descriptor: reported ready while readable."""
        self.readiness.register(fd, READ)

    def add_socket(self, socket: zmq.Socket) -> WatchedSocket:
        """Watch a ZeroMQ socket: reported ready (by its ``fd``, as :data:`READ`) while a
        message waits."""
        watched = WatchedSocket(socket)
        self.add_descriptor(watched.fd)
        self._sockets[watched.fd] = watched
        return watched

    def poll(self, wait_ms: float) -> dict[int, int]:
        """The descriptors ready and their events (epoll's bits), waiting at most
        ``wait_ms`` (not at all when a ZeroMQ socket used since the last wait holds a
        message). A ZeroMQ socket reported ready counts as used: the caller reads it. A
        wake-up for ZeroMQ's own commands only (no message) waits on for the rest of the
        time, as ZeroMQ's poll does."""
        sockets = self._sockets
        ready = {fd: READ for fd, watched in sockets.items()
                 if watched.dirty and watched.readable()}
        seconds = 0.0 if ready else wait_ms / 1000
        until = None
        while True:
            fired = self._wait(seconds)
            for fd, events in fired:
                watched = sockets.get(fd)
                if watched is None:
                    ready[fd] = events
                elif fd not in ready and watched.readable():
                    ready[fd] = READ
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
        self.readiness.close()
