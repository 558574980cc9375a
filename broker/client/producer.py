"""``Producer``: ``send`` (blocking) and ``send_async``, routed over a topic's partitions.

A :class:`Producer` is a façade over one :class:`~.partition_producer.PartitionProducer`
per partition (one for a non-partitioned topic): it checks and encodes each message the way
the official client does (falsy keys and ids are ignored; ``content=None`` is a null value),
picks the partition with the router (:mod:`.routing`) and hands the message over. ``send``
waits for the receipt and returns the :class:`MessageId`; ``send_async`` callbacks
``(Result, MessageId)`` run on the client's listener thread.
"""

from __future__ import annotations

import concurrent.futures
import datetime
import logging
from typing import Any

from ..message_id import MessageId
from .batch import OutgoingMessage
from .checks import check_type, check_type_or_none
from .connection import now_ms
from .exceptions import AlreadyClosed, PulsarException, result_of
from .message import Message
from .partition_producer import PartitionProducer, SendCallback

__all__ = ["Producer"]

log = logging.getLogger("pulsarlab.client")


class Producer:
    """Publishes to a topic; a partitioned topic gets one internal producer per partition."""

    def __init__(self, client: Any, topic: str, partitions: list[PartitionProducer],
                 router: Any, schema: Any, partitioned: bool) -> None:
        self._client = client
        self._topic = topic
        self._partitions = partitions
        self._router = router
        self._schema = schema
        self._partitioned = partitioned
        self._closed = False
        # The partition producer plain bytes go to straight (no router, no schema), or None.
        self._only = partitions[0] if not partitioned and schema is None else None

    def topic(self) -> str:
        return self._topic

    def producer_name(self) -> str:
        return self._partitions[0].name

    def last_sequence_id(self) -> int:
        return max(p.last_published for p in self._partitions)

    def send(
        self,
        content: Any,
        properties: dict[str, str] | None = None,
        partition_key: str | None = None,
        ordering_key: str | None = None,
        sequence_id: int | None = None,
        replication_clusters: list[str] | None = None,
        disable_replication: bool = False,
        event_timestamp: int | None = None,
        deliver_at: int | None = None,
        deliver_after: datetime.timedelta | None = None,
    ) -> MessageId:
        """Publish one message and wait for its receipt; returns its message id."""
        message, seq = self._build(content, properties, partition_key, ordering_key, sequence_id,
                                   replication_clusters, disable_replication, event_timestamp,
                                   deliver_at, deliver_after)
        future: concurrent.futures.Future = concurrent.futures.Future()
        target = self._route(message)
        target.submit(message, future, seq)
        return future.result()

    def send_async(
        self,
        content: Any,
        callback: SendCallback | None,
        properties: dict[str, str] | None = None,
        partition_key: str | None = None,
        ordering_key: str | None = None,
        sequence_id: int | None = None,
        replication_clusters: list[str] | None = None,
        disable_replication: bool = False,
        event_timestamp: int | None = None,
        deliver_at: int | None = None,
        deliver_after: datetime.timedelta | None = None,
    ) -> None:
        """Publish without waiting; ``callback(result, message_id)`` runs when it is settled."""
        only = self._only
        if (only is not None and type(content) is bytes and properties is None
                and partition_key is None and ordering_key is None and sequence_id is None
                and replication_clusters is None and disable_replication is False
                and event_timestamp is None and deliver_at is None and deliver_after is None):
            # The common call, send_async(data, callback) to one partition without a schema.
            try:
                only.submit(OutgoingMessage(content, {}, None, None, 0, 0, False), callback,
                            None)
            except PulsarException as exc:
                self._refused(exc, callback)
            return
        message, seq = self._build(content, properties, partition_key, ordering_key, sequence_id,
                                   replication_clusters, disable_replication, event_timestamp,
                                   deliver_at, deliver_after)
        target = self._route(message)
        try:
            target.submit(message, callback, seq)
        except PulsarException as exc:
            self._refused(exc, callback)

    def _refused(self, exc: PulsarException, callback: SendCallback | None) -> None:
        """A ``send_async`` the producer refused: the callback hears why, or the log does."""
        if callback is not None:
            self._client._executor.submit(callback, result_of(exc), None)
        else:  # nobody would hear of it: never drop a message silently
            log.warning("send_async to %s without a callback was not sent: %s: %s",
                        self._topic, type(exc).__name__, exc)

    def flush(self) -> None:
        """Send every batched message now and wait for all pending receipts."""
        for p in self._partitions:
            p.flush()

    def close(self) -> None:
        """Flush, then close the producer (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._only = None
        for p in self._partitions:
            p.close()
        self._client._forget(self)

    def is_connected(self) -> bool:
        return not self._closed and all(p.is_connected for p in self._partitions)

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers --------------------------------------------------------------------------

    def _route(self, message: OutgoingMessage) -> PartitionProducer:
        if not self._partitioned:
            return self._partitions[0]
        view = Message(
            message.payload,
            properties=message.properties,
            partition_key=message.partition_key,
            ordering_key=message.ordering_key,
            event_time=message.event_time,
            topic=self._topic,
            schema=self._schema,
        )
        index = self._router.choose_partition(view, len(self._partitions))
        return self._partitions[index]

    def _build(self, content: Any, properties: dict[str, str] | None, partition_key: str | None,
               ordering_key: str | None, sequence_id: int | None,
               replication_clusters: list[str] | None, disable_replication: bool,
               event_timestamp: int | None, deliver_at: int | None,
               deliver_after: datetime.timedelta | None) -> tuple[OutgoingMessage, int | None]:
        if self._closed:
            raise AlreadyClosed(f"producer on {self._topic} is closed")
        null_value = content is None
        data = b"" if null_value else self._encode(content)
        if (properties is None and partition_key is None and ordering_key is None
                and sequence_id is None and replication_clusters is None
                and disable_replication is False and event_timestamp is None
                and deliver_at is None and deliver_after is None):
            # The common call, send(data) / send_async(data, callback): nothing to check.
            return OutgoingMessage(data, {}, None, None, 0, 0, null_value), None
        check_type_or_none(dict, properties, "properties")
        check_type_or_none(str, partition_key, "partition_key")
        check_type_or_none(str, ordering_key, "ordering_key")
        check_type_or_none(int, sequence_id, "sequence_id")
        check_type_or_none(list, replication_clusters, "replication_clusters")
        check_type(bool, disable_replication, "disable_replication")
        check_type_or_none(int, event_timestamp, "event_timestamp")
        check_type_or_none(int, deliver_at, "deliver_at")
        check_type_or_none(datetime.timedelta, deliver_after, "deliver_after")
        props: dict[str, str] = {}
        for k, v in (properties or {}).items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ValueError(f"message properties must map str to str, not {k!r}: {v!r}")
            props[k] = v
        deliver_at_time = 0
        if deliver_at:
            deliver_at_time = deliver_at
        elif deliver_after:
            deliver_at_time = now_ms() + int(deliver_after.total_seconds() * 1000)
        message = OutgoingMessage(
            payload=data,
            properties=props,
            partition_key=partition_key or None,
            ordering_key=ordering_key.encode("utf-8") if ordering_key else None,
            event_time=event_timestamp or 0,
            null_value=null_value,
            deliver_at_time=deliver_at_time,
        )
        return message, (sequence_id or None)

    def _encode(self, content: Any) -> bytes:
        data = self._schema.encode(content) if self._schema is not None else content
        if type(data) is bytes:
            return data
        if isinstance(data, bytearray | memoryview):
            data = bytes(data)
        check_type(bytes, data, "data")
        return data
