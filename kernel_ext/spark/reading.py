"""Executor-side reading: one partition range ``(start, end]`` → Arrow record batches.

:func:`read_range` opens its own :class:`pulsarlab.Client` (nothing is shared with the
driver, so it runs the same on a cluster) on the ``service.url`` — a pulsarlab broker's
``zmq://`` or any Pulsar cluster's ``pulsar://`` (the client speaks Pulsar's protocol on
both) — reads the partition with a non-durable
:class:`~pulsarlab.Reader` starting after ``start``, stops at ``end`` and yields
``pyarrow.RecordBatch``\\ es built column-wise against the Arrow schema Spark expects. The
reader hands over whole entries (``deliver_entries``), so each column grows by one list
comprehension per entry (a batch's items straight from the entry), never through a message
object per row. Only the columns asked for are built (a user schema that lists fewer
columns is a projection).
"""

from __future__ import annotations

import itertools
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
    client: str = "pulsarlab"
    """``pulsarlab``: :func:`read_range` (zmq:// or pulsar://); ``official``: the official
    client's Reader (:func:`~.cluster_reading.read_range_official`, pulsar:// only)."""


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="replace")


# A row is a batch item: (properties or None, partition_key, ordering_key, event_time,
# sequence_id, null_value, payload); an entry contributes its rows (see EntryBatch.rows).
Builder = Callable[[Any, list[Sequence[Any]]], list[Any]]


def _value(entry: Any, rows: list[Sequence[Any]]) -> list[Any]:
    return [None if r[5] else r[6] for r in rows]


# MessageId.serialize()'s 28 bytes: big-endian ledger, entry, partition, batch index, size.
_ID_FIELDS = [("ledger", ">i8"), ("entry", ">i8"), ("partition", ">i4"), ("index", ">i4"),
              ("size", ">i4")]


def _message_id_array(entries: list[tuple[Any, list[Sequence[Any]]]], arrow_type: Any) -> Any:
    """The ``__messageId`` column as one Arrow buffer (no bytes object per row)."""
    import numpy as np
    import pyarrow as pa

    counts = [len(rows) for _, rows in entries]
    n = sum(counts)
    ids = np.empty(n, dtype=np.dtype(_ID_FIELDS))
    ids["ledger"] = np.repeat([e.ledger_id for e, _ in entries], counts)
    ids["entry"] = np.repeat([e.entry_id for e, _ in entries], counts)
    ids["partition"] = np.repeat([e.partition for e, _ in entries], counts)
    ids["size"] = np.repeat([e.batch_size for e, _ in entries], counts)
    ids["index"] = np.fromiter(itertools.chain.from_iterable(
        e.batch_indexes() for e, _ in entries), dtype=np.int32, count=n)
    width = ids.dtype.itemsize
    offsets = np.arange(0, width * (n + 1), width, dtype=np.int32)
    return pa.Array.from_buffers(arrow_type, n, [None, pa.py_buffer(offsets),
                                                 pa.py_buffer(ids.tobytes())])


def _properties_array(entries: list[tuple[Any, list[Sequence[Any]]]], arrow_type: Any) -> Any:
    """The ``__messageProperties`` column; an empty map per row without a Python list each
    when no message has properties (the common case)."""
    import numpy as np
    import pyarrow as pa

    props = [r[0] for _, rows in entries for r in rows]
    if any(props):
        return pa.array([list(d.items()) if d else [] for d in props], type=arrow_type)
    offsets = pa.array(np.zeros(len(props) + 1, dtype=np.int32))
    empty = pa.array([], pa.string())
    return pa.MapArray.from_arrays(offsets, empty, empty, type=arrow_type)


Rows = list[tuple[Any, list[Sequence[Any]]]]  # (entry, its rows) pairs


def _per_entry(value_of: Callable[[Any], Any]) -> Callable[[Rows, Any], Any]:
    """A column holding one value per entry (its topic, publish time, producer name): one
    Python value per entry, repeated over the entry's rows by Arrow's ``take``."""

    def build(entries: Rows, arrow_type: Any) -> Any:
        import numpy as np
        import pyarrow as pa

        values = pa.array([value_of(e) for e, _ in entries], type=arrow_type)
        counts = [len(rows) for _, rows in entries]
        return values.take(np.repeat(np.arange(len(entries), dtype=np.int32), counts))

    return build


