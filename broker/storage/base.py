"""The storage interfaces the broker core is written against.

``ManagedLedger`` is one persistent topic's log: a sequence of ledgers (segments), each a
sequence of entries; a position is ``(ledger_id, entry_id)``. Appended entries become
visible to readers (``last_confirmed``) only when :meth:`ManagedLedger.sync` has made them
durable, so a reader never sees what a crash could take back. ``MetadataStore`` plays
ZooKeeper's part: topics, partition counts, ledger lists, cursor positions and policies.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

Position = tuple[int, int]


@dataclass(slots=True)
class LedgerInfo:
    """One ledger (segment) of a managed ledger, as internal stats report it."""

    ledger_id: int
    entries: int = 0
    size: int = 0
    timestamp_ms: int = 0
    closed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "ledgerId": self.ledger_id,
            "entries": self.entries,
            "size": self.size,
            "timestamp": self.timestamp_ms,
            "closed": self.closed,
        }


@dataclass(frozen=True, slots=True)
class LedgerConfig:
    """Rollover and durability settings (names follow broker.conf's managedLedger* keys)."""

    max_entries_per_ledger: int = 50_000
    max_size_per_ledger_bytes: int = 2048 * 1024 * 1024
    max_ledger_rollover_time_ms: int = 240 * 60_000
    min_ledger_rollover_time_ms: int = 10 * 60_000
    # True: a send is confirmed only after fsync of its entry (group commit per sync() call).
    journal_sync_data: bool = True
    # Budget of the entry cache (recently written entries, for tail reads). The durable
    # backend has one cache for all its ledgers, as big as the largest budget asked for,
    # and counts each entry's Python object overhead too; 0: this ledger caches nothing.
    cache_size_bytes: int = 16 * 1024 * 1024
    # Segment files the durable backend keeps open at once, for all its ledgers (an LRU;
    # 0: a quarter of the process's descriptor limit, at most 1024).
    max_open_files: int = 0


class ManagedLedger(ABC):
    """Append-only log of one persistent topic, made of ledgers."""

    name: str
    # Where the ledger was terminated (its last entry for good), ``None`` while it is open.
    terminated_position: Position | None = None

    @abstractmethod
    def add_entry(self, data: bytes, now_ms: int) -> Position:
        """Append ``data``; it becomes readable (and durable) at the next :meth:`sync`."""

    @abstractmethod
    def sync(self) -> Position:
        """Make every appended entry durable and readable; return ``last_confirmed``."""

    @property
    @abstractmethod
    def last_confirmed(self) -> Position:
        """Last readable entry; ``(current_ledger, -1)`` when the current ledger is empty."""

    @property
    @abstractmethod
    def last_added(self) -> Position:
        """Last appended entry, confirmed or not."""

    @abstractmethod
    def read_entries(
        self, start: Position, max_entries: int
    ) -> list[tuple[Position, bytes | None]]:
        """Up to ``max_entries`` confirmed entries from the first valid position >= ``start``.

        A corrupt entry (failed CRC, reported at open) is returned as ``(position, None)``.
        """

    @abstractmethod
    def read_entry(self, position: Position) -> bytes | None:
        """One confirmed entry (``None`` if corrupt); ``KeyError`` if there is no such entry."""

    @abstractmethod
    def next_position(self, position: Position) -> Position:
        """The next valid position after ``position`` (crosses ledgers, skips deleted ones).

        Past the last confirmed entry this is ``(current_ledger, last_entry + 1)``.
        """

    @abstractmethod
    def previous_position(self, position: Position) -> Position:
        """The valid position before ``position``; ``(first_ledger, -1)`` before the first."""

    @abstractmethod
    def first_position(self) -> Position:
        """First valid entry position (``(ledger, 0)`` of the oldest ledger kept)."""

    @abstractmethod
    def count_entries(self, start: Position, end: Position) -> int:
        """Number of existing entries with ``start <= position <= end``."""

    @property
    @abstractmethod
    def ledgers(self) -> list[LedgerInfo]:
        """Ledgers kept, oldest first; the last one is the current (open) ledger.

        A snapshot: copies the caller may keep or change. The broker's own per-tick and
        per-publish questions use the queries below, which copy nothing."""

    @property
    @abstractmethod
    def current_ledger_id(self) -> int | None:
        """The current (open, last) ledger's id; ``None`` before the ledger is opened."""

    @abstractmethod
    def estimated_backlog_size(self, mark_delete: Position) -> int:
        """Bytes after ``mark_delete`` (``ManagedLedgerImpl.getEstimatedBacklogSize``):
        whole ledgers after it, and the ledger it points into pro rata by entries."""

    @property
    @abstractmethod
    def corrupt_entries(self) -> frozenset[Position]:
        """Entries found corrupt on open (never silently skipped: also logged)."""

    @abstractmethod
    def maybe_rollover(self, now_ms: int) -> bool:
        """Close the current ledger and open a new one if a rollover limit is reached."""

    @abstractmethod
    def trim(self, mark_delete: Position) -> list[int]:
        """Delete ledgers all of whose entries are <= ``mark_delete`` (never the current one).

        Returns the deleted ledger ids.
        """

    @abstractmethod
    def terminate(self, now_ms: int) -> Position:
        """Seal the log for good and return its last entry (``ManagedLedgerImpl.asyncTerminate``).

        Appended entries are made durable first; the current ledger is closed and no ledger
        is ever opened again, so :meth:`add_entry` refuses every entry from now on, across
        restarts. Terminating a terminated ledger returns the same position.
        """

    @abstractmethod
    def close(self) -> None:
        """Sync and release files; the ledger list is saved in the metadata store."""

    @abstractmethod
    def delete(self) -> None:
        """Remove every ledger and the metadata of this managed ledger."""

    @property
    def number_of_entries(self) -> int:
        return sum(info.entries for info in self.ledgers)

    @property
    def total_size(self) -> int:
        return sum(info.size for info in self.ledgers)


class MetadataStore(ABC):
    """Topics, partition counts, ledger lists, cursors and policies (ZooKeeper's part)."""

    @abstractmethod
    def put_topic(self, name: str, partitions: int) -> None:
        """Record a topic; ``partitions`` is 0 for a non-partitioned topic."""

    @abstractmethod
    def get_topic(self, name: str) -> int | None:
        """Partition count of a recorded topic (0 = non-partitioned), ``None`` if unknown."""

    @abstractmethod
    def delete_topic(self, name: str) -> None: ...

    @abstractmethod
    def list_topics(self) -> dict[str, int]: ...

    @abstractmethod
    def next_ledger_id(self) -> int:
        """A ledger id never handed out before by this store (survives restarts)."""

    @abstractmethod
    def put_ledger_list(self, ml_name: str, ledgers: list[LedgerInfo]) -> None: ...

    @abstractmethod
    def get_ledger_list(self, ml_name: str) -> list[LedgerInfo] | None: ...

    @abstractmethod
    def delete_ledger_list(self, ml_name: str) -> None: ...

    @abstractmethod
    def put_cursor(self, ml_name: str, cursor_name: str, state: dict[str, Any]) -> None:
        """Persist a cursor's JSON-able state (mark-delete, individually deleted ranges, …)."""

    @abstractmethod
    def get_cursors(self, ml_name: str) -> dict[str, dict[str, Any]]: ...

    @abstractmethod
    def delete_cursor(self, ml_name: str, cursor_name: str) -> None: ...

    @abstractmethod
    def put_policies(self, scope: str, policies: dict[str, Any]) -> None:
        """Policies of a namespace (``tenant/ns``) or topic (full name)."""

    @abstractmethod
    def get_policies(self, scope: str) -> dict[str, Any] | None: ...

    @abstractmethod
    def close(self) -> None: ...


class Storage(ABC):
    """A backend: makes managed ledgers and owns the metadata store."""

    metadata: MetadataStore
    durable: bool

    @abstractmethod
    def open_ledger(self, name: str, config: LedgerConfig, now_ms: int) -> ManagedLedger:
        """Open (recovering after a crash) or create the managed ledger ``name``."""

    @abstractmethod
    def managed_ledger_names(self) -> Iterator[str]: ...

    @abstractmethod
    def close(self) -> None: ...
