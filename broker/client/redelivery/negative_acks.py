"""``NegativeAcksTracker``: redeliver nacked messages after a delay, on a coarse timer.

Pulsar 3.x: a nacked message is kept per entry (the batch index is dropped) with the time
it becomes due, ``now + delay`` (or ``now + backoff.next(redelivery_count)``). A timer is
armed by the first nack and fires every ``delay / 3`` (with a back-off:
``max(backoff.next(0), 100) / 3``) while anything is pending; each firing redelivers what
is due, grouped in one request. So with the default 60 s delay a message comes back 60 to
80 s after its nack, not at 60 s sharp. (Java compares ``due < now`` against a timer that
always fires a little late; on an exact simulated clock ``due <= now`` is the same rule.)
"""

from __future__ import annotations

from collections.abc import Hashable

from .backoff import RedeliveryBackoff

MIN_NACK_DELAY_MS = 100


class NegativeAcksTracker:
    """Nacked message ids waiting for their redelivery."""

    def __init__(
        self, delay_ms: int = 60_000, backoff: RedeliveryBackoff | None = None
    ) -> None:
        if delay_ms < 0:
            raise ValueError("negative_ack_redelivery_delay_ms must be >= 0")
        self.delay_ms = max(delay_ms, MIN_NACK_DELAY_MS)
        self.backoff = backoff
        base = max(backoff.next(0), MIN_NACK_DELAY_MS) if backoff else self.delay_ms
        self.timer_interval_ms = max(1, base // 3)
        self._due: dict[Hashable, int] = {}
        self.next_timer_ms: int | None = None

    def add(self, message_id: Hashable, redelivery_count: int, now_ms: int) -> int:
        """Record a nack; return when the message is due."""
        delay = self.backoff.next(redelivery_count) if self.backoff else self.delay_ms
        due = now_ms + delay
        self._due[message_id] = due
        if self.next_timer_ms is None:
            self.next_timer_ms = now_ms + self.timer_interval_ms
        return due

    def remove(self, message_id: Hashable) -> None:
        self._due.pop(message_id, None)

    def on_timer(self, now_ms: int) -> list[Hashable]:
        """The timer fired: the ids to redeliver now (removed from the tracker)."""
        if self.next_timer_ms is None or now_ms < self.next_timer_ms:
            return []
        due = [mid for mid, at in self._due.items() if at <= now_ms]
        for mid in due:
            del self._due[mid]
        self.next_timer_ms = now_ms + self.timer_interval_ms if self._due else None
        return due

    def due_time(self, message_id: Hashable) -> int | None:
        return self._due.get(message_id)

    def __len__(self) -> int:
        return len(self._due)
