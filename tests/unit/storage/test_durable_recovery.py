"""Durable backend: crash recovery, torn tails, corruption reports, segment files, caching."""

from __future__ import annotations

import json
import logging
import os
import signal
import struct
import zlib
from pathlib import Path

import pytest

from pulsarlab.broker.errors import LedgerCorruption, StorageError
from pulsarlab.broker.storage import DurableStorage, LedgerConfig, ManagedLedger
from pulsarlab.broker.storage import durable as durable_module
from pulsarlab.broker.storage.durable import segment_dir_name
from pulsarlab.broker.storage.ledger_index import index_path

TOPIC = "persistent://public/default/orders"
LOGGER = "pulsarlab.broker.storage"


def open_ml(data_dir: Path, **config: int) -> tuple[DurableStorage, ManagedLedger]:
    storage = DurableStorage(data_dir)
    return storage, storage.open_ledger(TOPIC, LedgerConfig(**config), 0)


def segment(data_dir: Path, ledger_id: int) -> Path:
    return data_dir / "ledgers" / segment_dir_name(TOPIC) / f"{ledger_id}.log"


def record(data: bytes, crc: int | None = None) -> bytes:
    return struct.pack(">II", len(data), zlib.crc32(data) if crc is None else crc) + data


def closed_first_ledger(data_dir: Path) -> tuple[int, Path]:
    """Four synced entries in ledgers of three, the store closed: the first ledger (sealed
    at rollover) and its segment file."""
    storage, ml = open_ml(data_dir, max_entries_per_ledger=3)
    write_synced(ml, 4)
    first = ml.ledgers[0].ledger_id
    storage.close()
    return first, segment(data_dir, first)


def everything(ml: ManagedLedger) -> list[bytes | None]:
    return [data for _, data in ml.read_entries(ml.first_position(), 1_000_000)]


def written(count: int) -> list[bytes]:
    return [b"entry-%03d" % i for i in range(count)]


def write_synced(ml: ManagedLedger, count: int) -> None:
    for data in written(count):
        ml.add_entry(data, 0)
    ml.sync()


def records_size(count: int) -> int:
    """Where the records of ``written(count)`` end in a segment file (its data end)."""
    return count * len(record(written(1)[0]))


def lay_out(path: Path, layout: str, data_end: int) -> None:
    """Check the open ledger's file as a crash left it: zero-filled past ``data_end``; for
    ``"old"``, cut it back to the layout before zero tails (a file ending with its data)."""
    raw = path.read_bytes()
    assert len(raw) >= data_end + durable_module._ZERO_AHEAD_MIN - 4096
    assert raw[data_end:] == bytes(len(raw) - data_end)
    if layout == "old":
        os.truncate(path, data_end)


