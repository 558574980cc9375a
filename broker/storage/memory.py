"""Managed ledgers kept in memory, on the ledger bookkeeping both backends share.

``LedgerSequence`` is everything that does not depend on where entries live: the ledger
list, position arithmetic across ledgers, rollover, trim and the open-time routine (close
the recovered last ledger, drop empty ones, start a new ledger). ``durable.py`` builds on it
with segment files; ``MemoryManagedLedger`` keeps entries in Python lists.
"""

from __future__ import annotations

import json
import threading
from abc import abstractmethod
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from ..errors import StorageError, TopicTerminated
from .base import LedgerConfig, LedgerInfo, ManagedLedger, MetadataStore, Position, Storage


class LedgerSequence(ManagedLedger):
    """Ledger list, positions, rollover and trim; subclasses store the entries.

    The current (last) ledger's ``LedgerInfo`` counts confirmed entries only; entries added
    since the last :meth:`sync` are counted in ``_pending`` / ``_pending_size``.
    ``timestamp_ms`` is a ledger's creation time while it is open and its close time once
    closed (retention measures a ledger's age from its close, as Pulsar does). A
    ``StorageError`` from :meth:`add_entry` or :meth:`sync` drops every entry not yet
    confirmed: ``last_added`` falls back to ``last_confirmed``.
    """

    def __init__(self, name: str, config: LedgerConfig, metadata: MetadataStore) -> None:
        self.name = name
        self.config = config
        self._metadata = metadata
        self._infos: list[LedgerInfo] = []
        self._ids: list[int] = []
        self._pending = 0
        self._pending_size = 0
        self._corrupt: set[Position] = set()
        self._closed = False
        self._on_release: Callable[[LedgerSequence, bool], None] | None = None
        self.terminated_position: Position | None = None

    # -- storage hooks ----------------------------------------------------------------------

    @abstractmethod
    def _recover(self, saved: list[LedgerInfo] | None, now_ms: int) -> list[LedgerInfo]:
        """Load the saved ledgers' entries; return them closed, with their true counts."""

    @abstractmethod
    def _store_create(self, ledger_id: int) -> None: ...

    @abstractmethod
    def _store_append(self, ledger_id: int, data: bytes) -> None:
        """Append to the current ledger; on failure drop every pending entry, raise."""

    @abstractmethod
    def _store_flush(self, ledger_id: int) -> None:
        """Make pending entries durable; on failure drop every pending entry, raise."""

    @abstractmethod
    def _store_read(self, ledger_id: int, first: int, last: int) -> list[bytes | None]:
        """Entries ``first..last`` (inclusive, confirmed) of a ledger; ``None`` if corrupt."""

    @abstractmethod
    def _store_delete(self, ledger_id: int) -> None: ...

    @abstractmethod
    def _store_release(self) -> None:
        """Release files and caches (the ledger is closing)."""

    def _store_seal(self, ledger_id: int) -> None:
        """The ledger will never be written again (rolled over, or closed cleanly)."""

    # -- opening ----------------------------------------------------------------------------

    def _start(self, now_ms: int) -> None:
        """Recover what the metadata store lists, then start a new current ledger.

        A terminated managed ledger gets no new ledger: the one holding its terminated
        position stays the last, so ``last_confirmed`` is that position again.
        """
        recovered = self._recover(self._metadata.get_ledger_list(self.name), now_ms)
        terminated = self._metadata.get_policies(self._terminated_scope)
        end = terminated and terminated.get("terminatedPosition")
        if end and any(info.ledger_id == end[0] for info in recovered):
            self.terminated_position = (end[0], end[1])
            kept = [i for i in recovered if i.entries > 0 or i.ledger_id == end[0]]
            self._set_ledgers(kept)
        else:
            kept = [info for info in recovered if info.entries > 0]
            new_id = self._metadata.next_ledger_id()
            self._store_create(new_id)
            self._set_ledgers([*kept, LedgerInfo(new_id, timestamp_ms=now_ms)])
        self._save()
        kept_ids = {info.ledger_id for info in kept}
        for info in recovered:
            if info.entries == 0 and info.ledger_id not in kept_ids:
                self._store_delete(info.ledger_id)

    @property
    def _terminated_scope(self) -> str:
        return f"__terminated__/{self.name}"

    def _set_ledgers(self, infos: list[LedgerInfo]) -> None:
        self._infos = infos
        self._ids = [info.ledger_id for info in infos]

    def _save(self) -> None:
        self._metadata.put_ledger_list(self.name, self._infos)

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"managed ledger {self.name} is closed")

    def _index(self, ledger_id: int) -> int | None:
        i = bisect_left(self._ids, ledger_id)
        return i if i < len(self._ids) and self._ids[i] == ledger_id else None

    # -- writing ----------------------------------------------------------------------------

    def add_entry(self, data: bytes, now_ms: int) -> Position:
        if self._closed:
            self._check_open()
        if self.terminated_position is not None:
            raise TopicTerminated(f"managed ledger {self.name} was already terminated")
        if type(data) is not bytes:
            data = bytes(data)
        if not data:
            raise ValueError("an entry cannot be empty")
        current, config = self._infos[-1], self.config
        if (
            current.entries + self._pending >= config.max_entries_per_ledger
            or current.size + self._pending_size >= config.max_size_per_ledger_bytes
        ):  # _current_full(), inlined on the publish path
            self._rollover(now_ms)
            current = self._infos[-1]
        position = (current.ledger_id, current.entries + self._pending)
        try:
            self._store_append(current.ledger_id, data)
        except StorageError:
            self._pending = self._pending_size = 0
            raise
        self._pending += 1
        self._pending_size += len(data)
        return position

    def sync(self) -> Position:
        self._check_open()
        if self._pending:
            current = self._infos[-1]
            try:
                self._store_flush(current.ledger_id)
            except StorageError:
                self._pending = self._pending_size = 0
                raise
            current.entries += self._pending
            current.size += self._pending_size
            self._pending = self._pending_size = 0
        return self.last_confirmed

    @property
    def last_confirmed(self) -> Position:
        current = self._infos[-1]
        return (current.ledger_id, current.entries - 1)

    @property
    def last_added(self) -> Position:
        current = self._infos[-1]
        return (current.ledger_id, current.entries + self._pending - 1)

    def _current_full(self) -> bool:
        current = self._infos[-1]
        return (
            current.entries + self._pending >= self.config.max_entries_per_ledger
            or current.size + self._pending_size >= self.config.max_size_per_ledger_bytes
        )

    def maybe_rollover(self, now_ms: int) -> bool:
        self._check_open()
        if self.terminated_position is not None:
            return False
        if not self._current_full():
            current = self._infos[-1]
            age = now_ms - current.timestamp_ms
            limit = max(
                self.config.min_ledger_rollover_time_ms, self.config.max_ledger_rollover_time_ms
            )
            if current.entries + self._pending == 0 or age < limit:
                return False
        self._rollover(now_ms)
        return True

    def _rollover(self, now_ms: int) -> None:
        self.sync()
        old = self._infos[-1]
        new_id = self._metadata.next_ledger_id()
        self._store_create(new_id)
        infos = [
            *self._infos[:-1],
            replace(old, timestamp_ms=now_ms, closed=True),
            LedgerInfo(new_id, timestamp_ms=now_ms),
        ]
        try:
            self._metadata.put_ledger_list(self.name, infos)
        except StorageError:
            self._store_delete(new_id)
            raise
        self._set_ledgers(infos)
        self._store_seal(old.ledger_id)

    # -- reading ----------------------------------------------------------------------------

    def read_entries(
        self, start: Position, max_entries: int
    ) -> list[tuple[Position, bytes | None]]:
        self._check_open()
        ledger_id, entry_id = start
        i = bisect_left(self._ids, ledger_id)
        first = max(entry_id, 0) if i < len(self._ids) and self._ids[i] == ledger_id else 0
        result: list[tuple[Position, bytes | None]] = []
        while i < len(self._infos) and len(result) < max_entries:
            info = self._infos[i]
            if first < info.entries:
                last = min(info.entries, first + max_entries - len(result)) - 1
                data = self._store_read(info.ledger_id, first, last)
                ledger_id = info.ledger_id
                result += [
                    ((ledger_id, e), d) for e, d in zip(range(first, last + 1), data, strict=False)
                ]
            i += 1
            first = 0
        return result

    def read_entry(self, position: Position) -> bytes | None:
        self._check_open()
        ledger_id, entry_id = position
        i = self._index(ledger_id)
        if i is None or not 0 <= entry_id < self._infos[i].entries:
            raise KeyError(position)
        return self._store_read(ledger_id, entry_id, entry_id)[0]

    # -- positions --------------------------------------------------------------------------

    def next_position(self, position: Position) -> Position:
        ledger_id, entry_id = position
        current = self._infos[-1]
        if ledger_id == current.ledger_id:
            return (ledger_id, max(entry_id + 1, 0))
        i = bisect_left(self._ids, ledger_id)
        if i < len(self._ids) and self._ids[i] == ledger_id:
            if entry_id + 1 < self._infos[i].entries:
                return (ledger_id, max(entry_id + 1, 0))
            i += 1
        for info in self._infos[i:]:
            if info.entries > 0 or info is current:
                return (info.ledger_id, 0)
        return (current.ledger_id, current.entries)

    def previous_position(self, position: Position) -> Position:
        ledger_id, entry_id = position
        i = bisect_left(self._ids, ledger_id)
        if i < len(self._ids) and self._ids[i] == ledger_id and entry_id > 0:
            if i == len(self._ids) - 1:
                return (ledger_id, entry_id - 1)
            entries = self._infos[i].entries
            if entries > 0:
                return (ledger_id, min(entry_id, entries) - 1)
        for info in reversed(self._infos[:i]):
            if info.entries > 0:
                return (info.ledger_id, info.entries - 1)
        return (self._ids[0], -1)

    def first_position(self) -> Position:
        for info in self._infos[:-1]:
            if info.entries > 0:
                return (info.ledger_id, 0)
        return (self._ids[-1], 0)

    def count_entries(self, start: Position, end: Position) -> int:
        total = 0
        for info in self._infos[bisect_left(self._ids, start[0]) :]:
            if info.ledger_id > end[0]:
                break
            low = start[1] if info.ledger_id == start[0] else 0
            high = end[1] if info.ledger_id == end[0] else info.entries - 1
            total += max(0, min(high, info.entries - 1) - max(low, 0) + 1)
        return total

    @property
    def ledgers(self) -> list[LedgerInfo]:
        return [replace(info) for info in self._infos]

    @property
    def current_ledger_id(self) -> int | None:
        return self._ids[-1] if self._ids else None

    @property
    def number_of_entries(self) -> int:
        return sum(info.entries for info in self._infos)

    @property
    def total_size(self) -> int:
        return sum(info.size for info in self._infos)

    def estimated_backlog_size(self, mark_delete: Position) -> int:
        ledger_id, entry_id = mark_delete
        size = 0
        for info in self._infos[bisect_left(self._ids, ledger_id):]:
            if info.ledger_id > ledger_id:
                size += info.size
            elif info.entries:  # the ledger mark_delete points into
                size += info.size * max(0, info.entries - 1 - entry_id) // info.entries
        return size

    @property
    def corrupt_entries(self) -> frozenset[Position]:
        return frozenset(self._corrupt)

    # -- trimming and lifecycle -------------------------------------------------------------

    def trim(self, mark_delete: Position) -> list[int]:
        self._check_open()
        doomed = [
            info.ledger_id
            for info in self._infos[:-1]
            if info.entries == 0 or (info.ledger_id, info.entries - 1) <= mark_delete
        ]
        if not doomed:
            return []
        kept = [info for info in self._infos if info.ledger_id not in doomed]
        self._metadata.put_ledger_list(self.name, kept)
        self._set_ledgers(kept)
        self._corrupt = {p for p in self._corrupt if p[0] not in doomed}
        for ledger_id in doomed:
            self._store_delete(ledger_id)
        return doomed

    def terminate(self, now_ms: int) -> Position:
        self._check_open()
        if self.terminated_position is not None:
            return self.terminated_position
        self.sync()
        position = self.last_confirmed
        current = self._infos[-1]
        infos = [*self._infos[:-1], replace(current, timestamp_ms=now_ms, closed=True)]
        self._metadata.put_ledger_list(self.name, infos)
        self._metadata.put_policies(self._terminated_scope, {"terminatedPosition": list(position)})
        self._set_ledgers(infos)
        self._store_seal(current.ledger_id)
        self.terminated_position = position
        return position

    def close(self) -> None:
        if self._closed:
            return
        try:
            self.sync()
            self._save()
            self._store_seal(self._infos[-1].ledger_id)
        finally:
            self._release(deleted=False)

    def delete(self) -> None:
        self._check_open()
        self._metadata.delete_ledger_list(self.name)
        if self.terminated_position is not None:
            self._metadata.put_policies(self._terminated_scope, {})
        for cursor_name in self._metadata.get_cursors(self.name):
            self._metadata.delete_cursor(self.name, cursor_name)
        for ledger_id in self._ids:
            self._store_delete(ledger_id)
        self._release(deleted=True)

    def _release(self, deleted: bool) -> None:
        self._closed = True
        self._store_release()
        if self._on_release is not None:
            self._on_release(self, deleted)


