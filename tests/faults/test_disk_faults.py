"""Disk faults: a full or read-only disk, and segment files damaged between runs (R-STORE).

* Disk full / read-only: the durable ledger's ``os`` calls (write, fsync, file creation,
  truncation) fail with ENOSPC or EROFS for a while (no real disk is filled: we run as root,
  so permissions would not stop us). Producers get a clear error naming the problem, the
  stored messages stay intact and readable, the same producer and consumer carry on once
  "space returns", and a restart finds exactly what was confirmed.
* Segment files edited between runs (the broker killed with SIGKILL first): a torn tail or a
  corrupt last entry is truncated with a log line; a corrupt entry in the middle is reported
  (log, internal stats, on every start), skipped by dispatch with a log line, and the broker
  keeps serving; a damaged length field in the middle must not cost the good entries after it.
"""

from __future__ import annotations

import errno
import logging
import os
import struct
import zlib
from pathlib import Path

import pytest

from pulsarlab import Admin, Broker, Client, ConsumerType, InitialPosition, MessageId
from pulsarlab.broker.client.exceptions import BrokerPersistenceError
from pulsarlab.broker.storage import durable

from .support import SESSION, BrokerProcess, segment_files, wait_until

WAIT_MS = 10_000
HEADER = struct.Struct(">II")


