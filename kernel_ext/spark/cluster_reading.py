"""Executor-side reading from any Pulsar cluster with the official client's Reader.

Used with ``service.url`` ``pulsar://…`` (StreamNative's option) and ``client`` ``official``;
pulsarlab's own client (:func:`~.reading.read_range`) is the default and needs no
``pulsar-client``. Each Spark partition reads one topic partition's range ``(start, end]``
with ``pulsar.Client.create_reader`` (non-durable, exclusive of ``start``), one message at a
time, and yields the same Arrow record batches as the pulsarlab path
(:func:`~.reading.to_record_batch`): each message becomes a one-row "entry" carrying the
fields the column builders read. ``__messageId`` keeps pulsarlab's 28-byte layout (ledger,
entry, partition, batch index; the batch size is 0 because the official client does not
report it).

A batch entry's messages share one (ledger, entry): when the range ends at a whole entry,
the reader keeps reading that entry's messages until the next message is past the end or
nothing more is available. "Nothing more" is ``has_message_available`` saying so and then a
short read finding the receiver queue empty too: the client compares with the broker's last
message id, which may name no batch index (-1), while the rest of the end entry's batch
already waits in its queue.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..extras import MissingDependency, require
from .options import PulsarSparkError
from .positions import Position, past_end
from .reading import ReadSettings, to_record_batch

__all__ = ["read_range_official"]

log = logging.getLogger("pulsarlab.spark")

_SLICE_MS = 1000
_QUEUED_MS = 50  # a read that only takes what the receiver queue already holds


@dataclass(frozen=True)
class _Metadata:
    publish_time: int
    producer_name: str


class _OneMessage:
    """One official-client message in the shape :func:`to_record_batch` reads."""

    __slots__ = ("batch_index", "entry_id", "ledger_id", "metadata", "partition", "topic")

    batch_size = 0

    def __init__(self, topic: str, msg: Any) -> None:
        mid = msg.message_id()
        self.topic = topic
        self.ledger_id = mid.ledger_id()
        self.entry_id = mid.entry_id()
        self.partition = mid.partition()
        self.batch_index = mid.batch_index()
        self.metadata = _Metadata(msg.publish_timestamp(), msg.producer_name())

    def batch_indexes(self) -> list[int]:
        return [self.batch_index]


def _row(msg: Any) -> list[Any]:
    """[properties, partition_key, ordering_key, event_time, sequence_id, null, payload]."""
    null = msg.has_null_value()
    ordering = msg.ordering_key()
    return [msg.properties() or {}, msg.partition_key() or None,
            ordering.decode("utf-8", "replace") if isinstance(ordering, bytes) else ordering,
            msg.event_timestamp(), 0, null, None if null else msg.data()]


def _official() -> Any:
    """The official client's module; missing, a :class:`PulsarSparkError` (the one line
    Spark's error summary shows) naming the extra that installs it."""
    try:
        return require("pulsar", "reading a Pulsar cluster from Spark with client=official")
    except MissingDependency as exc:
        raise PulsarSparkError(str(exc)) from None


def _client(settings: ReadSettings) -> Any:
    pulsar = _official()

    options: dict[str, Any] = {
        "connection_timeout_ms": settings.connection_timeout_ms,
        "operation_timeout_seconds": max(1, settings.connection_timeout_ms // 1000),
        "logger": logging.getLogger("pulsarlab.spark.client"),
    }
    if settings.security.token is not None:
        options["authentication"] = pulsar.AuthenticationToken(settings.security.token)
    return pulsar.Client(settings.service_url, **options)


def read_range_official(
    topic: str,
    start: Position,
    end: Position,
    settings: ReadSettings,
    columns: Sequence[tuple[str, str]],
    arrow_schema: Any,
) -> Iterator[Any]:
    """Yield the messages of ``topic`` in ``(start, end]`` as Arrow record batches."""
    pulsar = _official()

    if end.key <= start.key:
        return
    client = _client(settings)
    try:
        start_id = (pulsar.MessageId.earliest if start.is_earliest else
                    pulsar.MessageId(start.partition, start.ledger, start.entry, start.batch))
        try:
            reader = client.create_reader(topic, start_id, start_message_id_inclusive=False,
                                          receiver_queue_size=settings.receiver_queue_size)
        except pulsar.PulsarException as exc:
            raise PulsarSparkError(
                f"reading {topic} from {settings.service_url}: {exc} (the cluster must be "
                "reachable from the Spark executors)"
            ) from None
        entries: list[tuple[Any, list[Sequence[Any]]]] = []
        idle_since = time.monotonic()
        read_up_to = (-1, -1, -1)  # the last (ledger, entry, batch index) taken
        closing = False  # in the end entry with nothing more available: take what is queued
        while True:
            try:
                msg = reader.read_next(_QUEUED_MS if closing else _SLICE_MS)
            except pulsar.Timeout:
                if closing:
                    break
                if not _more(reader, topic):
                    if not _in_end_entry(entries, end):
                        _lost(settings, f"{topic} ends before {end.ledger}:{end.entry}, the "
                                        "end of the range being read")
                    break
                if (time.monotonic() - idle_since) * 1000 > settings.poll_timeout_ms:
                    _lost(settings, f"no message of {topic} arrived within pollTimeoutMs="
                                    f"{settings.poll_timeout_ms}")
                    break
                continue
            except pulsar.PulsarException as exc:
                raise PulsarSparkError(f"reading {topic}: {exc}") from None
            idle_since = time.monotonic()
            one = _OneMessage(topic, msg)
            if (one.ledger_id, one.entry_id, one.batch_index) <= read_up_to:
                continue  # sent again by the broker: a partition's messages are taken once
            read_up_to = (one.ledger_id, one.entry_id, one.batch_index)
            if past_end(one.ledger_id, one.entry_id, one.batch_index, end):
                break
            entries.append((one, [_row(msg)]))
            if _done_at(one, end):
                break
            if not closing and _in_end_entry(entries, end) and not _more(reader, topic):
                closing = True
            if len(entries) >= settings.rows_per_batch:
                yield to_record_batch(entries, columns, arrow_schema)
                entries = []
        if entries:
            yield to_record_batch(entries, columns, arrow_schema)
        reader.close()
    finally:
        client.close()


def _done_at(one: _OneMessage, end: Position) -> bool:
    """The range is complete with this message (a whole message, or the end batch index)."""
    if (one.ledger_id, one.entry_id) != (end.ledger, end.entry):
        return False
    return one.batch_index < 0 or (end.batch >= 0 and one.batch_index >= end.batch)


def _in_end_entry(entries: list[tuple[Any, list[Sequence[Any]]]], end: Position) -> bool:
    if not entries:
        return False
    last = entries[-1][0]
    return (last.ledger_id, last.entry_id) == (end.ledger, end.entry)


def _more(reader: Any, topic: str) -> bool:
    pulsar = _official()

    try:
        return bool(reader.has_message_available())
    except pulsar.PulsarException as exc:
        raise PulsarSparkError(f"reading {topic}: {exc}") from None


def _lost(settings: ReadSettings, what: str) -> None:
    if settings.fail_on_data_loss:
        raise PulsarSparkError(
            f"data loss: {what} (messages were deleted or the topic was recreated; set "
            "failOnDataLoss=false to read what is left)"
        )
    log.warning("data loss: %s; continuing (failOnDataLoss=false)", what)