class MemoryManagedLedger(LedgerSequence):
    """A managed ledger whose entries live in lists; ``sync`` only makes them visible."""

    def __init__(
        self,
        name: str,
        config: LedgerConfig,
        metadata: MetadataStore,
        entries: dict[int, list[bytes]],
    ) -> None:
        super().__init__(name, config, metadata)
        self._entries = entries

    def _recover(self, saved: list[LedgerInfo] | None, now_ms: int) -> list[LedgerInfo]:
        recovered = []
        for info in saved or []:
            data = self._entries.setdefault(info.ledger_id, [])
            stamp = info.timestamp_ms if info.closed else now_ms
            recovered.append(
                LedgerInfo(info.ledger_id, len(data), sum(map(len, data)), stamp, closed=True)
            )
        return recovered

    def _store_create(self, ledger_id: int) -> None:
        self._entries[ledger_id] = []

    def _store_append(self, ledger_id: int, data: bytes) -> None:
        self._entries[ledger_id].append(data)

    def _store_flush(self, ledger_id: int) -> None:
        return None

    def _store_read(self, ledger_id: int, first: int, last: int) -> list[bytes | None]:
        return self._entries[ledger_id][first : last + 1]

    def _store_delete(self, ledger_id: int) -> None:
        self._entries.pop(ledger_id, None)

    def _store_release(self) -> None:
        return None


