"""The producer's batch containers (the payload layouts live in :mod:`..format.batch`).

A container lays its batch out in Pulsar's layout
(:func:`~pulsarlab.broker.format.batch.encode_pulsar_batch`, the connection's
``encode_batch``): one ``SingleMessageMetadata`` and payload per message.

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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..entry import MessageMetadata
from ..format.batch import OutgoingMessage, encode_pulsar_batch

__all__ = [
    "Batch",
    "BatchBuilder",
    "DefaultBatchBuilder",
    "KeyBasedBatchBuilder",
    "OutgoingMessage",
    "make_batch_builder",
]


@dataclass(slots=True)
class Batch:
    """A batch ready to send: entry-level metadata, uncompressed payload, messages."""

    metadata: MessageMetadata
    payload: bytes
    messages: list[OutgoingMessage]

    @property
    def sequence_id(self) -> int:
        return self.messages[0].sequence_id


Encoder = Callable[[list[OutgoingMessage]], bytes]


def _make_batch(messages: list[OutgoingMessage], encode: Encoder) -> Batch:
    first = messages[0]
    metadata = MessageMetadata(
        sequence_id=first.sequence_id,
        highest_sequence_id=messages[-1].sequence_id,
        num_messages_in_batch=len(messages),
        partition_key=first.partition_key,
        ordering_key=first.ordering_key,
    )
    return Batch(metadata, encode(messages), messages)


class BatchBuilder:
    """Common limits and counters of a batch container."""

    def __init__(self, max_messages: int = 1000, max_bytes: int = 128 * 1024,
                 encode: Encoder = encode_pulsar_batch) -> None:
        self.encode = encode
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

    def __init__(self, max_messages: int = 1000, max_bytes: int = 128 * 1024,
                 encode: Encoder = encode_pulsar_batch) -> None:
        super().__init__(max_messages, max_bytes, encode)
        self._messages: list[OutgoingMessage] = []

    def _add(self, message: OutgoingMessage) -> None:
        self._messages.append(message)

    def _take(self) -> list[Batch]:
        messages, self._messages = self._messages, []
        return [_make_batch(messages, self.encode)] if messages else []


class KeyBasedBatchBuilder(BatchBuilder):
    """One batch per key (``BatchingType.KeyBased``); limits count across all keys."""

    def __init__(self, max_messages: int = 1000, max_bytes: int = 128 * 1024,
                 encode: Encoder = encode_pulsar_batch) -> None:
        super().__init__(max_messages, max_bytes, encode)
        self._by_key: dict[Any, list[OutgoingMessage]] = {}

    def _add(self, message: OutgoingMessage) -> None:
        self._by_key.setdefault(message.batch_key, []).append(message)

    def _take(self) -> list[Batch]:
        groups, self._by_key = self._by_key, {}
        batches = [_make_batch(msgs, self.encode) for msgs in groups.values() if msgs]
        batches.sort(key=lambda b: b.sequence_id)
        return batches


def make_batch_builder(key_based: bool, max_messages: int, max_bytes: int,
                       encode: Encoder = encode_pulsar_batch) -> BatchBuilder:
    """The container for a producer's ``batching_type``, laying batches out with ``encode``."""
    cls = KeyBasedBatchBuilder if key_based else DefaultBatchBuilder
    return cls(max_messages, max_bytes, encode)
