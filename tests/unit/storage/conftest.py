"""Fixtures for the storage tests: both backends behind one handle, and crash simulation."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pulsarlab.broker.storage import (
    DurableStorage,
    LedgerConfig,
    ManagedLedger,
    MemoryStorage,
    MetadataStore,
    Storage,
)


class Backend:
    """A storage backend that a test can open ledgers on and restart (clean close + open)."""

    topic = "persistent://public/default/orders"

    def __init__(self, kind: str, data_dir: Path) -> None:
        self.kind = kind
        self.data_dir = data_dir
        self.storage: Storage = MemoryStorage() if kind == "memory" else DurableStorage(data_dir)

    @property
    def metadata(self) -> MetadataStore:
        return self.storage.metadata

    def open(self, name: str | None = None, now_ms: int = 0, **config: int) -> ManagedLedger:
        return self.storage.open_ledger(name or self.topic, LedgerConfig(**config), now_ms)

    def restart(self) -> None:
        self.storage.close()
        if self.kind == "durable":
            self.storage = DurableStorage(self.data_dir)


@pytest.fixture(params=["memory", "durable"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    handle = Backend(request.param, tmp_path / "data")
    yield handle
    handle.storage.close()


@pytest.fixture
def crash() -> Iterator[Callable[[DurableStorage], None]]:
    """Abandon a storage as a killed process would: no close, no flush, no sync.

    The abandoned objects stay referenced (so nothing runs at garbage collection while the
    test reopens the directory); their descriptors are released after the test.
    """
    abandoned: list[DurableStorage] = []
    yield abandoned.append
    for storage in abandoned:
        for ledger in list(storage._open.values()):
            ledger._store_release()
        storage.metadata.close()
