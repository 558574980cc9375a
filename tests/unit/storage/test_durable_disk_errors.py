"""Durable backend: a full or failing disk gives a clear StorageError and loses nothing stored."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from pulsarlab.broker.errors import StorageError
from pulsarlab.broker.storage import DurableStorage, LedgerConfig, ManagedLedger
from pulsarlab.broker.storage import durable as durable_module
from pulsarlab.broker.storage.durable import segment_dir_name

TOPIC = "persistent://public/default/orders"


@pytest.fixture
def opened(tmp_path: Path) -> Callable[..., tuple[DurableStorage, ManagedLedger]]:
    storages: list[DurableStorage] = []

    def open_ml(**config: int) -> tuple[DurableStorage, ManagedLedger]:
        storage = DurableStorage(tmp_path / "data")
        storages.append(storage)
        return storage, storage.open_ledger(TOPIC, LedgerConfig(**config), 0)

    yield open_ml
    for storage in storages:
        storage.close()


def segment(storage: DurableStorage, ledger_id: int) -> Path:
    return storage.data_dir / "ledgers" / segment_dir_name(TOPIC) / f"{ledger_id}.log"


def everything(ml: ManagedLedger) -> list[bytes | None]:
    return [data for _, data in ml.read_entries(ml.first_position(), 1_000_000)]


def fail_with(code: int) -> Callable[..., int]:
    def failing(*args: object) -> int:
        raise OSError(code, os.strerror(code))

    return failing


def test_disk_full_on_sync_loses_nothing_stored(opened, monkeypatch: pytest.MonkeyPatch) -> None:
    storage, ml = opened()
    for i in range(3):
        ml.add_entry(b"kept-%d" % i, 0)
    confirmed = ml.sync()
    ledger_id = confirmed[0]
    size = 3 * (8 + len(b"kept-0"))  # the records; the zero-filled space ahead follows them
    assert segment(storage, ledger_id).stat().st_size > size

    monkeypatch.setattr(durable_module.os, "pwrite", fail_with(errno.ENOSPC))
    ml.add_entry(b"lost-1", 0)
    ml.add_entry(b"lost-2", 0)
    with pytest.raises(StorageError) as failure:
        ml.sync()
    assert str(failure.value) == (
        f"cannot persist entry to ledger {ledger_id} of {TOPIC}: No space left on device"
    )
    assert ml.last_confirmed == ml.last_added == confirmed
    assert everything(ml) == [b"kept-0", b"kept-1", b"kept-2"]
    # Cut back to the confirmed records, the zero-filled tail with the lost ones ...
    assert segment(storage, ledger_id).stat().st_size == size

    monkeypatch.undo()
    assert ml.add_entry(b"later", 0) == (ledger_id, 3)
    ml.sync()
    # ... and the next write zero-fills ahead again.
    raw = segment(storage, ledger_id).read_bytes()
    assert len(raw) >= size + 8 + len(b"later") + durable_module._ZERO_AHEAD_MIN - 4096
    assert raw[size + 8 + len(b"later") :] == bytes(len(raw) - size - 8 - len(b"later"))
    storage.close()
    _, ml = opened()
    assert everything(ml) == [b"kept-0", b"kept-1", b"kept-2", b"later"]


def test_partial_write_is_cut_back(opened, monkeypatch: pytest.MonkeyPatch) -> None:
    storage, ml = opened()
    ml.add_entry(b"kept", 0)
    ledger_id = ml.sync()[0]
    size = 8 + len(b"kept")
    real_pwrite = os.pwrite
    calls: list[int] = []

    def half_then_full(fd: int, data: bytes, offset: int) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real_pwrite(fd, bytes(data[: len(data) // 2]), offset)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(durable_module.os, "pwrite", half_then_full)
    ml.add_entry(b"x" * 1000, 0)
    with pytest.raises(StorageError, match="No space left on device"):
        ml.sync()
    assert len(calls) == 2
    assert segment(storage, ledger_id).stat().st_size == size

    monkeypatch.undo()
    ml.add_entry(b"after", 0)
    ml.sync()
    storage.close()
    _, ml = opened()
    assert everything(ml) == [b"kept", b"after"]


def test_failed_sync_drops_the_unconfirmed_entries(opened, monkeypatch) -> None:
    _, ml = opened()
    ml.add_entry(b"kept", 0)
    confirmed = ml.sync()
    # The group commit syncs the segment file's data (fdatasync; see durable._sync_data).
    monkeypatch.setattr(durable_module.os, "fdatasync", fail_with(errno.EIO))
    ml.add_entry(b"lost", 0)
    with pytest.raises(StorageError, match="Input/output error"):
        ml.sync()
    assert ml.last_added == ml.last_confirmed == confirmed
    monkeypatch.undo()
    assert ml.add_entry(b"after", 0) == (confirmed[0], 1)
    ml.sync()
    assert everything(ml) == [b"kept", b"after"]


def test_failed_buffer_flush_in_add_entry(opened, monkeypatch: pytest.MonkeyPatch) -> None:
    _, ml = opened()
    ml.add_entry(b"kept", 0)
    confirmed = ml.sync()
    monkeypatch.setattr(durable_module.os, "pwrite", fail_with(errno.ENOSPC))
    ml.add_entry(b"small", 0)
    with pytest.raises(StorageError, match="No space left on device"):
        ml.add_entry(b"x" * (2 << 20), 0)  # big enough to be written out at once
    assert ml.last_added == ml.last_confirmed == confirmed
    monkeypatch.undo()
    assert ml.add_entry(b"after", 0) == (confirmed[0], 1)
    assert ml.sync() == (confirmed[0], 1)


def test_read_only_file_system_at_rollover(opened, monkeypatch: pytest.MonkeyPatch) -> None:
    storage, ml = opened(max_entries_per_ledger=2)
    ml.add_entry(b"a", 0)
    ml.add_entry(b"b", 0)
    ml.sync()
    monkeypatch.setattr(durable_module.os, "open", fail_with(errno.EROFS))
    with pytest.raises(StorageError, match=r"cannot create ledger \d+ of .*: Read-only"):
        ml.add_entry(b"c", 0)
    assert [(info.entries, info.closed) for info in ml.ledgers] == [(2, False)]
    monkeypatch.undo()
    ml.add_entry(b"c", 0)
    ml.sync()
    assert [(info.entries, info.closed) for info in ml.ledgers] == [(2, True), (1, False)]
    assert everything(ml) == [b"a", b"b", b"c"]
    storage.close()
    _, ml = opened(max_entries_per_ledger=2)
    assert everything(ml) == [b"a", b"b", b"c"]
