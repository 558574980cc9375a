"""Index files of sealed ledgers and the position journal of the open one.

Both are shortcuts that are used when they match and never trusted when they do not: every
way an index or journal can be wrong (missing, torn, corrupt, stale, describing a segment
file that changed) falls back to scanning, with exactly the entries that are really there.
Neither ever loses or invents an entry.
"""

from __future__ import annotations

import logging
import os
import signal
from array import array
from pathlib import Path

import pytest

from pulsarlab.broker.storage import DurableStorage, LedgerConfig, ManagedLedger
from pulsarlab.broker.storage import durable as durable_module
from pulsarlab.broker.storage.durable import segment_dir_name
from pulsarlab.broker.storage.ledger_index import (
    index_path,
    journal_bytes,
    journal_path,
    load_index,
    load_journal,
    write_index,
)

TOPIC = "persistent://public/default/indexed"
LOGGER = "pulsarlab.broker.storage"


def open_ml(data_dir: Path, **config: int) -> tuple[DurableStorage, ManagedLedger]:
    storage = DurableStorage(data_dir)
    return storage, storage.open_ledger(TOPIC, LedgerConfig(**config), 0)


def seg(data_dir: Path, ledger_id: int) -> Path:
    return data_dir / "ledgers" / segment_dir_name(TOPIC) / f"{ledger_id}.log"


def written(count: int) -> list[bytes]:
    return [b"entry-%04d" % i for i in range(count)]


def everything(ml: ManagedLedger) -> list[bytes | None]:
    return [data for _, data in ml.read_entries(ml.first_position(), 1_000_000)]


def build(data_dir: Path, count: int = 10, per_ledger: int = 4) -> list[int]:
    """``count`` entries over ledgers of ``per_ledger``, closed cleanly; the ledger ids."""
    storage, ml = open_ml(data_dir, max_entries_per_ledger=per_ledger)
    for data in written(count):
        ml.add_entry(data, 0)
        ml.sync()
    ids = [info.ledger_id for info in ml.ledgers]
    storage.close()
    return ids


