"""Storage backends for managed ledgers and metadata, and ``open_storage`` to pick one."""

from __future__ import annotations

import os

from .base import LedgerConfig, LedgerInfo, ManagedLedger, MetadataStore, Position, Storage
from .durable import DurableStorage
from .memory import MemoryMetadataStore, MemoryStorage
from .sqlite_store import SqliteMetadataStore

__all__ = [
    "DurableStorage",
    "LedgerConfig",
    "LedgerInfo",
    "ManagedLedger",
    "MemoryMetadataStore",
    "MemoryStorage",
    "MetadataStore",
    "Position",
    "SqliteMetadataStore",
    "Storage",
    "open_storage",
]


def open_storage(data_dir: str | os.PathLike[str] | None, storage: str = "durable") -> Storage:
    """The backend named ``storage``: ``"memory"``, or ``"durable"`` under ``data_dir``."""
    if storage == "memory":
        return MemoryStorage()
    if storage != "durable":
        raise ValueError(f"unknown storage {storage!r}: expected 'durable' or 'memory'")
    if data_dir is None:
        raise ValueError("durable storage needs a data directory")
    return DurableStorage(data_dir)