class FaultyOs:
    """The ``os`` module as ``durable.py`` sees it, with writes failing while ``failing``."""

    def __init__(self, error: int, mode: str) -> None:
        self.error = error
        self.mode = mode  # "write": pwrite fails; "partial": half a write lands, then fails;
        # "fsync": writes land, fsync / fdatasync fail
        self.failing = False
        self.faults = 0

    def __getattr__(self, name: str):
        return getattr(os, name)

    def _fail(self) -> None:
        self.faults += 1
        raise OSError(self.error, os.strerror(self.error))

    def pwrite(self, fd: int, data, offset: int) -> int:
        if self.failing and self.mode == "write":
            self._fail()
        if self.failing and self.mode == "partial":
            if len(data) > 1 and self.faults % 2 == 0:
                self.faults += 1
                return os.pwrite(fd, bytes(data[: len(data) // 2]), offset)
            self._fail()
        return os.pwrite(fd, data, offset)

    def fsync(self, fd: int) -> None:
        if self.failing:
            self._fail()
        os.fsync(fd)

    def fdatasync(self, fd: int) -> None:  # the group commit's sync of a segment file
        if self.failing:
            self._fail()
        os.fdatasync(fd)

    def open(self, path, flags: int, mode: int = 0o777, *, dir_fd=None) -> int:
        writing = flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
        if self.failing and writing and self.error == errno.EROFS:
            self._fail()
        return os.open(path, flags, mode, dir_fd=dir_fd)

    def ftruncate(self, fd: int, length: int) -> None:
        if self.failing and self.error == errno.EROFS:
            self._fail()
        os.ftruncate(fd, length)


def _read_all(url: str, topic: str, count: int) -> list[str]:
    with Client(url) as client:
        reader = client.create_reader(topic, MessageId.earliest)
        out = [reader.read_next(WAIT_MS).data().decode() for _ in range(count)]
        assert not reader.has_message_available(), "more stored than was confirmed"
        return out


@pytest.mark.parametrize(
    ("error", "mode"),
    [
        (errno.ENOSPC, "write"),
        (errno.ENOSPC, "partial"),
        (errno.ENOSPC, "fsync"),
        (errno.EROFS, "write"),
        (errno.EROFS, "partial"),
        (errno.EROFS, "fsync"),
    ],
    ids=lambda v: errno.errorcode.get(v, v) if isinstance(v, int) else v,
)
def test_full_or_read_only_disk_fails_sends_clearly_and_service_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: int, mode: str
) -> None:
    SESSION.check(f"disk fault {mode}")
    topic = f"disk-{errno.errorcode[error]}-{mode}"
    faulty = FaultyOs(error, mode)
    monkeypatch.setattr(durable, "os", faulty)
    data_dir = str(tmp_path / "data")
    # Default ledger sizes: a rollover here would hit the rollover hang (see
    # test_crash_safety.py), and an in-process broker that spins cannot be stopped.
    with Broker(data_dir) as broker:
        client = Client(broker.service_url, operation_timeout_seconds=10)
        try:
            # "keep" never acknowledges: it keeps every ledger from being trimmed.
            broker.call(lambda service: service.create_subscription(topic, "keep"))
            consumer = client.subscribe(topic, "s", consumer_type=ConsumerType.Shared,
                                        initial_position=InitialPosition.Earliest)
            producer = client.create_producer(topic, send_timeout_millis=10_000)
            for i in range(20):
                producer.send(f"before:{i}".encode())
            got = [consumer.receive(WAIT_MS) for _ in range(20)]
            for msg in got[:10]:
                consumer.acknowledge(msg)

            faulty.failing = True
            for i in range(10):
                with pytest.raises(BrokerPersistenceError) as info:
                    producer.send(f"lost:{i}".encode())
                assert os.strerror(error) in str(info.value), str(info.value)
                assert topic in str(info.value), str(info.value)
            assert faulty.faults >= 10
            # The consumer and acks still work while the disk is full (metadata is SQLite).
            for msg in got[10:]:
                consumer.acknowledge(msg)

            faulty.failing = False  # space returns
            for i in range(20):
                producer.send(f"after:{i}".encode())
            after = [consumer.receive(WAIT_MS).data().decode() for _ in range(20)]
            assert after == [f"after:{i}" for i in range(20)]
            for msg_data in after:
                assert not msg_data.startswith("lost")
            expected = [f"before:{i}" for i in range(20)] + after
            assert _read_all(broker.service_url, topic, 40) == expected
            internal = broker.call(lambda service: service.internal_stats(topic))
            assert internal["corruptEntries"] == []
        finally:
            client.close()

    # A clean restart finds exactly what was confirmed, and nothing corrupt.
    with Broker(data_dir) as broker:
        assert _read_all(broker.service_url, topic, 40) == expected
        internal = broker.call(lambda service: service.internal_stats(topic))
        assert internal["corruptEntries"] == []


# -- segment files damaged between runs ------------------------------------------------------


def _records(path: Path) -> list[tuple[int, int]]:
    """``(offset, length)`` of every record in a segment file (an open ledger's file goes on
    with zeros after them: the space it keeps zero-filled ahead of its writes)."""
    raw = path.read_bytes()
    out, pos = [], 0
    while pos + HEADER.size <= len(raw):
        length, _crc = HEADER.unpack_from(raw, pos)
        if length == 0:
            break
        out.append((pos, length))
        pos += HEADER.size + length
    assert raw[pos:] == bytes(len(raw) - pos), "the records should end with zeros or nothing"
    return out


def _data_end(path: Path) -> int:
    offset, length = _records(path)[-1]
    return offset + HEADER.size + length


def _crashed_broker_with(tmp_path: Path, topic: str, count: int) -> tuple[Path, Path]:
    """A broker that stored ``count`` receipted messages and was then killed with SIGKILL;
    returns the data directory and the segment file holding them.

    (The ``pulsarlab broker`` command leaves logging unconfigured, so its log lines reach
    stderr as bare messages, without level names: the checks match the messages.)"""
    data_dir = tmp_path / "data"
    broker = BrokerProcess(data_dir, log_path=tmp_path / "first.log").start()
    try:
        with Client(broker.service_url) as client:
            producer = client.create_producer(topic)
            for i in range(count):
                producer.send(f"m:{i}".encode())
    finally:
        broker.kill()
    (segment,) = [p for p in segment_files(data_dir, topic) if p.stat().st_size]
    assert len(_records(segment)) == count
    return data_dir, segment


def _consume_earliest(broker: BrokerProcess, topic: str, count: int) -> list[str]:
    """A new subscription from the earliest message: ``count`` messages, then nothing more."""
    with Client(broker.service_url) as client:
        consumer = client.subscribe(topic, "check", initial_position=InitialPosition.Earliest)
        out = []
        for _ in range(count):
            msg = consumer.receive(WAIT_MS)
            consumer.acknowledge(msg)
            out.append(msg.data().decode())
        with Admin(broker.web_url) as admin:
            wait_until(
                lambda: admin.topics.get_stats(topic)["subscriptions"]["check"]["msgBacklog"]
                == 0,
                10, "the check subscription to have nothing left",
            )
        return out


def _still_serves(url: str, topic: str) -> None:
    with Client(url) as client:
        consumer = client.subscribe(topic, "live")
        client.create_producer(topic).send(b"new")
        assert consumer.receive(WAIT_MS).data() == b"new"


def test_torn_tail_is_truncated_with_a_log_line(tmp_path: Path) -> None:
    topic = "torn-tail"
    data_dir, segment = _crashed_broker_with(tmp_path, topic, 30)
    size = _data_end(segment)
    assert segment.stat().st_size > size  # the killed broker left its zero-filled tail
    with segment.open("r+b") as file:  # a write the crash cut short: header and half a body
        file.seek(size)
        file.write(HEADER.pack(100, 12345) + b"x" * 40)

    broker = BrokerProcess(data_dir, log_path=tmp_path / "second.log").start()
    try:
        log = broker.log_text()
        assert f"torn tail in ledger {segment.stem} at byte offset {size}" in log, log
        assert "truncating 48 bytes" in log and "CRC" not in log, log
        assert segment.stat().st_size == size
        assert broker.topic_report(topic)["entries"] == 30
        assert _consume_earliest(broker, topic, 30) == [f"m:{i}" for i in range(30)]
        _still_serves(broker.service_url, topic)
    finally:
        broker.kill()


def test_corrupt_last_entry_is_truncated_as_a_torn_tail(tmp_path: Path) -> None:
    topic = "corrupt-tail"
    data_dir, segment = _crashed_broker_with(tmp_path, topic, 30)
    offset, length = _records(segment)[-1]
    raw = bytearray(segment.read_bytes())
    raw[offset + HEADER.size + length - 1] ^= 0xFF
    segment.write_bytes(bytes(raw))

    broker = BrokerProcess(data_dir, log_path=tmp_path / "second.log").start()
    try:
        log = broker.log_text()
        assert "torn tail" in log and f"offset {offset}" in log and "(entry 29)" in log, log
        assert segment.stat().st_size == offset
        assert broker.topic_report(topic)["entries"] == 29
        assert _consume_earliest(broker, topic, 29) == [f"m:{i}" for i in range(29)]
        _still_serves(broker.service_url, topic)
    finally:
        broker.kill()


def test_corrupt_middle_entry_is_reported_skipped_visibly_and_the_broker_serves(
    tmp_path: Path,
) -> None:
    topic = "corrupt-middle"
    data_dir, segment = _crashed_broker_with(tmp_path, topic, 30)
    offset, _length = _records(segment)[10]
    data_end = _data_end(segment)
    raw = bytearray(segment.read_bytes())
    raw[offset + HEADER.size + 2] ^= 0xFF  # a byte of entry 10's data
    segment.write_bytes(bytes(raw))
    ledger = int(segment.stem)

    for run in ("second", "third"):  # reported on every start, never forgotten
        broker = BrokerProcess(data_dir, log_path=tmp_path / f"{run}.log").start()
        try:
            log = broker.log_text()
            assert f"ledger {ledger} entry 10 at byte offset {offset} failed its CRC" in log, log
            assert "torn tail" not in log, log
            # Only the zero-filled tail goes (the ledger is sealed): no record is cut.
            assert segment.read_bytes() == raw[:data_end], "a corrupt middle must not be cut"
            with Admin(broker.web_url) as admin:
                internal = admin.topics.get_internal_stats(topic)
            assert internal["corruptEntries"] == [f"{ledger}:10"]
            if run == "second":
                got = _consume_earliest(broker, topic, 29)
                assert got == [f"m:{i}" for i in range(30) if i != 10]
                skipped = broker.log_text()
                assert f"skipping corrupt entry {ledger}:10" in skipped, skipped
                _still_serves(broker.service_url, topic)
        finally:
            broker.kill()


def test_damaged_length_in_the_middle_keeps_the_good_entries_after_it(
    tmp_path: Path,
) -> None:
    topic = "bad-length-middle"
    data_dir, segment = _crashed_broker_with(tmp_path, topic, 30)
    offset, length = _records(segment)[10]
    data_end = _data_end(segment)
    raw = bytearray(segment.read_bytes())
    HEADER.pack_into(raw, offset, length + 7, zlib.crc32(b"whatever"))
    segment.write_bytes(bytes(raw))

    broker = BrokerProcess(data_dir, log_path=tmp_path / "second.log").start()
    try:
        log = broker.log_text()
        assert f"ledger {segment.stem}" in log and "torn tail" not in log, (
            f"middle corruption must be reported as such, not as a torn tail:\n{log}"
        )
        assert segment.stat().st_size == data_end, "the good entries after it were truncated"
        _still_serves(broker.service_url, topic)
    finally:
        broker.kill()


def test_disk_fault_logging_names_the_managed_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The broker's own log says which topic could not be written, and why."""
    topic = "disk-log"
    faulty = FaultyOs(errno.ENOSPC, "write")
    monkeypatch.setattr(durable, "os", faulty)
    with Broker(str(tmp_path / "data")) as broker, Client(broker.service_url) as client:
        producer = client.create_producer(topic)
        producer.send(b"ok")
        faulty.failing = True
        with caplog.at_level(logging.ERROR), pytest.raises(BrokerPersistenceError):
            producer.send(b"lost")
        faulty.failing = False
        producer.send(b"ok again")
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any(topic in m and os.strerror(errno.ENOSPC) in m for m in errors), errors