class ScanLog(list):  # type: ignore[type-arg]
    """Ledger ids whose segment files were scanned, in order; ``starts[id]`` is the entry
    the scan began at (0: the whole file; more: the position journal covered the rest)."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: dict[int, int] = {}


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> ScanLog:
    seen = ScanLog()
    real = durable_module._scan

    def counting(path: Path, closed: bool, start=None):  # type: ignore[no-untyped-def]
        seen.append(int(path.stem))
        seen.starts[int(path.stem)] = 0 if start is None else len(start) - 1
        return real(path, closed, start)

    monkeypatch.setattr(durable_module, "_scan", counting)
    return seen


def test_a_clean_close_indexes_every_ledger_and_reopening_scans_none(
    tmp_path: Path, scans: list[int]
) -> None:
    data_dir = tmp_path / "data"
    ids = build(data_dir)
    assert all(index_path(seg(data_dir, i)).exists() for i in ids)
    # Sealed (at rollover or at close) means exact: the zero-filled tail is cut first.
    assert [seg(data_dir, i).stat().st_size for i in ids] == [18 * 4, 18 * 4, 18 * 2]
    storage, ml = open_ml(data_dir, max_entries_per_ledger=4)
    assert scans == []
    assert everything(ml) == written(10)
    assert [info.entries for info in ml.ledgers[:-1]] == [4, 4, 2]
    assert ml.corrupt_entries == frozenset()
    storage.close()


def test_a_crashed_ledger_is_scanned_once_then_indexed(
    tmp_path: Path, crash, scans: list[int]
) -> None:
    data_dir = tmp_path / "data"
    storage, ml = open_ml(data_dir)
    for data in written(5):
        ml.add_entry(data, 0)
    ml.sync()
    crashed = ml.last_confirmed[0]
    crash(storage)
    assert not index_path(seg(data_dir, crashed)).exists()

    storage, ml = open_ml(data_dir)
    assert scans == [crashed]
    assert index_path(seg(data_dir, crashed)).exists()
    crash(storage)  # no clean close this time either
    scans.clear()
    storage, ml = open_ml(data_dir)
    assert crashed not in scans
    assert everything(ml) == written(5)
    storage.close()


@pytest.mark.parametrize(
    "damage",
    ["missing", "empty", "truncated", "flipped_offset", "flipped_header", "other_ledgers"],
)
def test_a_bad_index_falls_back_to_the_scan_with_the_same_entries(
    tmp_path: Path, scans: list[int], damage: str
) -> None:
    data_dir = tmp_path / "data"
    ids = build(data_dir)
    target = index_path(seg(data_dir, ids[0]))
    raw = bytearray(target.read_bytes())
    if damage == "missing":
        target.unlink()
    elif damage == "empty":
        target.write_bytes(b"")
    elif damage == "truncated":
        target.write_bytes(bytes(raw[:-5]))
    elif damage == "flipped_offset":
        raw[-3] ^= 0x10
        target.write_bytes(bytes(raw))
    elif damage == "flipped_header":
        raw[9] ^= 0x01  # the entry count
        target.write_bytes(bytes(raw))
    else:  # a well-formed index, but of another ledger (2 entries, not 4)
        target.write_bytes(index_path(seg(data_dir, ids[2])).read_bytes())

    storage, ml = open_ml(data_dir, max_entries_per_ledger=4)
    assert scans == [ids[0]]
    assert everything(ml) == written(10)
    assert ml.corrupt_entries == frozenset()
    storage.close()
    offsets, reason = load_index(seg(data_dir, ids[0]), 4)  # rewritten after the scan
    assert reason == "ok" and offsets is not None and len(offsets) == 5


def test_an_index_of_a_segment_that_changed_is_not_trusted(
    tmp_path: Path, scans: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    """Same size, same modification time, one byte changed: the change time gives it away,
    and the corruption is reported as the scan finds it."""
    data_dir = tmp_path / "data"
    ids = build(data_dir)
    path = seg(data_dir, ids[1])
    before = path.stat()
    raw = bytearray(path.read_bytes())
    raw[10] ^= 0xFF  # inside entry 0's data (bytes 8..17)
    path.write_bytes(bytes(raw))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        storage, ml = open_ml(data_dir, max_entries_per_ledger=4)
    assert scans == [ids[1]]
    assert ml.corrupt_entries == {(ids[1], 0)}
    assert [r.levelno for r in caplog.records] == [logging.ERROR]
    expected: list[bytes | None] = list(written(10))
    expected[4] = None
    assert everything(ml) == expected
    storage.close()
    assert not index_path(path).exists() or load_index(path, 4)[0] is None


def test_the_last_record_is_checked_even_when_the_index_matches(
    tmp_path: Path, scans: list[int]
) -> None:
    """An index re-made over a damaged file passes every header check; the tail check
    still sends the ledger to the scan, which reports the damage."""
    data_dir = tmp_path / "data"
    ids = build(data_dir)
    path = seg(data_dir, ids[0])
    offsets, _ = load_index(path, 4)
    assert offsets is not None
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0x01
    path.write_bytes(bytes(raw))
    write_index(path, offsets)

    storage, ml = open_ml(data_dir, max_entries_per_ledger=4)
    assert scans == [ids[0]]
    assert ml.corrupt_entries == {(ids[0], 3)}
    storage.close()


def test_the_ledger_list_decides_how_many_entries_a_ledger_has(
    tmp_path: Path, scans: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    """A segment file cut short after a clean close: the index no longer matches, and the
    scan reports the missing entries as ``None`` instead of silently dropping them."""
    data_dir = tmp_path / "data"
    ids = build(data_dir)
    path = seg(data_dir, ids[0])
    offsets, _ = load_index(path, 4)
    assert offsets is not None
    os.truncate(path, offsets[2])

    with caplog.at_level(logging.ERROR, logger=LOGGER):
        storage, ml = open_ml(data_dir, max_entries_per_ledger=4)
    assert scans == [ids[0]]
    assert any("has 2 of its 4 entries" in r.getMessage() for r in caplog.records)
    assert everything(ml) == [*written(2), None, None, *written(10)[4:]]
    storage.close()


def test_trimmed_and_orphaned_indexes_are_removed(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    storage, ml = open_ml(data_dir, max_entries_per_ledger=2)
    for data in written(6):
        ml.add_entry(data, 0)
        ml.sync()
    first = ml.ledgers[0].ledger_id
    assert index_path(seg(data_dir, first)).exists()
    ml.trim((first, 1))
    assert not index_path(seg(data_dir, first)).exists()
    storage.close()
    orphan = index_path(seg(data_dir, 9_999))
    orphan.write_bytes(b"left behind by a crash")

    storage, ml = open_ml(data_dir, max_entries_per_ledger=2)
    assert not orphan.exists()
    assert everything(ml) == written(6)[2:]
    storage.close()


def test_an_unwritable_index_is_a_warning_not_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(segment: Path, offsets) -> None:  # type: ignore[no-untyped-def]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(durable_module, "write_index", refuse)
    data_dir = tmp_path / "data"
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        ids = build(data_dir)
    assert any("cannot write the index" in r.getMessage() for r in caplog.records)
    monkeypatch.undo()
    assert not any(index_path(seg(data_dir, i)).exists() for i in ids)
    storage, ml = open_ml(data_dir, max_entries_per_ledger=4)
    assert everything(ml) == written(10)
    storage.close()


def test_unsynced_ledgers_are_synced_before_they_are_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(durable_module.os, "fsync", lambda fd: (calls.append(fd), real(fd)))
    storage, ml = open_ml(tmp_path / "data", journal_sync_data=False, max_entries_per_ledger=3)
    calls.clear()  # creating the data directory syncs it
    for data in written(3):
        ml.add_entry(data, 0)
    ml.sync()
    assert calls == []
    ml.add_entry(b"rolls over", 0)  # seals the first ledger: one fsync, then its index
    assert len(calls) == 1
    assert index_path(seg(tmp_path / "data", ml.ledgers[0].ledger_id)).exists()
    storage.close()


# -- the position journal of the open ledger ---------------------------------------------------


def crashed_with(data_dir: Path, crash, count: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """``count`` entries synced in groups of 10 into one ledger, then a crash; its id.

    The always-scanned tail is cut to 100 bytes (5 entries), so the journal matters."""
    monkeypatch.setattr(durable_module, "_TAIL_SCAN_BYTES", 100)
    storage, ml = open_ml(data_dir)
    for i, data in enumerate(written(count)):
        ml.add_entry(data, 0)
        if i % 10 == 9:
            ml.sync()
    ml.sync()
    ledger_id = ml.last_confirmed[0]
    crash(storage)
    chunks = -(-count // 10)
    assert journal_path(seg(data_dir, ledger_id)).stat().st_size == 8 * count + 8 * chunks
    return ledger_id


def test_the_journal_gets_a_chunk_once_its_entries_span_a_quarter_of_the_tail(
    tmp_path: Path, crash, scans: ScanLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small group commits (one entry each, 18-byte records) are journaled 6 at a time with
    a 400-byte tail scan (a chunk per 100 synced bytes), and a crash still recovers every
    synced entry, scanning only from the last entry the journal vouches for before the
    tail."""
    monkeypatch.setattr(durable_module, "_TAIL_SCAN_BYTES", 400)
    data_dir = tmp_path / "data"
    storage, ml = open_ml(data_dir)
    ledger_id = ml.last_confirmed[0]
    journal = journal_path(seg(data_dir, ledger_id))
    for data in written(5):
        ml.add_entry(data, 0)
        ml.sync()
    assert not journal.exists()  # 90 bytes synced: recovery would scan them anyway
    for data in written(100)[5:]:
        ml.add_entry(data, 0)
        ml.sync()
    size = 18 * 100  # the data; zeros follow it up to the file's size
    assert seg(data_dir, ledger_id).stat().st_size > size
    assert journal.stat().st_size == 8 * 96 + 8 * 16  # 16 chunks of 6 ends: entries 0..95
    assert load_journal(seg(data_dir, ledger_id), size) == array("Q", range(0, 18 * 97, 18))
    crash(storage)

    storage, ml = open_ml(data_dir)
    assert scans == [ledger_id]
    assert scans.starts[ledger_id] == 77  # the last journaled end within data end - 400
    assert everything(ml) == written(100)
    storage.close()


