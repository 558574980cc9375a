"""Metadata stores (memory and SQLite): topics, ledger lists, ledger ids, cursors, policies."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pulsarlab.broker.errors import StorageError
from pulsarlab.broker.storage import (
    LedgerInfo,
    MemoryMetadataStore,
    MetadataStore,
    SqliteMetadataStore,
    open_storage,
)

ML = "persistent://public/default/orders"


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MetadataStore]:
    made = (
        MemoryMetadataStore()
        if request.param == "memory"
        else SqliteMetadataStore(tmp_path / "metadata.sqlite")
    )
    yield made
    made.close()


def test_topics(store: MetadataStore) -> None:
    assert store.get_topic("persistent://public/default/t") is None
    store.put_topic("persistent://public/default/t", 0)
    store.put_topic("persistent://public/default/p", 4)
    store.put_topic("persistent://public/default/p", 6)
    assert store.get_topic("persistent://public/default/t") == 0
    assert store.list_topics() == {
        "persistent://public/default/p": 6,
        "persistent://public/default/t": 0,
    }
    store.delete_topic("persistent://public/default/p")
    store.delete_topic("persistent://public/default/never")
    assert store.list_topics() == {"persistent://public/default/t": 0}


def test_ledger_lists_and_ids(store: MetadataStore) -> None:
    ids = [store.next_ledger_id() for _ in range(3)]
    assert ids == sorted(set(ids))
    ledgers = [LedgerInfo(ids[0], 10, 300, 1_000, closed=True), LedgerInfo(ids[1], timestamp_ms=5)]
    assert store.get_ledger_list(ML) is None
    store.put_ledger_list(ML, ledgers)
    ledgers[0].entries = 99  # the store keeps its own copy
    assert store.get_ledger_list(ML) == [
        LedgerInfo(ids[0], 10, 300, 1_000, closed=True),
        LedgerInfo(ids[1], 0, 0, 5, closed=False),
    ]
    store.delete_ledger_list(ML)
    assert store.get_ledger_list(ML) is None


def test_cursors(store: MetadataStore) -> None:
    state = {"markDelete": [3, 7], "individuallyDeleted": [[[3, 8], [3, 9]]], "properties": {}}
    store.put_cursor(ML, "sub-b", state)
    store.put_cursor(ML, "sub-a", {"markDelete": (1, 2)})
    store.put_cursor("persistent://public/default/other", "sub-a", {"markDelete": [0, 0]})
    assert store.get_cursors(ML) == {"sub-a": {"markDelete": [1, 2]}, "sub-b": state}
    store.delete_cursor(ML, "sub-b")
    store.delete_cursor(ML, "missing")
    assert list(store.get_cursors(ML)) == ["sub-a"]
    assert store.get_cursors("persistent://public/default/none") == {}


def test_policies(store: MetadataStore) -> None:
    assert store.get_policies("public/default") is None
    store.put_policies("public/default", {"retention": {"minutes": 10, "sizeMB": -1}})
    store.put_policies(ML, {"ttl": 60})
    assert store.get_policies("public/default") == {"retention": {"minutes": 10, "sizeMB": -1}}
    assert store.get_policies(ML) == {"ttl": 60}


def test_sqlite_round_trip_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "metadata.sqlite"
    store = SqliteMetadataStore(path)
    store.put_topic("persistent://public/default/t", 3)
    ledger_ids = [store.next_ledger_id() for _ in range(5)]
    store.put_ledger_list(ML, [LedgerInfo(ledger_ids[-1], 2, 20, 7, closed=True)])
    store.put_cursor(ML, "sub", {"markDelete": [ledger_ids[-1], 1]})
    store.put_policies("public/default", {"ttl": 5})
    store.close()

    store = SqliteMetadataStore(path)
    assert store.list_topics() == {"persistent://public/default/t": 3}
    assert store.next_ledger_id() > max(ledger_ids)
    assert store.get_ledger_list(ML) == [LedgerInfo(ledger_ids[-1], 2, 20, 7, closed=True)]
    assert store.ledger_list_names() == [ML]
    assert store.get_cursors(ML) == {"sub": {"markDelete": [ledger_ids[-1], 1]}}
    assert store.get_policies("public/default") == {"ttl": 5}
    store.close()

    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def test_sqlite_store_is_usable_from_another_thread(tmp_path: Path) -> None:
    store = SqliteMetadataStore(tmp_path / "metadata.sqlite")
    results: list[int] = []

    def work() -> None:
        for _ in range(50):
            results.append(store.next_ledger_id())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == list(range(200))
    store.close()


def test_closed_sqlite_store_raises_storage_error(tmp_path: Path) -> None:
    store = SqliteMetadataStore(tmp_path / "metadata.sqlite")
    store.close()
    with pytest.raises(StorageError):
        store.put_topic("persistent://public/default/t", 0)
    with pytest.raises(StorageError):
        store.get_topic("persistent://public/default/t")


def test_open_storage(tmp_path: Path) -> None:
    memory = open_storage(None, "memory")
    assert not memory.durable
    durable = open_storage(tmp_path / "data")
    assert durable.durable
    assert (tmp_path / "data" / "metadata.sqlite").exists()
    durable.close()
    with pytest.raises(ValueError, match="needs a data directory"):
        open_storage(None)
    with pytest.raises(ValueError, match="unknown storage"):
        open_storage(str(tmp_path), "rocksdb")
