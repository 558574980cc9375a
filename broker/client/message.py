"""``Message`` (what consumers receive and custom routers see) and topic-aware message ids.

Accessors have the official names and return shapes: ``partition_key()`` and
``ordering_key()`` are ``""`` when unset, ``event_timestamp()`` is 0 when unset,
``properties()`` a dict. ``message_id()`` is a :class:`~pulsarlab.broker.MessageId`
(partition, batch index and batch size filled in) that also remembers its topic, so a
multi-topic consumer can route an ack given only the id.
"""

from __future__ import annotations

from typing import Any

from ..message_id import MessageId

__all__ = ["Message", "TopicMessageId", "message_id", "new_message", "topic_message_id"]

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


class Message:
    """A message as the application sees it."""

    __slots__ = (
        "_data",
        "_event_time",
        "_message_id",
        "_null_value",
        "_ordering_key",
        "_owner",
        "_partition_key",
        "_producer_name",
        "_properties",
        "_publish_time",
        "_redelivery_count",
        "_schema",
        "_schema_version",
        "_sequence_id",
        "_topic",
    )

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
        self._data = data
        self._properties = properties or {}
        self._partition_key = partition_key
        self._ordering_key = ordering_key
        self._publish_time = publish_time
        self._event_time = event_time
        self._producer_name = producer_name
        self._sequence_id = sequence_id
        self._schema_version = schema_version
        self._null_value = null_value
        self._message_id = message_id
        self._topic = topic
        self._redelivery_count = redelivery_count
        self._schema = schema
        self._owner = owner

    def data(self) -> bytes:
        """The raw payload bytes."""
        return self._data

    def value(self) -> Any:
        """The payload decoded by the consumer's schema (the bytes when there is none)."""
        if self._schema is None or self._null_value:
            return None if self._null_value else self._data
        return self._schema.decode(self._data)

    def properties(self) -> dict[str, str]:
        return dict(self._properties)

    def partition_key(self) -> str:
        return self._partition_key or ""

    def ordering_key(self) -> str:
        if self._ordering_key is None:
            return ""
        return self._ordering_key.decode("utf-8", errors="surrogateescape")

    def publish_timestamp(self) -> int:
        return self._publish_time

    def event_timestamp(self) -> int:
        return self._event_time

    def message_id(self) -> MessageId:
        return self._message_id if self._message_id is not None else MessageId()

    def topic_name(self) -> str:
        return self._topic

    def redelivery_count(self) -> int:
        return self._redelivery_count

    def schema_version(self) -> str:
        if not self._schema_version:
            return ""
        return self._schema_version.decode("utf-8", errors="surrogateescape")

    def producer_name(self) -> str:
        return self._producer_name

    def has_null_value(self) -> bool:
        return self._null_value

    def sequence_id(self) -> int:
        """Extension: the producer's sequence id of this message."""
        return self._sequence_id

    def __repr__(self) -> str:
        return (
            f"Message(topic={self._topic!r}, id={self._message_id}, "
            f"key={self._partition_key!r}, {len(self._data)} bytes)"
        )


def new_message(data: bytes, properties: dict[str, str], partition_key: str | None,
                ordering_key: bytes | None, publish_time: int, event_time: int,
                producer_name: str, sequence_id: int, schema_version: bytes | None,
                null_value: bool, message_id: MessageId, topic: str, redelivery_count: int,
                schema: Any, owner: Any) -> Message:
    """A :class:`Message` from fields the consumer decoded and checked itself (its hot
    path: every argument positional, no defaults to fill in)."""
    m = _new(Message)
    m._data = data
    m._properties = properties
    m._partition_key = partition_key
    m._ordering_key = ordering_key
    m._publish_time = publish_time
    m._event_time = event_time
    m._producer_name = producer_name
    m._sequence_id = sequence_id
    m._schema_version = schema_version
    m._null_value = null_value
    m._message_id = message_id
    m._topic = topic
    m._redelivery_count = redelivery_count
    m._schema = schema
    m._owner = owner
    return m
