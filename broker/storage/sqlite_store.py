"""The SQLite metadata store: topics, ledger lists, the ledger-id counter, cursors, policies.

It plays ZooKeeper's part for the durable backend. One connection in WAL mode with
``synchronous=FULL`` (a committed change survives a power cut), usable from any thread
under one lock. Values that are documents (ledger lists, cursor states, policies) are
stored as JSON text. SQLite failures surface as ``StorageError``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import StorageError
from .base import LedgerInfo, MetadataStore

_SCHEMA = """
CREATE TABLE IF NOT EXISTS topics (name TEXT PRIMARY KEY, partitions INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_lists (ml_name TEXT PRIMARY KEY, ledgers TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS cursors (
    ml_name TEXT NOT NULL,
    cursor_name TEXT NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (ml_name, cursor_name)
);
CREATE TABLE IF NOT EXISTS policies (scope TEXT PRIMARY KEY, policies TEXT NOT NULL);
INSERT OR IGNORE INTO counters (name, value) VALUES ('ledger_id', 0);
"""


def _ledgers_to_json(ledgers: list[LedgerInfo]) -> str:
    return json.dumps([info.to_dict() for info in ledgers], separators=(",", ":"))


def _ledgers_from_json(text: str) -> list[LedgerInfo]:
    return [
        LedgerInfo(d["ledgerId"], d["entries"], d["size"], d["timestamp"], d["closed"])
        for d in json.loads(text)
    ]


class SqliteMetadataStore(MetadataStore):
    """Metadata in one SQLite file (``path``), shared safely between threads."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open metadata store {self.path}: {exc}") from exc

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """The connection, inside one transaction, holding the lock; errors → StorageError."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                    self._db.execute("COMMIT")
                except BaseException:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise StorageError(f"metadata store {self.path} failed: {exc}") from exc

    def _query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise StorageError(f"metadata store {self.path} failed: {exc}") from exc

    def _execute(self, sql: str, *args: Any) -> None:
        with self._transaction() as db:
            db.execute(sql, args)

    # -- topics -----------------------------------------------------------------------------

    def put_topic(self, name: str, partitions: int) -> None:
        self._execute(
            "INSERT OR REPLACE INTO topics (name, partitions) VALUES (?, ?)", name, partitions
        )

    def get_topic(self, name: str) -> int | None:
        rows = self._query("SELECT partitions FROM topics WHERE name = ?", name)
        return rows[0][0] if rows else None

    def delete_topic(self, name: str) -> None:
        self._execute("DELETE FROM topics WHERE name = ?", name)

    def list_topics(self) -> dict[str, int]:
        return dict(self._query("SELECT name, partitions FROM topics ORDER BY name"))

    # -- ledgers ----------------------------------------------------------------------------

    def next_ledger_id(self) -> int:
        with self._transaction() as db:
            row = db.execute("SELECT value FROM counters WHERE name = 'ledger_id'").fetchone()
            ledger_id = row[0]
            db.execute("UPDATE counters SET value = ? WHERE name = 'ledger_id'", (ledger_id + 1,))
        return ledger_id

    def put_ledger_list(self, ml_name: str, ledgers: list[LedgerInfo]) -> None:
        self._execute(
            "INSERT OR REPLACE INTO ledger_lists (ml_name, ledgers) VALUES (?, ?)",
            ml_name,
            _ledgers_to_json(ledgers),
        )

    def get_ledger_list(self, ml_name: str) -> list[LedgerInfo] | None:
        rows = self._query("SELECT ledgers FROM ledger_lists WHERE ml_name = ?", ml_name)
        return _ledgers_from_json(rows[0][0]) if rows else None

    def delete_ledger_list(self, ml_name: str) -> None:
        self._execute("DELETE FROM ledger_lists WHERE ml_name = ?", ml_name)

    def ledger_list_names(self) -> list[str]:
        """Names of the managed ledgers that have a ledger list, sorted."""
        return [row[0] for row in self._query("SELECT ml_name FROM ledger_lists ORDER BY ml_name")]

    # -- cursors and policies ---------------------------------------------------------------

    def put_cursor(self, ml_name: str, cursor_name: str, state: dict[str, Any]) -> None:
        self._execute(
            "INSERT OR REPLACE INTO cursors (ml_name, cursor_name, state) VALUES (?, ?, ?)",
            ml_name,
            cursor_name,
            json.dumps(state),
        )

    def get_cursors(self, ml_name: str) -> dict[str, dict[str, Any]]:
        rows = self._query(
            "SELECT cursor_name, state FROM cursors WHERE ml_name = ? ORDER BY cursor_name", ml_name
        )
        return {name: json.loads(state) for name, state in rows}

    def delete_cursor(self, ml_name: str, cursor_name: str) -> None:
        self._execute(
            "DELETE FROM cursors WHERE ml_name = ? AND cursor_name = ?", ml_name, cursor_name
        )

    def put_policies(self, scope: str, policies: dict[str, Any]) -> None:
        self._execute(
            "INSERT OR REPLACE INTO policies (scope, policies) VALUES (?, ?)",
            scope,
            json.dumps(policies),
        )

    def get_policies(self, scope: str) -> dict[str, Any] | None:
        rows = self._query("SELECT policies FROM policies WHERE scope = ?", scope)
        return json.loads(rows[0][0]) if rows else None

    def close(self) -> None:
        with self._lock:
            self._db.close()
