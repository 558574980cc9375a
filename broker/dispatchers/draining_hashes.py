"""Pulsar 4.0's ``DrainingHashesTracker`` (PIP-379): sticky key hashes a consumer still owes.

When a Key_Shared consumer loses a hash range to another consumer while it still has
unacknowledged messages of hashes in that range, each such hash becomes *draining* on it:
an entry ``hash -> (consumer, refCount, blockedCount)``, one reference per pending message.
While the entry exists, the hash's messages are not sent to any other consumer (they wait
in the replay queue; each refusal counts in ``blockedCount``). Acks and other removals of
the pending messages lower ``refCount``; at zero the entry goes away and, if it blocked
anything, the dispatcher is told so it can read again (after ``keySharedUnblockingIntervalMs``).
If the hash comes back to the draining consumer itself, the entry is simply dropped.

Per-consumer stats follow ``ConsumerStatsImpl``: ``drainingHashesCount``,
``drainingHashesClearedTotal``, ``drainingHashesUnackedMessages`` and ``drainingHashes``
(``hash``, ``unackMsgs``, ``blockedAttempts``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("pulsarlab.broker.dispatch")

STICKY_KEY_HASH_NOT_SET = 0


@dataclass(slots=True)
class DrainingHashEntry:
    """The consumer draining a hash, its pending messages of it, and how often it blocked."""

    consumer: Any
    ref_count: int = 0
    blocked_count: int = 0

    @property
    def is_blocking(self) -> bool:
        return self.blocked_count > 0


@dataclass(slots=True)
class _ConsumerDrainingStats:
    hashes: set[int]
    cleared_total: int = 0


class DrainingHashesTracker:
    """Draining hashes of one Key_Shared dispatcher (single-threaded, like the core)."""

    def __init__(self, unblocking_handler: Callable[[int], None]) -> None:
        """``unblocking_handler(hash)`` runs when a blocking hash is released (-1: several)."""
        self._unblocking_handler = unblocking_handler
        self._entries: dict[int, DrainingHashEntry] = {}
        self._stats: dict[Any, _ConsumerDrainingStats] = {}
        self._batch_level = 0
        self._unblocked_while_batching = False

    def __len__(self) -> int:
        return len(self._entries)

    def get_entry(self, sticky_key_hash: int) -> DrainingHashEntry | None:
        return self._entries.get(sticky_key_hash)

    def add_entry(self, consumer: Any, sticky_key_hash: int) -> None:
        """One more pending message of ``sticky_key_hash`` on ``consumer`` is draining."""
        if sticky_key_hash == STICKY_KEY_HASH_NOT_SET:
            raise ValueError("sticky key hash cannot be 0")
        entry = self._entries.get(sticky_key_hash)
        if entry is None:
            entry = self._entries[sticky_key_hash] = DrainingHashEntry(consumer)
            self._stats.setdefault(consumer, _ConsumerDrainingStats(set())).hashes.add(
                sticky_key_hash
            )
        elif entry.consumer is not consumer:
            log.error(
                "hash %d is already draining on %s; not adding it for %s",
                sticky_key_hash, entry.consumer, consumer,
            )
            return
        entry.ref_count += 1

    def reduce_ref_count(self, consumer: Any, sticky_key_hash: int, closing: bool) -> None:
        """A pending message of ``sticky_key_hash`` left ``consumer`` (ack, redelivery, close)."""
        entry = self._entries.get(sticky_key_hash)
        if entry is None:
            return
        if entry.consumer is not consumer:
            log.error(
                "hash %d is draining on %s, not on %s; ignoring the removal",
                sticky_key_hash, entry.consumer, consumer,
            )
            return
        entry.ref_count -= 1
        if entry.ref_count > 0:
            return
        del self._entries[sticky_key_hash]
        self._clear_stats(consumer, sticky_key_hash)
        if not closing and entry.is_blocking:
            if self._batch_level > 0:
                self._unblocked_while_batching = True
            else:
                self._unblocking_handler(sticky_key_hash)

    def should_block_sticky_key_hash(self, consumer: Any, sticky_key_hash: int) -> bool:
        """Whether a message of ``sticky_key_hash`` must not go to ``consumer`` now."""
        if sticky_key_hash == STICKY_KEY_HASH_NOT_SET:
            return False
        entry = self._entries.get(sticky_key_hash)
        if entry is None:
            return False
        if entry.consumer is consumer:
            # The hash came back to the consumer that was draining it.
            del self._entries[sticky_key_hash]
            self._clear_stats(consumer, sticky_key_hash)
            return False
        entry.blocked_count += 1
        return True

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Removals inside notify the dispatcher once, at the end (``startBatch``/``endBatch``)."""
        self._batch_level += 1
        try:
            yield
        finally:
            self._batch_level -= 1
            if self._batch_level == 0 and self._unblocked_while_batching:
                self._unblocked_while_batching = False
                self._unblocking_handler(-1)

    def consumer_removed(self, consumer: Any) -> None:
        self._stats.pop(consumer, None)

    def clear(self) -> None:
        self._entries.clear()
        self._stats.clear()

    def consumer_stats(self, consumer: Any) -> dict[str, Any]:
        """``updateConsumerStats``: the draining fields of one consumer's stats."""
        stats = self._stats.get(consumer)
        hashes = []
        unacked = 0
        for sticky_key_hash in sorted(stats.hashes) if stats else ():
            entry = self._entries.get(sticky_key_hash)
            if entry is None:
                continue
            hashes.append(
                {
                    "hash": sticky_key_hash,
                    "unackMsgs": entry.ref_count,
                    "blockedAttempts": entry.blocked_count,
                }
            )
            unacked += entry.ref_count
        return {
            "drainingHashesCount": len(hashes),
            "drainingHashesClearedTotal": stats.cleared_total if stats else 0,
            "drainingHashesUnackedMessages": unacked,
            "drainingHashes": hashes,
        }

    def _clear_stats(self, consumer: Any, sticky_key_hash: int) -> None:
        stats = self._stats.get(consumer)
        if stats is not None:
            stats.hashes.discard(sticky_key_hash)
            stats.cleared_total += 1