class LedgerStorage(Storage):
    """Hands out one managed-ledger object per name; subclasses make them."""

    def __init__(self) -> None:
        self._open: dict[str, LedgerSequence] = {}

    @abstractmethod
    def _make_ledger(self, name: str, config: LedgerConfig) -> LedgerSequence: ...

    def open_ledger(self, name: str, config: LedgerConfig, now_ms: int) -> ManagedLedger:
        ledger = self._open.get(name)
        if ledger is not None:
            ledger.config = config
            return ledger
        ledger = self._make_ledger(name, config)
        try:
            ledger._start(now_ms)
        except BaseException:
            ledger._store_release()
            raise
        ledger._on_release = self._released
        self._open[name] = ledger
        return ledger

    def _released(self, ledger: LedgerSequence, deleted: bool) -> None:
        if self._open.get(ledger.name) is ledger:
            del self._open[ledger.name]

    def close(self) -> None:
        """Close every open managed ledger, then the metadata store (first error re-raised)."""
        errors: list[StorageError] = []
        for ledger in list(self._open.values()):
            try:
                ledger.close()
            except StorageError as exc:
                errors.append(exc)
        self.metadata.close()
        if errors:
            raise errors[0]


class MemoryStorage(LedgerStorage):
    """Everything in memory: for tests and quick demos; nothing survives the process."""

    durable = False

    def __init__(self, metadata: MemoryMetadataStore | None = None) -> None:
        super().__init__()
        self.metadata: MemoryMetadataStore = metadata or MemoryMetadataStore()
        self._entries: dict[str, dict[int, list[bytes]]] = {}

    def _make_ledger(self, name: str, config: LedgerConfig) -> LedgerSequence:
        return MemoryManagedLedger(name, config, self.metadata, self._entries.setdefault(name, {}))

    def _released(self, ledger: LedgerSequence, deleted: bool) -> None:
        super()._released(ledger, deleted)
        if deleted:
            self._entries.pop(ledger.name, None)

    def managed_ledger_names(self) -> Iterator[str]:
        return iter(self.metadata.ledger_list_names())


