"""A resource error that repeats (out of descriptors: EMFILE) logged once per interval.

When the process runs out of file descriptors every accept fails the same way, thousands
of times a second; logging each (with a traceback) writes megabytes a second and helps
nobody. :class:`RateLimitedLog` logs the first occurrence, then at most one line per
interval saying how many more there were.
"""

from __future__ import annotations

import errno
import logging
import time
from collections.abc import Callable

__all__ = ["RESOURCE_ERRNOS", "RateLimitedLog"]

# Errors that mean "the process or system is out of a resource", not "this peer is bad".
RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class RateLimitedLog:
    """``log(message)`` at most once per ``interval_s`` seconds on ``logger``."""

    def __init__(
        self,
        logger: logging.Logger,
        interval_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        level: int = logging.ERROR,
    ) -> None:
        self.logger = logger
        self.interval_s = interval_s
        self.level = level
        self._clock = clock
        self._next: float | None = None
        self.suppressed = 0

    def log(self, message: str) -> None:
        now = self._clock()
        if self._next is not None and now < self._next:
            self.suppressed += 1
            return
        if self.suppressed:
            message += f" ({self.suppressed} more since the last report)"
        self.logger.log(self.level, "%s", message)
        self.suppressed = 0
        self._next = now + self.interval_s
