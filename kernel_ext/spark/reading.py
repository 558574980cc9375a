"""Executor-side reading: one partition range ``(start, end]`` → Arrow record batches.

:func:`read_range` opens its own :class:`pulsarlab.Client` (nothing is shared with the
driver, so it runs the same on a cluster), reads the partition with a non-durable
:class:`~pulsarlab.Reader` starting after ``start``, stops at ``end`` and yields
``pyarrow.RecordBatch``\\ es built column-wise against the Arrow schema Spark expects. Only
the columns asked for are built (a user schema that lists fewer columns is a projection).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .options import ClientSecurity, PulsarSparkError
from .positions import Position, past_end, reaches_end

__all__ = ["COLUMN_TYPES", "ReadSettings", "read_range"]

log = logging.getLogger("pulsarlab.spark")

# Column name → the Spark SQL types it may be declared as (the first is the default).
COLUMN_TYPES: dict[str, tuple[str, ...]] = {
    "value": ("binary", "string"),
    "__key": ("binary", "string"),
    "__topic": ("string",),
    "__messageId": ("binary",),
    "__publishTime": ("timestamp",),
    "__eventTime": ("timestamp",),
    "__messageProperties": ("map<string,string>",),
    "__producerName": ("string",),
    "__sequenceId": ("bigint",),
}

_SLICE_MS = 1000


@dataclass(frozen=True)
class ReadSettings:
    """Everything a read needs besides the range; plain data, pickled into partitions."""

    service_url: str
    poll_timeout_ms: int
    connection_timeout_ms: int
    receiver_queue_size: int
    rows_per_batch: int
    fail_on_data_loss: bool
    security: ClientSecurity = field(default_factory=lambda: ClientSecurity())


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="replace")


def _builders(topic: str) -> dict[tuple[str, str], Callable[[list[Any]], list[Any]]]:
    def value(msgs: list[Any]) -> list[Any]:
        return [None if m.has_null_value() else m.data() for m in msgs]

    def key(msgs: list[Any]) -> list[Any]:
        return [k.encode("utf-8") if (k := m.partition_key()) else None for m in msgs]

    return {
        ("value", "binary"): value,
        ("value", "string"): lambda msgs: [_text(v) for v in value(msgs)],
        ("__key", "binary"): key,
        ("__key", "string"): lambda msgs: [m.partition_key() or None for m in msgs],
        ("__topic", "string"): lambda msgs: [topic] * len(msgs),
        ("__messageId", "binary"): lambda msgs: [m.message_id().serialize() for m in msgs],
        ("__publishTime", "timestamp"): lambda msgs: [
            m.publish_timestamp() * 1000 for m in msgs
        ],
        ("__eventTime", "timestamp"): lambda msgs: [
            t * 1000 if (t := m.event_timestamp()) > 0 else None for m in msgs
        ],
        ("__messageProperties", "map<string,string>"): lambda msgs: [
            list(m.properties().items()) for m in msgs
        ],
        ("__producerName", "string"): lambda msgs: [m.producer_name() for m in msgs],
        ("__sequenceId", "bigint"): lambda msgs: [m.sequence_id() for m in msgs],
    }


def to_record_batch(
    messages: list[Any], topic: str, columns: Sequence[tuple[str, str]], arrow_schema: Any
) -> Any:
    """Build one ``RecordBatch`` (schema ``arrow_schema``) from client messages."""
    import pyarrow as pa

    builders = _builders(topic)
    arrays = [
        pa.array(builders[col](messages), type=arrow_schema.field(i).type)
        for i, col in enumerate(columns)
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


def read_range(
    topic: str,
    start: Position,
    end: Position,
    settings: ReadSettings,
    columns: Sequence[tuple[str, str]],
    arrow_schema: Any,
) -> Iterator[Any]:
    """Yield the messages of ``topic`` in ``(start, end]`` as Arrow record batches."""
    from ..broker.client import Client
    from ..broker.client.exceptions import ConnectError, PulsarException, Timeout
    from ..broker.message_id import MessageId

    if end.key <= start.key:
        return
    client = Client(
        settings.service_url,
        connection_timeout_ms=settings.connection_timeout_ms,
        operation_timeout_seconds=max(1, settings.connection_timeout_ms // 1000),
        **settings.security.client_kwargs(),
    )
    try:
        start_id = (
            MessageId.earliest
            if start.is_earliest
            else MessageId(start.partition, start.ledger, start.entry, start.batch)
        )
        try:
            reader = client.create_reader(
                topic, start_id, start_message_id_inclusive=False,
                receiver_queue_size=settings.receiver_queue_size,
            )
        except ConnectError:
            raise PulsarSparkError(
                f"no answer from a pulsarlab broker at {settings.service_url} within "
                f"{settings.connection_timeout_ms / 1000:g} s while reading {topic} (the broker "
                "must be reachable from the Spark executors)"
            ) from None
        except PulsarException as exc:
            raise PulsarSparkError(f"reading {topic}: {exc}") from None
        # Reader.read_next() acknowledges every message, which costs a wake-up of the client's
        # I/O thread per message and halves the read rate. A non-durable reader's acks only
        # move its own throw-away cursor, so messages are taken without acknowledging them.
        take = getattr(getattr(reader, "_consumer", None), "_take", None) or reader.read_next
        end_position = (end.ledger, end.entry)
        chunk: list[Any] = []
        idle_since = time.monotonic()
        done = False
        while not done:
            try:
                message = take(_SLICE_MS)
            except Timeout:
                lost = None
                if not _has_more(reader, topic):
                    lost = f"{topic} ends before {_fmt(end)}, the end of the range being read"
                elif (time.monotonic() - idle_since) * 1000 > settings.poll_timeout_ms:
                    lost = (
                        f"no message of {topic} arrived within pollTimeoutMs="
                        f"{settings.poll_timeout_ms} before {_fmt(end)}"
                    )
                if lost is None:
                    continue
                if settings.fail_on_data_loss:
                    raise PulsarSparkError(
                        f"data loss: {lost} (messages were deleted or the topic was recreated;"
                        " set failOnDataLoss=false to read what is left)"
                    ) from None
                log.warning("data loss: %s; continuing (failOnDataLoss=false)", lost)
                break
            except PulsarException as exc:  # the broker closed the reader or went away
                raise PulsarSparkError(f"reading {topic}: {exc}") from None
            idle_since = time.monotonic()
            mid = message.message_id()
            if mid.position >= end_position:
                ledger, entry, index = mid.ledger_id(), mid.entry_id(), mid.batch_index()
                if past_end(ledger, entry, index, end):
                    break
                done = reaches_end(ledger, entry, index, mid.batch_size(), end)
            chunk.append(message)
            if len(chunk) >= settings.rows_per_batch:
                yield to_record_batch(chunk, topic, columns, arrow_schema)
                chunk = []
        if chunk:
            yield to_record_batch(chunk, topic, columns, arrow_schema)
        reader.close()
    finally:
        client.close()


def _has_more(reader: Any, topic: str) -> bool:
    from ..broker.client.exceptions import PulsarException

    try:
        return bool(reader.has_message_available())
    except PulsarException as exc:
        raise PulsarSparkError(f"reading {topic}: {exc}") from None


def _fmt(position: Position) -> str:
    return f"{position.ledger}:{position.entry}" + (
        f" (batch index {position.batch})" if position.batch >= 0 else ""
    )
