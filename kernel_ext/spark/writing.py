"""Executor-side writing: rows of a DataFrame → messages on a topic.

Columns used (others are ignored): ``value`` (binary or string; required), ``__key``
(binary or string → the partition key), ``__messageProperties`` (map<string,string>),
``__eventTime`` (timestamp → event time) and ``__topic`` (string; the target topic of the
row when the ``topic`` option is not given). Every Spark task opens its own
:class:`pulsarlab.Client` (to a pulsarlab broker's ``zmq://`` or any Pulsar cluster's
``pulsar://``) and producers, sends asynchronously (batched) and waits for every receipt
before it reports success, so a task that succeeds has had all its messages acknowledged by
the broker.
A retried task sends its rows again: the sink is at-least-once, like Pulsar's own.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from .options import PulsarSparkError, SinkOptions

__all__ = ["SINK_COLUMNS", "check_sink_schema", "write_rows"]

SINK_COLUMNS: dict[str, tuple[str, ...]] = {
    "value": ("binary", "string"),
    "__key": ("binary", "string"),
    "__messageProperties": ("map<string,string>",),
    "__eventTime": ("timestamp",),
    "__topic": ("string",),
}

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def check_sink_schema(fields: dict[str, str], opts: SinkOptions) -> None:
    """``fields`` maps column names to simple type strings; raise on what cannot be written."""
    if "value" not in fields:
        raise PulsarSparkError(
            "the DataFrame written to pulsar needs a 'value' column (binary or string); it has "
            f"{', '.join(fields) or 'no columns'}"
        )
    for name, allowed in SINK_COLUMNS.items():
        if name in fields and fields[name] not in allowed:
            raise PulsarSparkError(
                f"column {name!r} must be {' or '.join(allowed)} to be written to pulsar, "
                f"not {fields[name]}"
            )
    if opts.topic is None and "__topic" not in fields:
        raise PulsarSparkError(
            "no target topic: give option 'topic' (or save('<topic>')) or a '__topic' column"
        )


def _rows(batches: Iterable[Any]) -> Iterator[dict[str, Any]]:
    for batch in batches:
        if hasattr(batch, "to_pylist"):  # pyarrow.RecordBatch
            yield from batch.to_pylist()
        else:  # pyspark Row
            yield batch.asDict()


def _as_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def _as_key(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="surrogateescape")
    return str(value)


def _event_ms(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return int((value - _EPOCH).total_seconds() * 1000)
    return int(value)


def write_rows(opts: SinkOptions, batches: Iterable[Any]) -> int:
    """Send every row of ``batches`` (Arrow record batches or Rows); returns the count."""
    from ..broker.client import Client
    from ..broker.client.enums import Result
    from ..broker.client.exceptions import ConnectError, PulsarException

    errors: list[str] = []
    lock = threading.Lock()

    def settled(result: Any, _msg_id: Any) -> None:
        if result != Result.Ok:
            with lock:
                errors.append(str(result))

    client = Client(
        opts.service_url,
        connection_timeout_ms=opts.connection_timeout_ms,
        operation_timeout_seconds=max(1, opts.connection_timeout_ms // 1000),
        **opts.security.client_kwargs(),
    )
    producers: dict[str, Any] = {}
    sent = 0
    try:
        for row in _rows(batches):
            topic = opts.topic or row.get("__topic")
            if not topic:
                raise PulsarSparkError("a row has no '__topic' and option 'topic' is not set")
            producer = producers.get(topic)
            if producer is None:
                try:
                    producer = client.create_producer(
                        topic,
                        batching_enabled=opts.batching_enabled,
                        batching_max_messages=1000,
                        batching_max_allowed_size_in_bytes=1024 * 1024,
                        block_if_queue_full=True,
                        max_pending_messages=10_000,
                    )
                except ConnectError:
                    raise PulsarSparkError(
                        f"no answer from a broker at {opts.service_url} within "
                        f"{opts.connection_timeout_ms / 1000:g} s while writing to {topic}"
                    ) from None
                except PulsarException as exc:
                    raise PulsarSparkError(f"writing to {topic}: {exc}") from None
                producers[topic] = producer
            props = row.get("__messageProperties")
            if isinstance(props, list):  # Arrow gives a map as a list of (key, value) pairs
                props = dict(props)
            producer.send_async(
                _as_bytes(row.get("value")),
                settled,
                properties={str(k): str(v) for k, v in props.items()} if props else None,
                partition_key=_as_key(row.get("__key")),
                event_timestamp=_event_ms(row.get("__eventTime")),
            )
            sent += 1
        for producer in producers.values():
            producer.flush()
        if errors:
            raise PulsarSparkError(
                f"the broker refused {len(errors)} of {sent} messages (first: {errors[0]})"
            )
        for producer in producers.values():
            producer.close()
    finally:
        client.close()
    return sent
