"""Batches: the payload format of a batched entry and the producer's batch containers.

Batch payload format (the payload of an entry whose metadata has ``num_messages_in_batch``;
compression, if any, applies to the whole payload)::

    msgpack list, one item per message, in batch-index order:
        [properties: map str->str | nil, partition_key: str | nil, ordering_key: bin | nil,
         event_time: int (ms, 0 = unset), sequence_id: int, null_value: bool, payload: bin]

    Properties are nil when a message has none (an empty map is read the same way): a
    decoded item then holds no container, and the garbage collector stops tracking it.

Entry-level metadata of a batch (what the broker sees, and what Key_Shared hashes):
``num_messages_in_batch`` = number of messages, ``sequence_id`` = the first message's
(``highest_sequence_id`` the last's), and
the partition key / ordering key of the FIRST message of the batch. So a DEFAULT batch
holding several keys is dispatched by its first key (a documented Key_Shared hazard); a
KEY_BASED container keeps one batch per key (ordering key, else partition key), so each
entry carries its own key. Messages with a delivery time are never batched.

:class:`DefaultBatchBuilder` and :class:`KeyBasedBatchBuilder` follow the Java client's
containers: a message that does not fit (count or bytes) flushes first; a container that is
full after an add flushes; ``flush()`` returns the batches to send, key-based ones ordered by
their first sequence id. The containers are sans-I/O: the producer owns timers and sockets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgpack

from ..entry import MessageMetadata

__all__ = [
    "Batch",
    "BatchBuilder",
    "DefaultBatchBuilder",
    "KeyBasedBatchBuilder",
    "OutgoingMessage",
    "batch_items",
    "decode_batch",
    "encode_batch",
    "encode_items",
    "make_batch_builder",
]


@dataclass(slots=True)
class OutgoingMessage:
    """One message on its way out (the producer-side view); ``handle`` is opaque here."""

    payload: bytes
    properties: dict[str, str] = field(default_factory=dict)
    partition_key: str | None = None
    ordering_key: bytes | None = None
    event_time: int = 0
    sequence_id: int = 0
    null_value: bool = False
    deliver_at_time: int = 0
    handle: Any = None

    @property
    def size(self) -> int:
        return len(self.payload)

    @property
    def batch_key(self) -> bytes | str | None:
        """The key a KEY_BASED container groups by: ordering key, else partition key."""
        return self.ordering_key if self.ordering_key is not None else self.partition_key


@dataclass(slots=True)
class Batch:
    """A batch ready to send: entry-level metadata, uncompressed payload, messages."""

    metadata: MessageMetadata
    payload: bytes
    messages: list[OutgoingMessage]

    @property
    def sequence_id(self) -> int:
        return self.messages[0].sequence_id


def encode_batch(messages: list[OutgoingMessage]) -> bytes:
    """The batch payload for ``messages`` (see the module docstring)."""
    return msgpack.packb(
        [
            [
                m.properties or None,
                m.partition_key,
                m.ordering_key,
                m.event_time,
                m.sequence_id,
                m.null_value,
                m.payload,
            ]
            for m in messages
        ],
        use_bin_type=True,
    )


def encode_items(items: list[Item]) -> bytes:
    """The batch payload of ``items`` as :func:`batch_items` gives them (compaction rebuilds
    a batch from them)."""
    return msgpack.packb(items, use_bin_type=True)


_ITEM_SHAPE = ("each batch item is [properties, partition_key, ordering_key, event_time, "
               "sequence_id, null_value, payload]")


Item = tuple[dict[str, str] | None, str | None, bytes | None, int, int, bool, bytes]


def batch_items(payload: bytes, num_messages: int | None = None) -> list[Item]:
    """The items of a batch payload as checked tuples ``(properties (dict | None), partition_key
    (str | None), ordering_key (bytes | None), event_time (int), sequence_id (int),
    null_value (bool), payload (bytes))``; ``ValueError`` if it is malformed.

    The consumer's hot path: no object per message beyond msgpack's own tuple (which the
    garbage collector stops tracking when it holds no properties map).
    """
    try:
        items = msgpack.unpackb(payload, raw=False, use_list=False)
    except Exception as exc:  # msgpack raises several unrelated types on garbage
        raise ValueError(f"batch payload is not valid msgpack ({type(exc).__name__})") from None
    if type(items) is not tuple:
        raise ValueError("batch payload must be a list")
    if num_messages is not None and len(items) != num_messages:
        raise ValueError(f"batch holds {len(items)} messages, metadata says {num_messages}")
    out = list(items)
    for i, item in enumerate(out):
        if type(item) is not tuple or len(item) != 7:
            raise ValueError(_ITEM_SHAPE)
        props, pkey, okey, event_time, seq, null, data = item
        if ((props is not None and type(props) is not dict) or type(data) is not bytes
                or type(seq) is not int or type(event_time) is not int or type(null) is not bool
                or (pkey is not None and type(pkey) is not str)
                or (okey is not None and type(okey) is not bytes)):
            out[i] = _normalised(item)
    return out


def _normalised(item: tuple[Any, ...]) -> Item:
    """One item with its fields coerced to their types (``ValueError`` if impossible)."""
    props, pkey, okey, event_time, seq, null, data = item
    try:
        return (
            {str(k): str(v) for k, v in dict(props or {}).items()} or None,
            None if pkey is None else str(pkey),
            None if okey is None else bytes(okey),
            int(event_time or 0),
            int(seq),
            bool(null),
            bytes(data),
        )
    except (TypeError, ValueError):
        raise ValueError(_ITEM_SHAPE) from None


def decode_batch(payload: bytes, num_messages: int | None = None) -> list[OutgoingMessage]:
    """The messages of a batch payload; ``ValueError`` if it is malformed."""
    return [
        OutgoingMessage(payload=data, properties=props or {}, partition_key=pkey,
                        ordering_key=okey,
                        event_time=event_time, sequence_id=seq, null_value=null)
        for props, pkey, okey, event_time, seq, null, data in batch_items(payload, num_messages)
    ]


def _make_batch(messages: list[OutgoingMessage]) -> Batch:
    first = messages[0]
    metadata = MessageMetadata(
        sequence_id=first.sequence_id,
        highest_sequence_id=messages[-1].sequence_id,
        num_messages_in_batch=len(messages),
        partition_key=first.partition_key,
        ordering_key=first.ordering_key,
    )
    return Batch(metadata, encode_batch(messages), messages)


class BatchBuilder:
    """Common limits and counters of a batch container."""

    def __init__(self, max_messages: int = 1000, max_bytes: int = 128 * 1024) -> None:
        if max_messages < 1:
            raise ValueError("batching_max_messages must be >= 1")
        if max_bytes < 1:
            raise ValueError("batching_max_allowed_size_in_bytes must be >= 1")
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self.num_messages = 0
        self.size_bytes = 0

    @property
    def is_empty(self) -> bool:
        return self.num_messages == 0

    @property
    def is_full(self) -> bool:
        return self.num_messages >= self.max_messages or self.size_bytes >= self.max_bytes

    def has_space_for(self, message: OutgoingMessage) -> bool:
        """Whether ``message`` fits without flushing first (an empty container takes anything)."""
        n = self.num_messages
        return n == 0 or (
            n < self.max_messages and self.size_bytes + len(message.payload) <= self.max_bytes
        )

    def add(self, message: OutgoingMessage) -> bool:
        """Add ``message``; returns whether the container is now full (flush it)."""
        self._add(message)
        self.num_messages += 1
        self.size_bytes += len(message.payload)
        return self.num_messages >= self.max_messages or self.size_bytes >= self.max_bytes

    def offer(self, message: OutgoingMessage) -> list[Batch] | None:
        """:meth:`has_space_for`, :meth:`add` and :meth:`flush` in one call (the producer's
        hot path): the batches complete once ``message`` is in, or None."""
        size = len(message.payload)
        n = self.num_messages
        ready = None
        if n and (n >= self.max_messages or self.size_bytes + size > self.max_bytes):
            ready = self.flush()
        self._add(message)
        n = self.num_messages = self.num_messages + 1
        self.size_bytes += size
        if n >= self.max_messages or self.size_bytes >= self.max_bytes:
            full = self.flush()
            ready = full if ready is None else ready + full
        return ready

    def flush(self) -> list[Batch]:
        """The batches to send (possibly none); the container is left empty."""
        batches = self._take()
        self.num_messages = 0
        self.size_bytes = 0
        return batches

    def _add(self, message: OutgoingMessage) -> None:
        raise NotImplementedError

    def _take(self) -> list[Batch]:
        raise NotImplementedError


class DefaultBatchBuilder(BatchBuilder):
    """All messages, in order, in one batch (``BatchingType.Default``)."""

    def __init__(self, max_messages: int = 1000, max_bytes: int = 128 * 1024) -> None:
        super().__init__(max_messages, max_bytes)
        self._messages: list[OutgoingMessage] = []

    def _add(self, message: OutgoingMessage) -> None:
        self._messages.append(message)

    def _take(self) -> list[Batch]:
        messages, self._messages = self._messages, []
        return [_make_batch(messages)] if messages else []


class KeyBasedBatchBuilder(BatchBuilder):
    """One batch per key (``BatchingType.KeyBased``); limits count across all keys."""

    def __init__(self, max_messages: int = 1000, max_bytes: int = 128 * 1024) -> None:
        super().__init__(max_messages, max_bytes)
        self._by_key: dict[Any, list[OutgoingMessage]] = {}

    def _add(self, message: OutgoingMessage) -> None:
        self._by_key.setdefault(message.batch_key, []).append(message)

    def _take(self) -> list[Batch]:
        groups, self._by_key = self._by_key, {}
        batches = [_make_batch(msgs) for msgs in groups.values() if msgs]
        batches.sort(key=lambda b: b.sequence_id)
        return batches


def make_batch_builder(key_based: bool, max_messages: int, max_bytes: int) -> BatchBuilder:
    """The container for a producer's ``batching_type``."""
    cls = KeyBasedBatchBuilder if key_based else DefaultBatchBuilder
    return cls(max_messages, max_bytes)
