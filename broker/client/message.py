"""``Message`` (what consumers receive and custom routers see) and topic-aware message ids.

Accessors have the official names and return shapes: ``partition_key()`` and
``ordering_key()`` are ``""`` when unset, ``event_timestamp()`` is 0 when unset,
``properties()`` a dict. ``message_id()`` is a :class:`~pulsarlab.broker.MessageId`
(partition, batch index and batch size filled in) that also remembers its topic, so a
multi-topic consumer can route an ack given only the id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..message_id import MessageId

__all__ = ["Delivery", "Message", "TopicMessageId", "delivered", "message_id", "topic_message_id"]

_new = object.__new__


class TopicMessageId(MessageId):
    """A :class:`MessageId` that also knows which topic (partition) it came from."""

    __slots__ = ("_topic",)

    def __init__(self, partition: int = -1, ledger_id: int = -1, entry_id: int = -1,
                 batch_index: int = -1, batch_size: int = 0, topic: str | None = None) -> None:
        super().__init__(partition, ledger_id, entry_id, batch_index, batch_size)
        self._topic = topic

    def topic_name(self) -> str | None:
        """The topic (or partition) the message was read from."""
        return self._topic


def message_id(partition: int, ledger_id: int, entry_id: int, batch_index: int,
               batch_size: int) -> MessageId:
    """A :class:`MessageId` from ints the client decoded itself (the hot paths: receipts
    and deliveries), without the argument checks the public constructor makes."""
    mid = _new(MessageId)
    mid._partition = partition
    mid._ledger_id = ledger_id
    mid._entry_id = entry_id
    mid._batch_index = batch_index
    mid._batch_size = batch_size
    return mid


def topic_message_id(partition: int, ledger_id: int, entry_id: int, batch_index: int,
                     batch_size: int, topic: str) -> TopicMessageId:
    """:func:`message_id` for a :class:`TopicMessageId`."""
    mid = _new(TopicMessageId)
    mid._partition = partition
    mid._ledger_id = ledger_id
    mid._entry_id = entry_id
    mid._batch_index = batch_index
    mid._batch_size = batch_size
    mid._topic = topic
    return mid


class Delivery:
    """What the messages of one delivered entry share: its position, its entry-level
    metadata and where it came from. One per entry, not one per message."""

    __slots__ = ("batch_size", "entry_id", "ledger_id", "partition", "position",
                 "producer_name", "publish_time", "redelivery_count", "schema",
                 "schema_version", "topic")

    def __init__(self, topic: str, partition: int, ledger_id: int, entry_id: int,
                 batch_size: int, publish_time: int, producer_name: str,
                 schema_version: bytes | None, redelivery_count: int, schema: Any) -> None:
        self.topic = topic
        self.partition = partition
        self.ledger_id = ledger_id
        self.entry_id = entry_id
        self.position = (ledger_id, entry_id)
        self.batch_size = batch_size  # 0 for an entry holding one unbatched message
        self.publish_time = publish_time
        self.producer_name = producer_name
        self.schema_version = schema_version
        self.redelivery_count = redelivery_count
        self.schema = schema


_NO_DELIVERY = Delivery("", -1, -1, -1, 0, 0, "", None, 0, None)


class Message:
    """A message as the application sees it.

    A received message is three references: its batch item (``(properties or None,
    partition_key, ordering_key, event_time, sequence_id, null_value, payload)``, as
    :func:`~.batch.batch_items` decoded it), its entry's :class:`Delivery` and its batch
    index. Fields are read from them when asked for, and the message id is made on the
    first call of :meth:`message_id` (an ack of the message itself needs none).
    """

    __slots__ = ("_delivery", "_fields", "_index", "_message_id", "_owner")

    def __init__(
        self,
        data: bytes,
        *,
        properties: dict[str, str] | None = None,
        partition_key: str | None = None,
        ordering_key: bytes | None = None,
        publish_time: int = 0,
        event_time: int = 0,
        producer_name: str = "",
        sequence_id: int = -1,
        schema_version: bytes | None = None,
        null_value: bool = False,
        message_id: MessageId | None = None,
        topic: str = "",
        redelivery_count: int = 0,
        schema: Any = None,
        owner: Any = None,
    ) -> None:
        self._fields = (properties or None, partition_key, ordering_key, event_time,
                        sequence_id, null_value, data)
        if message_id is None:
            self._delivery = Delivery(topic, -1, -1, -1, 0, publish_time, producer_name,
                                      schema_version, redelivery_count, schema)
            self._index = -1
        else:
            self._delivery = Delivery(topic, message_id._partition, message_id._ledger_id,
                                      message_id._entry_id, message_id._batch_size,
                                      publish_time, producer_name, schema_version,
                                      redelivery_count, schema)
            self._index = message_id._batch_index
        self._message_id = message_id
        self._owner = owner

    def data(self) -> bytes:
        """The raw payload bytes."""
        return self._fields[6]

    def value(self) -> Any:
        """The payload decoded by the consumer's schema (the bytes when there is none)."""
        fields = self._fields
        if fields[5]:
            return None
        schema = self._delivery.schema
        return fields[6] if schema is None else schema.decode(fields[6])

    def properties(self) -> dict[str, str]:
        return dict(self._fields[0] or ())

    def partition_key(self) -> str:
        return self._fields[1] or ""

    def ordering_key(self) -> str:
        key = self._fields[2]
        return "" if key is None else key.decode("utf-8", errors="surrogateescape")

    def publish_timestamp(self) -> int:
        return self._delivery.publish_time

    def event_timestamp(self) -> int:
        return self._fields[3]

    def message_id(self) -> MessageId:
        mid = self._message_id
        if mid is None:
            d = self._delivery
            if d.ledger_id < 0:  # a message built by hand, never delivered
                return MessageId()
            mid = self._message_id = topic_message_id(d.partition, d.ledger_id, d.entry_id,
                                                      self._index, d.batch_size, d.topic)
        return mid

    def topic_name(self) -> str:
        return self._delivery.topic

    def redelivery_count(self) -> int:
        return self._delivery.redelivery_count

    def schema_version(self) -> str:
        version = self._delivery.schema_version
        return version.decode("utf-8", errors="surrogateescape") if version else ""

    def producer_name(self) -> str:
        return self._delivery.producer_name

    def has_null_value(self) -> bool:
        return self._fields[5]

    def sequence_id(self) -> int:
        """Extension: the producer's sequence id of this message."""
        return self._fields[4]

    @property
    def _ack_parts(self) -> tuple[tuple[int, int], int, int]:
        """``(position, batch_index, batch_size)``: what the ack tracker needs."""
        d = self._delivery
        return d.position, self._index, d.batch_size

    def __repr__(self) -> str:
        return (
            f"Message(topic={self._delivery.topic!r}, id={self.message_id()}, "
            f"key={self._fields[1]!r}, {len(self._fields[6])} bytes)"
        )


def delivered(fields: Sequence[Any], delivery: Delivery, index: int, owner: Any) -> Message:
    """A received :class:`Message` (the consumer's hot path: four references, no copy)."""
    m = _new(Message)
    m._fields = fields
    m._delivery = delivery
    m._index = index
    m._message_id = None
    m._owner = owner
    return m
