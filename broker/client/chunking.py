"""Chunking: split a too-big message into chunk entries, and reassemble them on consume.

Producer side (:func:`split_payload`, :func:`chunk_metadata`): a payload (already
compressed) larger than the max message size is cut into ``ceil(size / chunk_size)`` chunks,
each sent as its own entry with the message's sequence id and metadata plus ``uuid``
(``<producer_name>-<sequence_id>``), ``chunk_id`` (0-based), ``num_chunks_from_msg`` and
``total_chunk_msg_size``. Chunking needs batching off, as in Pulsar.

Consumer side (:class:`ChunkedMessageCollector`), after the Java ``ConsumerImpl``: chunks of
several messages (several producers) may interleave; each uuid has a context that accepts
chunk ``last + 1`` only. A chunk that does not continue its context (first chunk lost, out of
order) drops the context and is discarded. At most ``max_pending_chunked_message`` contexts
are kept: beyond that the oldest is dropped, its chunks acked when
``auto_ack_oldest_chunked_message_on_queue_full`` else left unacked (redelivered later by
ack timeout or a reconnect). Contexts older than
``expire_time_of_incomplete_chunked_message`` ms are dropped and their chunks acked. The
collector is sans-I/O: time is passed in and what to ack is returned.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AssembledMessage",
    "ChunkOutcome",
    "ChunkedMessageCollector",
    "chunk_metadata",
    "split_payload",
]


def split_payload(payload: bytes, chunk_size: int) -> list[bytes]:
    """``payload`` cut into pieces of at most ``chunk_size`` bytes (at least one piece)."""
    if chunk_size < 1:
        raise ValueError(f"chunk size must be >= 1, got {chunk_size}")
    if not payload:
        return [b""]
    return [payload[i : i + chunk_size] for i in range(0, len(payload), chunk_size)]


def chunk_metadata(uuid: str, chunk_id: int, num_chunks: int, total_size: int) -> dict[str, Any]:
    """The chunk fields of an entry's metadata."""
    return {
        "uuid": uuid,
        "chunk_id": chunk_id,
        "num_chunks_from_msg": num_chunks,
        "total_chunk_msg_size": total_size,
    }


@dataclass(slots=True)
class AssembledMessage:
    """A complete chunked message: its metadata (from the first chunk) and payload."""

    metadata: Any
    payload: bytes
    chunk_ids: list[Any]


@dataclass(slots=True)
class ChunkOutcome:
    """What one chunk produced: maybe a whole message, and chunk ids to ack."""

    message: AssembledMessage | None = None
    ack: list[Any] = field(default_factory=list)


@dataclass(slots=True)
class _Context:
    metadata: Any
    num_chunks: int
    total_size: int
    received_ms: int
    parts: list[bytes] = field(default_factory=list)
    chunk_ids: list[Any] = field(default_factory=list)

    @property
    def last_chunk_id(self) -> int:
        return len(self.parts) - 1


class ChunkedMessageCollector:
    """Reassembles chunked messages on the consumer side."""

    def __init__(
        self,
        max_pending_chunked_message: int = 10,
        expire_time_of_incomplete_chunked_message: int = 60_000,
        auto_ack_oldest_chunked_message_on_queue_full: bool = False,
    ) -> None:
        self.max_pending = max_pending_chunked_message
        self.expire_ms = expire_time_of_incomplete_chunked_message
        self.auto_ack_oldest = auto_ack_oldest_chunked_message_on_queue_full
        self._contexts: OrderedDict[str, _Context] = OrderedDict()

    @property
    def pending(self) -> int:
        """Number of incomplete chunked messages held."""
        return len(self._contexts)

    def pending_uuids(self) -> list[str]:
        return list(self._contexts)

    def add(
        self,
        uuid: str,
        chunk_id: int,
        num_chunks: int,
        total_size: int,
        payload: bytes,
        chunk_msg_id: Any,
        metadata: Any,
        now_ms: int,
    ) -> ChunkOutcome:
        """Take one chunk; returns the assembled message once its last chunk is in."""
        outcome = ChunkOutcome()
        ctx = self._contexts.get(uuid)
        if chunk_id == 0 and ctx is None:
            if self.max_pending > 0 and len(self._contexts) >= self.max_pending:
                _, oldest = self._contexts.popitem(last=False)
                if self.auto_ack_oldest:
                    outcome.ack.extend(oldest.chunk_ids)
            ctx = _Context(metadata, num_chunks, total_size, now_ms)
            self._contexts[uuid] = ctx
        elif ctx is None or chunk_id != ctx.last_chunk_id + 1:
            if ctx is not None and chunk_id <= ctx.last_chunk_id:
                # A resent chunk we already hold: drop the duplicate only.
                outcome.ack.append(chunk_msg_id)
                return outcome
            # The first chunk was lost or chunks arrived out of order: give up the message.
            if ctx is not None:
                del self._contexts[uuid]
            publish_time = getattr(metadata, "publish_time", 0) or 0
            if self.expire_ms > 0 and now_ms > publish_time + self.expire_ms:
                outcome.ack.append(chunk_msg_id)
            return outcome
        ctx.parts.append(bytes(payload))
        ctx.chunk_ids.append(chunk_msg_id)
        if len(ctx.parts) < ctx.num_chunks:
            return outcome
        del self._contexts[uuid]
        data = b"".join(ctx.parts)
        outcome.message = AssembledMessage(ctx.metadata, data, ctx.chunk_ids)
        return outcome

    def expire(self, now_ms: int) -> list[Any]:
        """Drop contexts older than the expiry; returns their chunk ids, to be acked."""
        if self.expire_ms <= 0:
            return []
        acks: list[Any] = []
        for uuid in list(self._contexts):
            ctx = self._contexts[uuid]
            if now_ms <= ctx.received_ms + self.expire_ms:
                break  # contexts are in arrival order
            del self._contexts[uuid]
            acks.extend(ctx.chunk_ids)
        return acks

    def next_expiry(self) -> int | None:
        """When the oldest context expires (ms), or None."""
        if self.expire_ms <= 0 or not self._contexts:
            return None
        first = next(iter(self._contexts.values()))
        return first.received_ms + self.expire_ms + 1

    def clear(self) -> None:
        self._contexts.clear()