def write_at(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as file:
        file.seek(offset)
        file.write(data)


LAYOUTS = pytest.mark.parametrize("layout", ["zero-tail", "old"])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork() to kill a writer process")
def test_synced_entries_survive_kill_9(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data_dir = tmp_path / "data"
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child writes, reports what sync() confirmed, and is killed
        try:
            os.close(reader)
            storage, ml = open_ml(data_dir, max_entries_per_ledger=7)
            for batch in range(5):
                for i in range(10):
                    ml.add_entry(b"%d-%d" % (batch, i), 0)
                ml.sync()
            ml.add_entry(b"never synced", 0)
            report = {"ids": [info.ledger_id for info in ml.ledgers]}
            os.write(writer, json.dumps(report).encode())
        finally:
            os.kill(os.getpid(), signal.SIGKILL)
    os.close(writer)
    with os.fdopen(reader) as pipe:
        report = json.loads(pipe.read())
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL

    last = segment(data_dir, max(report["ids"]))
    synced = len(record(b"4-9"))  # ledgers of 7 entries: the last one holds entry 49
    assert last.stat().st_size > synced + len(record(b"never synced"))  # and its zeros
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        storage, ml = open_ml(data_dir, max_entries_per_ledger=7)
    assert caplog.records == []  # zeros after the last record are no torn tail
    assert last.stat().st_size in (synced, synced + len(record(b"never synced")))  # cut
    expected = [b"%d-%d" % (batch, i) for batch in range(5) for i in range(10)]
    data = everything(ml)
    assert data[:50] == expected
    assert data[50:] in ([], [b"never synced"])
    assert ml.last_confirmed[0] > max(report["ids"])
    storage.close()


def test_reopen_after_crash_keeps_synced_entries_in_order(tmp_path: Path, crash) -> None:
    data_dir = tmp_path / "data"
    storage, ml = open_ml(data_dir, max_entries_per_ledger=4)
    write_synced(ml, 10)
    before = [info.ledger_id for info in ml.ledgers]
    crash(storage)

    storage, ml = open_ml(data_dir, max_entries_per_ledger=4)
    assert everything(ml) == written(10)
    assert [(i.ledger_id, i.entries, i.closed) for i in ml.ledgers] == [
        (before[0], 4, True),
        (before[1], 4, True),
        (before[2], 2, True),
        (ml.last_confirmed[0], 0, False),
    ]
    assert ml.last_confirmed[0] > max(before)
    assert ml.add_entry(b"after", 0) == (ml.last_confirmed[0], 0)
    storage.close()


def test_ledger_ids_grow_across_restarts_and_crashes(tmp_path: Path, crash) -> None:
    data_dir = tmp_path / "data"
    seen: list[int] = []
    for round_ in range(4):
        storage, ml = open_ml(data_dir)
        write_synced(ml, 1)
        seen.append(ml.last_confirmed[0])
        if round_ % 2:
            crash(storage)
        else:
            storage.close()
    assert seen == sorted(set(seen))
    storage, ml = open_ml(data_dir)
    assert [info.ledger_id for info in ml.ledgers][:-1] == seen
    assert everything(ml) == written(1) * 4
    storage.close()


@pytest.mark.parametrize(
    "tail",
    [
        pytest.param(b"\x00\x00\x01", id="partial-length-header"),
        pytest.param(record(b"x" * 100)[:30], id="partial-data"),
        pytest.param(record(b"torn", crc=12345), id="crc-mismatch-on-last-record"),
        pytest.param(b"\xff" * 64, id="garbage"),
    ],
)
@LAYOUTS
def test_torn_tail_is_truncated_with_a_warning(
    tmp_path: Path, crash, caplog: pytest.LogCaptureFixture, tail: bytes, layout: str
) -> None:
    """A partial write after the last synced record, in the zero-filled tail (or at the end
    of a file of the layout before zero tails), is cut with one WARNING."""
    data_dir = tmp_path / "data"
    storage, ml = open_ml(data_dir)
    write_synced(ml, 5)
    ledger_id = ml.last_confirmed[0]
    path = segment(data_dir, ledger_id)
    good_size = records_size(5)
    crash(storage)
    lay_out(path, layout, good_size)
    write_at(path, good_size, tail)

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        storage, ml = open_ml(data_dir)
    warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 1
    message = warnings[0].getMessage()
    assert "torn tail" in message and TOPIC in message
    assert f"ledger {ledger_id} at byte offset {good_size}" in message
    assert f"truncating {len(tail)} bytes" in message
    assert path.stat().st_size == good_size
    assert everything(ml) == written(5)
    assert ml.corrupt_entries == frozenset()
    storage.close()

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        storage, ml = open_ml(data_dir)
    assert caplog.records == []
    storage.close()


@LAYOUTS
def test_a_zero_tail_is_the_end_of_the_data_not_a_torn_tail(
    tmp_path: Path, crash, caplog: pytest.LogCaptureFixture, layout: str
) -> None:
    """After a crash the open ledger's file ends in the zeros kept ahead of its writes (or,
    in the layout before zero tails, a zero-filled block the crash left): every synced
    entry comes back, nothing is logged, and the sealed file is cut to its data."""
    data_dir = tmp_path / "data"
    storage, ml = open_ml(data_dir)
    big = b"B" * (3 * durable_module._ZERO_AHEAD_MIN)  # larger than a zero-fill chunk
    expected = []
    for i in range(40):  # crosses the first zero-filled end several times
        for data in written(50):
            ml.add_entry(data, 0)
        expected += written(50)
        if i == 20:
            ml.add_entry(big, 0)
            expected.append(big)
        ml.sync()
    ledger_id = ml.last_confirmed[0]
    path = segment(data_dir, ledger_id)
    data_end = records_size(40 * 50) + len(record(big))
    crash(storage)
    lay_out(path, layout, data_end)
    if layout == "old":
        with open(path, "ab") as file:
            file.write(bytes(4096))

    with caplog.at_level(logging.INFO, logger=LOGGER):
        storage, ml = open_ml(data_dir)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert everything(ml) == expected
    assert ml.corrupt_entries == frozenset()
    assert path.stat().st_size == data_end
    assert index_path(path).exists()  # sealed: the next open trusts its index
    storage.close()


def test_the_open_segment_is_zero_filled_ahead_of_its_data(tmp_path: Path) -> None:
    """64 KiB of zeros past a small topic's data (it stays small on disk), as much as the
    data past a larger one's, never more than 1 MiB past it; always room for the write."""
    data_dir = tmp_path / "data"
    storage, ml = open_ml(data_dir)
    ledger_id = ml.last_confirmed[0]
    path = segment(data_dir, ledger_id)
    assert path.stat().st_size == 0  # nothing is reserved before the first write

    def check(data_end: int, ahead: int) -> None:
        raw = path.read_bytes()
        assert len(raw) == (data_end + ahead) // 4096 * 4096
        assert raw[data_end:] == bytes(len(raw) - data_end)
        assert raw[:data_end].rstrip(b"\0") == raw[:data_end]

    write_synced(ml, 3)
    check(records_size(3), 64 * 1024)
    assert path.stat().st_size <= 64 * 1024 + records_size(3)
    first = path.stat().st_size
    write_synced(ml, 10)  # inside the zeros: the file keeps its size
    assert path.stat().st_size == first
    entry = b"M" * 200_000  # past the zero-filled end: extended by the data so far
    ml.add_entry(entry, 0)
    ml.sync()
    end = records_size(13) + len(record(entry))
    check(end, end)
    huge = b"H" * (5 << 20)  # the largest message: beyond any chunk
    ml.add_entry(huge, 0)
    ml.sync()
    end += len(record(huge))
    check(end, 1 << 20)
    assert everything(ml) == [*written(3), *written(10), entry, huge]
    storage.close()
    assert path.stat().st_size == end  # sealed at close: exactly the data
    storage, ml = open_ml(data_dir)
    assert everything(ml) == [*written(3), *written(10), entry, huge]
    storage.close()


def test_a_closed_ledger_with_a_zero_tail_is_cut_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A crash between a rollover's ledger list (the ledger closed) and the seal that cuts
    its file leaves a closed ledger with zeros after its data and no index."""
    data_dir = tmp_path / "data"
    _, path = closed_first_ledger(data_dir)
    index_path(path).unlink()
    with open(path, "ab") as file:
        file.write(bytes(60_000))

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        storage, ml = open_ml(data_dir, max_entries_per_ledger=3)
    assert caplog.records == []
    assert everything(ml) == [*written(3), written(4)[3]]
    assert path.stat().st_size == records_size(3)
    assert index_path(path).exists()
    storage.close()


@LAYOUTS
@pytest.mark.parametrize("damage", ["data", "length"])
def test_corrupt_middle_entry_is_reported_and_kept(
    tmp_path: Path, crash, caplog: pytest.LogCaptureFixture, layout: str, damage: str
) -> None:
    """A bad record with good ones after it is corruption (ERROR, a None entry), whether
    zeros follow the data (the zero-filled tail) or not."""
    data_dir = tmp_path / "data"
    storage, ml = open_ml(data_dir)
    write_synced(ml, 5)
    ledger_id = ml.last_confirmed[0]
    crash(storage)
    path = segment(data_dir, ledger_id)
    lay_out(path, layout, records_size(5))
    offset = records_size(2)
    raw = bytearray(path.read_bytes())
    if damage == "data":
        raw[offset + 8] ^= 0xFF  # first data byte of entry 2
    else:
        raw[offset : offset + 8] = bytes(8)  # a zeroed header (a lost block), then records
    path.write_bytes(bytes(raw))

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        storage, ml = open_ml(data_dir)
    (error,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert error.levelno == logging.ERROR
    message = error.getMessage()
    assert TOPIC in message
    assert f"ledger {ledger_id} entry 2 at byte offset {offset}" in message
    assert ml.corrupt_entries == {(ledger_id, 2)}
    assert ml.read_entry((ledger_id, 2)) is None
    assert ml.read_entry((ledger_id, 3)) == written(4)[3]
    expected = written(5)
    expected[2] = None
    assert everything(ml) == expected
    assert ml.count_entries((ledger_id, 0), (ledger_id, 4)) == 5
    assert path.read_bytes() == raw[: records_size(5)]  # nothing cut but the zero tail
    storage.close()

    caplog.clear()
    with caplog.at_level(logging.ERROR, logger=LOGGER):
        storage, ml = open_ml(data_dir)
    assert len(caplog.records) == 1  # still reported on every open, never dropped
    assert ml.corrupt_entries == {(ledger_id, 2)}
    storage.close()


def test_crc_mismatch_in_a_closed_ledger_is_corruption_not_a_tail(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data_dir = tmp_path / "data"
    first, path = closed_first_ledger(data_dir)
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0x01  # last byte of the closed ledger's last entry
    path.write_bytes(bytes(raw))

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        storage, ml = open_ml(data_dir, max_entries_per_ledger=3)
    assert [r.levelno for r in caplog.records] == [logging.ERROR]
    assert ml.corrupt_entries == {(first, 2)}
    assert path.stat().st_size == len(raw)
    assert everything(ml) == [*written(2), None, written(4)[3]]
    storage.close()


def test_missing_entries_of_a_closed_ledger_read_as_none(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data_dir = tmp_path / "data"
    first, path = closed_first_ledger(data_dir)
    os.truncate(path, len(record(written(1)[0])))

    with caplog.at_level(logging.ERROR, logger=LOGGER):
        storage, ml = open_ml(data_dir, max_entries_per_ledger=3)
    assert any("has 1 of its 3 entries" in r.getMessage() for r in caplog.records)
    assert ml.corrupt_entries == {(first, 1), (first, 2)}
    assert everything(ml) == [written(1)[0], None, None, written(4)[3]]
    storage.close()


def test_corruption_found_while_reading_raises(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    storage, ml = open_ml(data_dir)
    write_synced(ml, 3)
    ledger_id = ml.last_confirmed[0]
    storage.close()
    storage, ml = open_ml(data_dir)
    path = segment(data_dir, ledger_id)
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0x01
    path.write_bytes(bytes(raw))
    assert ml.read_entry((ledger_id, 0)) == written(1)[0]
    with pytest.raises(LedgerCorruption, match=rf"entry {ledger_id}:2 of {TOPIC}"):
        ml.read_entry((ledger_id, 2))
    storage.close()


def test_tail_reads_come_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    storage, ml = open_ml(tmp_path / "data")
    cold = storage.open_ledger(
        "persistent://public/default/cold", LedgerConfig(cache_size_bytes=0), 0
    )
    write_synced(ml, 20)
    write_synced(cold, 20)

    def no_disk(*args: object) -> bytes:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(durable_module.os, "pread", no_disk)
    assert everything(ml) == written(20)
    with pytest.raises(StorageError, match="cannot read ledger"):
        everything(cold)
    monkeypatch.undo()
    assert everything(cold) == written(20)
    storage.close()


def test_group_commit_makes_one_data_sync_per_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One ``fdatasync`` of the segment file per group commit (the file only grows by
    appends, so it flushes the new size too); ``fsync`` only for the directories of a new
    segment file; nothing at all without ``journal_sync_data``."""
    storage, ml = open_ml(tmp_path / "data")
    unsynced = storage.open_ledger(
        "persistent://public/default/fast", LedgerConfig(journal_sync_data=False), 0
    )
    calls: list[tuple[str, int]] = []
    real_fsync, real_fdatasync = os.fsync, os.fdatasync

    def counting(kind: str, real):
        def sync(fd: int) -> None:
            calls.append((kind, os.fstat(fd).st_ino))
            real(fd)
        return sync

    monkeypatch.setattr(durable_module.os, "fsync", counting("fsync", real_fsync))
    monkeypatch.setattr(durable_module.os, "fdatasync", counting("fdatasync", real_fdatasync))
    write_synced(ml, 100)
    seg = segment(tmp_path / "data", ml.last_confirmed[0])
    directories = [("fsync", seg.parent.stat().st_ino), ("fsync", seg.parent.parent.stat().st_ino)]
    assert calls[0] == ("fdatasync", seg.stat().st_ino)
    assert sorted(calls[1:]) == sorted(directories)  # its new directory entries
    calls.clear()
    write_synced(ml, 100)
    assert calls == [("fdatasync", seg.stat().st_ino)]
    assert ml.sync() == (ml.last_confirmed[0], 199)
    assert calls == [("fdatasync", seg.stat().st_ino)]  # nothing pending: no sync
    for size in (200_000, 3 << 20):  # each past the zero-filled end: it is extended first
        calls.clear()
        before = seg.stat().st_size
        ml.add_entry(b"z" * size, 0)
        ml.sync()
        assert seg.stat().st_size > before + size
        assert calls == [("fdatasync", seg.stat().st_ino)]  # the zeros need no sync apart
    calls.clear()
    write_synced(unsynced, 100)
    assert calls == []
    assert len(everything(unsynced)) == 100
    storage.close()


def test_without_fdatasync_the_group_commit_falls_back_to_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage, ml = open_ml(tmp_path / "data")
    write_synced(ml, 1)
    calls: list[int] = []
    real_fsync = os.fsync
    monkeypatch.delattr(durable_module.os, "fdatasync")  # as on macOS
    monkeypatch.setattr(durable_module.os, "fsync", lambda fd: (calls.append(fd), real_fsync(fd)))
    write_synced(ml, 3)
    assert len(calls) == 1
    assert everything(ml) == written(1) + written(3)
    storage.close()


def test_no_entry_is_confirmed_before_its_bytes_are_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the segment file is synced, the group's records are all in it and none of its
    entries is confirmed yet; they are right after (so no receipt can precede the sync)."""
    storage, ml = open_ml(tmp_path / "data")
    write_synced(ml, 1)
    seen: list[tuple[tuple[int, int], int]] = []
    real = os.fdatasync

    def watching(fd: int) -> None:
        seen.append((ml.last_confirmed, len(os.pread(fd, 1 << 20, 0).rstrip(b"\0"))))
        real(fd)

    monkeypatch.setattr(durable_module.os, "fdatasync", watching)
    before = ml.last_confirmed
    positions = [ml.add_entry(data, 0) for data in written(5)]
    assert ml.last_confirmed == before and seen == []
    assert ml.sync() == positions[-1]
    size = len(record(b"entry-000")) * 6  # then the zero-filled tail
    assert seen == [(before, size)]  # confirmed only after the sync, of all six records
    storage.close()


def test_segment_directory_names_are_safe_and_distinct() -> None:
    names = [
        "persistent://public/default/orders",
        "persistent://public/default/Orders",
        "persistent://public/default/..",
        "persistent://public/default/" + "x" * 400,
    ]
    encoded = [segment_dir_name(name) for name in names]
    assert len({e.lower() for e in encoded}) == len(names)
    for name in encoded:
        assert "/" not in name and ":" not in name and "." not in name
        assert 0 < len(name) <= 200
    assert encoded[0] == "persistent%3A%2F%2Fpublic%2Fdefault%2Forders"


def test_leftover_segment_files_are_cleaned_or_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data_dir = tmp_path / "data"
    storage, ml = open_ml(data_dir, max_entries_per_ledger=2)
    write_synced(ml, 4)
    first, second = (info.ledger_id for info in ml.ledgers[:2])
    ml.trim((first, 1))
    storage.close()
    stale = segment(data_dir, first)
    stale.write_bytes(record(b"trimmed"))  # a trim that crashed before removing the file
    stray = segment(data_dir, 10_000)
    stray.write_bytes(record(b"unknown"))

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        storage, ml = open_ml(data_dir, max_entries_per_ledger=2)
    assert not stale.exists()
    assert stray.exists()
    assert any(r.levelno == logging.ERROR and "10000.log" in r.getMessage() for r in caplog.records)
    assert everything(ml)[:2] == written(4)[2:]
    assert ml.first_position() == (second, 0)
    storage.close()


def test_delete_removes_the_segment_directory(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    storage, ml = open_ml(data_dir, max_entries_per_ledger=2)
    write_synced(ml, 5)
    directory = segment(data_dir, 0).parent
    assert len(list(directory.glob("*.log"))) == 3
    assert len(list(directory.glob("*.idx"))) == 2  # the two rolled-over ledgers
    ml.delete()
    assert not directory.exists()
    storage.close()
    storage, ml = open_ml(data_dir)
    assert everything(ml) == []
    storage.close()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_many_ledgers_keep_few_files_open(tmp_path: Path) -> None:
    storage, ml = open_ml(tmp_path / "data", max_entries_per_ledger=2, cache_size_bytes=0,
                          max_open_files=4)
    baseline = len(os.listdir("/proc/self/fd"))  # the metadata store and the first ledger
    write_synced(ml, 40)
    assert len(ml.ledgers) == 20
    assert len(os.listdir("/proc/self/fd")) - baseline <= 3
    assert everything(ml) == written(40)
    assert len(os.listdir("/proc/self/fd")) - baseline <= 3
    storage.close()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_many_topics_share_one_bounded_set_of_open_files(tmp_path: Path) -> None:
    """A thousand managed ledgers (one PUT .../partitions of 1000) hold at most
    max_open_files descriptors; each still writes, syncs, reads and reopens correctly."""
    storage = DurableStorage(tmp_path / "data")
    config = LedgerConfig(cache_size_bytes=0, max_open_files=16)
    baseline = len(os.listdir("/proc/self/fd"))
    ledgers = [storage.open_ledger(f"persistent://t/ns/p-partition-{i}", config, 0)
               for i in range(1000)]
    for i, ml in enumerate(ledgers):
        ml.add_entry(f"m{i}".encode(), 0)
    for ml in ledgers:
        ml.sync()
    assert len(os.listdir("/proc/self/fd")) - baseline <= 16
    assert all(ml.read_entries(ml.first_position(), 1)[0][1] == f"m{i}".encode()
               for i, ml in enumerate(ledgers))
    assert len(os.listdir("/proc/self/fd")) - baseline <= 16
    storage.close()
    storage = DurableStorage(tmp_path / "data")
    again = storage.open_ledger("persistent://t/ns/p-partition-7", config, 0)
    assert again.read_entries(again.first_position(), 1)[0][1] == b"m7"
    storage.close()