class MemoryMetadataStore(MetadataStore):
    """Metadata in dicts; values go through JSON so they behave as the SQLite store's do."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._topics: dict[str, int] = {}
        self._ledger_lists: dict[str, list[LedgerInfo]] = {}
        self._next_ledger_id = 0
        self._cursors: dict[str, dict[str, str]] = {}
        self._policies: dict[str, str] = {}

    def put_topic(self, name: str, partitions: int) -> None:
        with self._lock:
            self._topics[name] = partitions

    def get_topic(self, name: str) -> int | None:
        with self._lock:
            return self._topics.get(name)

    def delete_topic(self, name: str) -> None:
        with self._lock:
            self._topics.pop(name, None)

    def list_topics(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self._topics.items()))

    def next_ledger_id(self) -> int:
        with self._lock:
            ledger_id = self._next_ledger_id
            self._next_ledger_id += 1
            return ledger_id

    def put_ledger_list(self, ml_name: str, ledgers: list[LedgerInfo]) -> None:
        with self._lock:
            self._ledger_lists[ml_name] = [replace(info) for info in ledgers]

    def get_ledger_list(self, ml_name: str) -> list[LedgerInfo] | None:
        with self._lock:
            saved = self._ledger_lists.get(ml_name)
            return None if saved is None else [replace(info) for info in saved]

    def delete_ledger_list(self, ml_name: str) -> None:
        with self._lock:
            self._ledger_lists.pop(ml_name, None)

    def ledger_list_names(self) -> list[str]:
        """Names of the managed ledgers that have a ledger list, sorted."""
        with self._lock:
            return sorted(self._ledger_lists)

    def put_cursor(self, ml_name: str, cursor_name: str, state: dict[str, Any]) -> None:
        text = json.dumps(state)
        with self._lock:
            self._cursors.setdefault(ml_name, {})[cursor_name] = text

    def get_cursors(self, ml_name: str) -> dict[str, dict[str, Any]]:
        with self._lock:
            saved = dict(self._cursors.get(ml_name, {}))
        return {name: json.loads(text) for name, text in sorted(saved.items())}

    def delete_cursor(self, ml_name: str, cursor_name: str) -> None:
        with self._lock:
            cursors = self._cursors.get(ml_name, {})
            cursors.pop(cursor_name, None)
            if not cursors:
                self._cursors.pop(ml_name, None)

    def put_policies(self, scope: str, policies: dict[str, Any]) -> None:
        text = json.dumps(policies)
        with self._lock:
            self._policies[scope] = text

    def get_policies(self, scope: str) -> dict[str, Any] | None:
        with self._lock:
            text = self._policies.get(scope)
        return None if text is None else json.loads(text)

    def close(self) -> None:
        return None
