"""Negative acks: hold nacked entries for ``negative_ack_redelivery_delay_ms``, then redeliver.

A deliberately small tracker (the exact Pulsar timing, a tick of delay/3 and back-off, is
its own piece of work and will replace this module): :meth:`NegativeAcksTracker.add`
records an entry with its due time; the consumer's I/O loop asks :meth:`next_deadline` and
sends one ``REDELIVER_UNACKNOWLEDGED`` with the positions :meth:`take_due` returns. Entries
are tracked per ``(ledger, entry)``: nacking one message of a batch redelivers the batch,
as in Pulsar 3.x. The same class, with ``add(..., replace=False)``, serves as the simple ack
timeout tracker (``unacked_messages_timeout_ms``).
"""

from __future__ import annotations

__all__ = ["NegativeAcksTracker"]

Position = tuple[int, int]


class NegativeAcksTracker:
    """Nacked positions and when to redeliver them."""

    def __init__(self, delay_ms: int = 60_000) -> None:
        self.delay_ms = max(0, delay_ms)
        self._due: dict[Position, int] = {}

    def add(self, position: Position, now_ms: int, replace: bool = True) -> None:
        """Track ``position``; with ``replace=False`` an already tracked one keeps its time."""
        if replace or position not in self._due:
            self._due[position] = now_ms + self.delay_ms

    def remove(self, position: Position) -> None:
        self._due.pop(position, None)

    def __len__(self) -> int:
        return len(self._due)

    def next_deadline(self) -> int | None:
        return min(self._due.values()) if self._due else None

    def take_due(self, now_ms: int) -> list[Position]:
        """Positions whose delay has passed, in position order; they are forgotten."""
        due = sorted(p for p, t in self._due.items() if t <= now_ms)
        for p in due:
            del self._due[p]
        return due

    def clear(self) -> None:
        self._due.clear()
