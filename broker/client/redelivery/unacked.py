"""``UnAckedMessageTracker``: the ack-timeout time wheel.

Pulsar's client keeps ``ceil(timeout / tick) + 1`` buckets; a message enters the last
bucket when the application receives it (messages still in the receive queue are not
tracked); every tick the head bucket is redelivered and an empty one appended. A message
therefore comes back after ``ceil(T/t)·t`` to ``(ceil(T/t)+1)·t``. With a back-off
(``ack_timeout_redelivery_backoff``) each message instead waits ``timeout +
backoff.next(redelivery_count)``, checked every tick.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable

from .backoff import RedeliveryBackoff

MIN_ACK_TIMEOUT_MS = 10_000  # the Python client's floor
MIN_TICK_MS = 100


class UnAckedMessageTracker:
    """Ids received by the application and not acknowledged yet."""

    def __init__(
        self,
        timeout_ms: int,
        now_ms: int,
        tick_ms: int = 1000,
        backoff: RedeliveryBackoff | None = None,
    ) -> None:
        if timeout_ms < MIN_ACK_TIMEOUT_MS:
            raise ValueError(
                f"unacked_messages_timeout_ms must be >= {MIN_ACK_TIMEOUT_MS}, got {timeout_ms}"
            )
        if tick_ms < MIN_TICK_MS:
            raise ValueError(f"tick_duration_ms must be >= {MIN_TICK_MS}, got {tick_ms}")
        self.timeout_ms = timeout_ms
        self.tick_ms = min(tick_ms, timeout_ms)
        self.backoff = backoff
        self.buckets: deque[set[Hashable]] = deque(
            set() for _ in range(math.ceil(timeout_ms / self.tick_ms) + 1)
        )
        self._where: dict[Hashable, set[Hashable]] = {}
        self._due: dict[Hashable, int] = {}  # back-off mode
        self.next_tick_ms = now_ms + self.tick_ms

    def add(self, message_id: Hashable, redelivery_count: int = 0, now_ms: int = 0) -> bool:
        """Start the clock for a received message; False if it is already tracked."""
        if self.backoff is not None:
            if message_id in self._due:
                return False
            self._due[message_id] = now_ms + self.timeout_ms + self.backoff.next(redelivery_count)
            return True
        if message_id in self._where:
            return False
        bucket = self.buckets[-1]
        bucket.add(message_id)
        self._where[message_id] = bucket
        return True

    def remove(self, message_id: Hashable) -> None:
        bucket = self._where.pop(message_id, None)
        if bucket is not None:
            bucket.discard(message_id)
        self._due.pop(message_id, None)

    def remove_up_to(self, message_id: Hashable) -> None:
        """A cumulative ack removes every id at or below it."""
        for mid in [m for m in (*self._where, *self._due) if m <= message_id]:  # type: ignore[operator]
            self.remove(mid)

    def on_tick(self, now_ms: int) -> list[Hashable]:
        """Advance the wheel to ``now_ms``; return the ids that timed out."""
        out: list[Hashable] = []
        while now_ms >= self.next_tick_ms:
            tick_time = self.next_tick_ms
            self.next_tick_ms += self.tick_ms
            if self.backoff is not None:
                due = [m for m, at in self._due.items() if at <= tick_time]
                for mid in due:
                    del self._due[mid]
                out.extend(due)
                continue
            head = self.buckets.popleft()
            self.buckets.append(set())
            for mid in head:
                self._where.pop(mid, None)
            out.extend(head)
        return out

    def __len__(self) -> int:
        return len(self._where) + len(self._due)

    def __contains__(self, message_id: Hashable) -> bool:
        return message_id in self._where or message_id in self._due
