"""``DelayedDeliveryTracker``: the in-memory time index of messages delivered later.

Pulsar's ``InMemoryDelayedDeliveryTracker`` on a tick (``delayed_delivery_tick_ms``,
1000 by default). A Shared or Key_Shared dispatcher hands it every entry it reads that
carries a deliver-at time; the tracker keeps those not yet due and gives them back when
they are. The cut-off for "due" is the tick rule of broker.conf:

* non-strict (``is_delayed_delivery_deliver_at_time_strict = false``, the default): a
  message is due once ``deliver_at <= now + tick``, so it may arrive up to one tick early;
* strict: due once ``deliver_at <= now``; the timer wakes on tick boundaries, so it may
  arrive up to one tick late, never early.

The index lives only in memory, as in Pulsar: after a restart the cursor reads the
delayed entries again and they are tracked anew.
"""

from __future__ import annotations

import heapq

from .storage.base import Position


class DelayedDeliveryTracker:
    """Positions waiting for their deliver-at time, for one subscription."""

    def __init__(self, tick_ms: int = 1000, strict: bool = False) -> None:
        if tick_ms <= 0:
            raise ValueError("delayed_delivery_tick_ms must be > 0")
        self.tick_ms = tick_ms
        self.strict = strict
        self._heap: list[tuple[int, Position]] = []
        self._deliver_at: dict[Position, int] = {}

    def cutoff(self, now_ms: int) -> int:
        """Messages with ``deliver_at <= cutoff`` are due."""
        return now_ms if self.strict else now_ms + self.tick_ms

    def add(self, position: Position, deliver_at: int, now_ms: int) -> bool:
        """Track ``position`` unless it is already due; return whether it is delayed."""
        if deliver_at <= self.cutoff(now_ms):
            return False
        if position not in self._deliver_at:
            self._deliver_at[position] = deliver_at
            heapq.heappush(self._heap, (deliver_at, position))
        return True

    def has_message_available(self, now_ms: int) -> bool:
        self._drop_stale()
        return bool(self._heap) and self._heap[0][0] <= self.cutoff(now_ms)

    def get_scheduled_messages(self, now_ms: int, max_messages: int) -> list[Position]:
        """Due positions (at most ``max_messages``), removed from the index, in order."""
        cutoff = self.cutoff(now_ms)
        out: list[Position] = []
        while self._heap and len(out) < max_messages:
            deliver_at, position = self._heap[0]
            if self._deliver_at.get(position) != deliver_at:
                heapq.heappop(self._heap)
                continue
            if deliver_at > cutoff:
                break
            heapq.heappop(self._heap)
            del self._deliver_at[position]
            out.append(position)
        out.sort()
        return out

    def next_wakeup(self, now_ms: int) -> int | None:
        """When the tick timer should fire next (a tick boundary), if anything waits."""
        self._drop_stale()
        if not self._heap:
            return None
        first = self._heap[0][0]
        due_at = first if self.strict else first - self.tick_ms
        tick = self.tick_ms
        boundary = -(-due_at // tick) * tick  # round up to the tick grid
        return max(boundary, now_ms)

    def remove(self, position: Position) -> None:
        self._deliver_at.pop(position, None)

    def remove_up_to(self, position: Position) -> None:
        for pos in [p for p in self._deliver_at if p <= position]:
            del self._deliver_at[pos]

    def deliver_at(self, position: Position) -> int | None:
        return self._deliver_at.get(position)

    def _drop_stale(self) -> None:
        while self._heap and self._deliver_at.get(self._heap[0][1]) != self._heap[0][0]:
            heapq.heappop(self._heap)

    def __len__(self) -> int:
        return len(self._deliver_at)

    def __contains__(self, position: Position) -> bool:
        return position in self._deliver_at