# Columns built as one array from all entries at once (the others: a list per entry).
ARRAY_BUILDERS: dict[tuple[str, str], Callable[[Rows, Any], Any]] = {
    ("__messageId", "binary"): _message_id_array,
    ("__messageProperties", "map<string,string>"): _properties_array,
    ("__topic", "string"): _per_entry(lambda e: e.topic),
    ("__publishTime", "timestamp"): _per_entry(lambda e: e.metadata.publish_time * 1000),
    ("__producerName", "string"): _per_entry(lambda e: e.metadata.producer_name),
}


BUILDERS: dict[tuple[str, str], Builder] = {
    ("value", "binary"): _value,
    ("value", "string"): lambda e, rows: [_text(v) for v in _value(e, rows)],
    ("__key", "binary"): lambda e, rows: [k.encode("utf-8") if (k := r[1]) else None
                                          for r in rows],
    ("__key", "string"): lambda e, rows: [r[1] or None for r in rows],
    ("__eventTime", "timestamp"): lambda e, rows: [t * 1000 if (t := r[3]) > 0 else None
                                                   for r in rows],
    ("__sequenceId", "bigint"): lambda e, rows: [r[4] for r in rows],
}


def to_record_batch(
    entries: list[tuple[Any, list[Sequence[Any]]]],
    columns: Sequence[tuple[str, str]],
    arrow_schema: Any,
) -> Any:
    """One ``RecordBatch`` (schema ``arrow_schema``) from ``(entry, rows)`` pairs."""
    import pyarrow as pa

    arrays = []
    for i, col in enumerate(columns):
        arrow_type = arrow_schema.field(i).type
        whole = ARRAY_BUILDERS.get(col)
        if whole is not None:
            arrays.append(whole(entries, arrow_type))
            continue
        build = BUILDERS[col]
        values: list[Any] = []
        for entry, rows in entries:
            values += build(entry, rows)
        arrays.append(pa.array(values, type=arrow_type))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


def _rows_up_to_end(entry: Any, end: Position) -> tuple[list[Sequence[Any]], bool]:
    """The rows of ``entry`` inside ``(..., end]``, and whether the range is complete."""
    ledger, entry_id = entry.ledger_id, entry.entry_id
    if (ledger, entry_id) < (end.ledger, end.entry):
        return entry.rows(), False
    if (ledger, entry_id) > (end.ledger, end.entry) or entry.items is None:
        return (entry.rows() if not past_end(ledger, entry_id, -1, end) else []), True
    indexes = list(entry.batch_indexes())
    keep = [i for i in indexes if not past_end(ledger, entry_id, i, end)]
    if len(keep) != len(indexes):
        entry.indexes = keep
    if not keep:
        return [], True
    return entry.rows(), reaches_end(ledger, entry_id, keep[-1], entry.batch_size, end)


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
                receiver_queue_size=settings.receiver_queue_size, deliver_entries=True,
            )
        except ConnectError:
            raise PulsarSparkError(
                f"no answer from a broker at {settings.service_url} within "
                f"{settings.connection_timeout_ms / 1000:g} s while reading {topic} (the broker "
                "must be reachable from the Spark executors)"
            ) from None
        except PulsarException as exc:
            raise PulsarSparkError(f"reading {topic}: {exc}") from None
        entries: list[tuple[Any, list[Sequence[Any]]]] = []
        rows_in_chunk = 0
        idle_since = time.monotonic()
        read_up_to = (-1, -1)  # the last (ledger, entry) taken: a partition is in order
        done = False
        while not done:
            try:
                entry = reader.read_entry(_SLICE_MS)
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
            if (entry.ledger_id, entry.entry_id) <= read_up_to:
                continue  # sent again by the broker (pulsar-lite does, on FLOW): taken once
            read_up_to = (entry.ledger_id, entry.entry_id)
            rows, done = _rows_up_to_end(entry, end)
            if rows:
                entries.append((entry, rows))
                rows_in_chunk += len(rows)
            if rows_in_chunk >= settings.rows_per_batch:
                yield to_record_batch(entries, columns, arrow_schema)
                entries = []
                rows_in_chunk = 0
        if entries:
            yield to_record_batch(entries, columns, arrow_schema)
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
