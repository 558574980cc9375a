"""Wakes the broker's loop from another thread (a call to run, a stop).

A connected socket pair: another thread writes a byte to one end, and the loop's poller
watches the other end as a raw descriptor. A raw descriptor costs the poll only itself; a
ZeroMQ socket in its place costs a check of its command mailbox (a system call) on every
turn of the loop, busy or not.
"""

from __future__ import annotations

import contextlib
import socket

__all__ = ["Waker"]


class Waker:
    """One reading end for the loop's poller, one writing end for any thread."""

    def __init__(self) -> None:
        self._reader, self._writer = socket.socketpair()
        self._reader.setblocking(False)
        self._writer.setblocking(False)

    def fileno(self) -> int:
        """The descriptor the loop polls (readable once woken)."""
        return self._reader.fileno()

    def wake(self) -> None:
        """From any thread: make :meth:`fileno` readable. A full pipe is readable already;
        a closed one means the loop is gone, and nothing waits for the wake-up."""
        with contextlib.suppress(OSError):  # BlockingIOError (full), or closed
            self._writer.send(b"\0")

    def clear(self) -> None:
        """On the loop's thread: read every wake-up queued so far."""
        try:
            while self._reader.recv(4096):
                pass
        except OSError:  # BlockingIOError: nothing more to read
            pass

    def close(self) -> None:
        self._reader.close()
        self._writer.close()
