"""The official client's reader stops at the end of its range only when nothing of the end
entry is left: ``has_message_available`` may say "no" while the rest of the end entry's
batch waits in the receiver queue (the broker's last message id naming no batch index, as
pulsar-lite's does), so a short read takes what is queued first. Driven with a stand-in for
the official client: no Spark, no broker."""

from __future__ import annotations

from typing import Any

import pytest

from pulsarlab.spark import cluster_reading
from pulsarlab.spark.positions import Position
from pulsarlab.spark.reading import ReadSettings


class _Timeout(Exception):
    pass


class _Id:
    def __init__(self, entry: int, index: int) -> None:
        self.entry, self.index = entry, index

    def ledger_id(self) -> int:
        return 7

    def entry_id(self) -> int:
        return self.entry

    def partition(self) -> int:
        return -1

    def batch_index(self) -> int:
        return self.index


class _Message:
    def __init__(self, entry: int, index: int) -> None:
        self.id = _Id(entry, index)

    def message_id(self) -> _Id:
        return self.id

    def publish_timestamp(self) -> int:
        return 1

    def producer_name(self) -> str:
        return "p"

    def has_null_value(self) -> bool:
        return False

    def ordering_key(self) -> None:
        return None

    def properties(self) -> dict[str, str]:
        return {}

    def partition_key(self) -> str:
        return ""

    def event_timestamp(self) -> int:
        return 0

    def data(self) -> bytes:
        return f"{self.id.entry}:{self.id.index}".encode()


class _Reader:
    """The queue holds entry 3's batch of 5; ``has_message_available`` answers as a client
    comparing with a last message id of batch index -1: "no" once in entry 3."""

    def __init__(self, queued: list[_Message]) -> None:
        self.queued = queued
        self.taken: list[_Message] = []
        self.waits: list[int] = []

    def read_next(self, timeout_ms: int) -> _Message:
        self.waits.append(timeout_ms)
        if not self.queued:
            raise _Timeout()
        self.taken.append(self.queued.pop(0))
        return self.taken[-1]

    def has_message_available(self) -> bool:
        return not self.taken or self.taken[-1].id.entry < 3

    def close(self) -> None:
        pass


class _Client:
    def __init__(self, reader: _Reader) -> None:
        self.reader = reader

    def create_reader(self, *_args: Any, **_kwargs: Any) -> _Reader:
        return self.reader

    def close(self) -> None:
        pass


class _Pulsar:
    Timeout = _Timeout
    PulsarException = RuntimeError

    class MessageId:
        earliest = object()


@pytest.fixture
def reader(monkeypatch: pytest.MonkeyPatch) -> _Reader:
    queued = [_Message(2, -1)] + [_Message(3, i) for i in range(5)]
    the_reader = _Reader(queued)
    monkeypatch.setattr(cluster_reading, "_official", lambda: _Pulsar)
    monkeypatch.setattr(cluster_reading, "_client", lambda settings: _Client(the_reader))
    monkeypatch.setattr(cluster_reading, "to_record_batch",
                        lambda entries, columns, schema: [rows[0][6] for _, rows in entries])
    return the_reader


def _read(end: Position) -> list[bytes]:
    settings = ReadSettings(service_url="pulsar://stand-in:6650", poll_timeout_ms=5_000,
                            connection_timeout_ms=5_000, receiver_queue_size=100,
                            rows_per_batch=1_000, fail_on_data_loss=True, client="official")
    batches = cluster_reading.read_range_official(
        "persistent://public/default/t", Position.earliest(), end, settings, [], None)
    return [value for batch in batches for value in batch]


def test_the_end_entrys_queued_messages_are_read_before_stopping(reader: _Reader) -> None:
    assert _read(Position(7, 3)) == [b"2:-1"] + [f"3:{i}".encode() for i in range(5)]
    assert reader.waits[-1] == cluster_reading._QUEUED_MS  # the last read only took the queue


def test_an_end_batch_index_still_stops_at_it(reader: _Reader) -> None:
    assert _read(Position(7, 3, -1, 2)) == [b"2:-1", b"3:0", b"3:1", b"3:2"]