def test_after_a_crash_the_journal_spares_all_but_the_tail_of_the_scan(
    tmp_path: Path, crash, scans: ScanLog, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    data_dir = tmp_path / "data"
    ledger_id = crashed_with(data_dir, crash, 200, monkeypatch)
    path = seg(data_dir, ledger_id)
    size = 18 * 200
    with path.open("r+b") as file:  # a torn write after the last sync, into the zeros
        file.seek(size)
        file.write(b"\x00\x00\x01\x00garbage")

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        storage, ml = open_ml(data_dir)
    assert scans == [ledger_id]
    assert 190 <= scans.starts[ledger_id] < 200  # only the last ~100 bytes were scanned
    assert any("torn tail" in r.getMessage() for r in caplog.records)
    assert path.stat().st_size == size
    assert everything(ml) == written(200)
    assert not journal_path(path).exists() and index_path(path).exists()
    storage.close()


@pytest.mark.parametrize(
    "damage", ["garbage", "beyond_the_file", "torn_chunk", "flipped_middle", "bad_boundary"]
)
def test_a_wrong_journal_never_loses_or_invents_entries(
    tmp_path: Path, crash, scans: ScanLog, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    data_dir = tmp_path / "data"
    ledger_id = crashed_with(data_dir, crash, 50, monkeypatch)
    path, journal = seg(data_dir, ledger_id), journal_path(seg(data_dir, ledger_id))
    raw = bytearray(journal.read_bytes())
    expected = written(50)
    if damage == "garbage":
        journal.write_bytes(bytes(range(256)) * 2)
    elif damage == "beyond_the_file":  # the segment lost its last 20 entries (18 B each)
        os.truncate(path, 30 * 18)
        expected = written(30)
    elif damage == "torn_chunk":
        journal.write_bytes(bytes(raw[:-3]))
    elif damage == "flipped_middle":  # chunk 2 (entries 10..19) fails its CRC
        raw[88 + 8 + 5 * 8] ^= 0x04
        journal.write_bytes(bytes(raw))
    else:  # a well-formed chunk whose last boundary is off: the tail check catches it
        ends = array("Q", [18 * (i + 1) for i in range(50)])
        ends[43] -= 3  # the end of the last entry the journal may vouch for (size - 100)
        journal.write_bytes(journal_bytes(ends))

    storage, ml = open_ml(data_dir)
    assert scans == [ledger_id]
    starts = {"garbage": 0, "beyond_the_file": 24, "torn_chunk": 40, "flipped_middle": 10,
              "bad_boundary": 0}
    assert scans.starts[ledger_id] == starts[damage]
    assert everything(ml) == expected
    assert ml.corrupt_entries == frozenset()
    storage.close()


def test_a_journal_is_dropped_when_its_ledger_is_sealed_or_trimmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(durable_module, "_TAIL_SCAN_BYTES", 0)  # a journal chunk per commit
    data_dir = tmp_path / "data"
    storage, ml = open_ml(data_dir, max_entries_per_ledger=3)
    for data in written(7):
        ml.add_entry(data, 0)
        ml.sync()
    first, second, current = (info.ledger_id for info in ml.ledgers)
    assert not journal_path(seg(data_dir, first)).exists()
    assert journal_path(seg(data_dir, current)).exists()
    ml.trim((second, 2))
    storage.close()
    assert list(seg(data_dir, current).parent.glob("*.pos")) == []
    assert sorted(p.name for p in seg(data_dir, current).parent.glob("*.idx")) == [
        f"{current}.idx"
    ]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork() to kill a writer process")
def test_kill_9_while_writing_with_the_journal_doing_the_work(
    tmp_path: Path, scans: ScanLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real SIGKILL after a partly written (unsynced) group: the journal spares the scan
    of every synced entry, and exactly the synced entries come back."""
    monkeypatch.setattr(durable_module, "_TAIL_SCAN_BYTES", 0)
    data_dir = tmp_path / "data"
    pid = os.fork()
    if pid == 0:  # the child writes 500 synced entries, then half a group, and is killed
        try:
            storage, ml = open_ml(data_dir)
            for i, data in enumerate(written(500)):
                ml.add_entry(data, 0)
                if i % 50 == 49:
                    ml.sync()
            for data in written(20):
                ml.add_entry(b"unsynced-" + data, 0)
            ml._write_buffer(ml.last_added[0])  # on disk, never fsynced nor confirmed
        finally:
            os.kill(os.getpid(), signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL

    storage, ml = open_ml(data_dir)
    (ledger_id,) = scans
    assert scans.starts[ledger_id] == 500  # only the unsynced bytes were scanned
    data = everything(ml)
    assert data[:500] == written(500)
    # The unsynced group reached the page cache, so it survives a process kill (not a
    # power cut); it is never half there.
    assert data[500:] in ([], [b"unsynced-" + d for d in written(20)])
    storage.close()
