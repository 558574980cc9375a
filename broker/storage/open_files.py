"""The durable storage's open segment files: one LRU for every managed ledger.

Each managed ledger reads and writes its segment files (and position journal) through
descriptors it asks this pool for; the pool keeps at most :attr:`OpenFiles.capacity` open
and closes the least recently used one to make room, so a broker with thousands of topics
(one ``PUT .../partitions`` of 1000) needs as many descriptors as the capacity, not one or
more per topic. A closed descriptor is simply reopened on the next use: writes are
positional (``pwrite``) or appends, and ``fsync`` on a reopened descriptor syncs the file.

The capacity defaults to a quarter of the process's ``RLIMIT_NOFILE`` soft limit (at most
:data:`DEFAULT_MAX_OPEN_FILES`), leaving the rest to sockets, SQLite and the HTTP server.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Hashable

try:
    import resource
except ImportError:  # not on every platform
    resource = None  # type: ignore[assignment]

__all__ = ["DEFAULT_MAX_OPEN_FILES", "OpenFiles", "default_capacity", "descriptor_share"]

DEFAULT_MAX_OPEN_FILES = 1024
_MIN_OPEN_FILES = 8


def descriptor_share(maximum: int) -> int:
    """A quarter of the process's descriptor limit (``RLIMIT_NOFILE``), within
    ``8..maximum``: what one consumer of descriptors may hold."""
    if resource is None:
        return maximum
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return maximum
    return max(_MIN_OPEN_FILES, min(maximum, soft // 4))


def default_capacity() -> int:
    """A quarter of the descriptor limit, within ``8..DEFAULT_MAX_OPEN_FILES``."""
    return descriptor_share(DEFAULT_MAX_OPEN_FILES)


class OpenFiles:
    """Descriptors by key (``(managed ledger token, kind, ledger id)``), least recently used
    first; :meth:`acquire` opens one on a miss and closes the oldest beyond capacity."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = capacity if capacity else default_capacity()
        self._fds: OrderedDict[Hashable, int] = OrderedDict()

    def __len__(self) -> int:
        return len(self._fds)

    def get(self, key: Hashable) -> int | None:
        """The open descriptor of ``key`` (now the most recently used), if there is one."""
        fd = self._fds.get(key)
        if fd is not None:
            self._fds.move_to_end(key)
        return fd

    def acquire(self, key: Hashable, opener: Callable[[], int]) -> int:
        """``key``'s descriptor, opened with ``opener()`` (which may raise ``OSError``) if
        it is not open; room is made first, so opening never needs more than capacity."""
        fd = self.get(key)
        if fd is not None:
            return fd
        self._make_room(1)
        fd = opener()
        self._fds[key] = fd
        return fd

    def close(self, key: Hashable) -> None:
        fd = self._fds.pop(key, None)
        if fd is not None:
            os.close(fd)

    def close_where(self, predicate: Callable[[Hashable], bool]) -> None:
        for key in [k for k in self._fds if predicate(k)]:
            self.close(key)

    def _make_room(self, needed: int) -> None:
        while self._fds and len(self._fds) + needed > self.capacity:
            _key, fd = self._fds.popitem(last=False)
            os.close(fd)
