"""Shared subscriptions: entries spread over consumers with permits, in round-robin.

Pulsar's ``PersistentDispatcherMultipleConsumers``: a read is sized by the permits of all
consumers; its entries go to the next consumer (highest priority level first, round-robin
within it) in turns of at most ``dispatcher_max_round_robin_batch_size`` messages (within the
consumer's permits and unacked limit, converted to entries by the read's average batch size),
then to the next one. Entries nobody can take,
and the unacknowledged entries of a consumer that leaves, wait in the replay set and are
sent before new entries. When the subscription's consumers together hold
``max_unacked_messages_per_subscription`` unacknowledged messages, reads of new entries stop
(replays go on) until acks bring the count below half the limit.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..consumer import ServerConsumer, SubType, UnackedCounter
from ..delayed_delivery import DelayedDeliveryTracker
from ..entry import EntryHeader, read_header
from ..errors import ConsumerBusy
from ..events import EventType
from ..redelivery_request import RedeliveryRequest
from ..storage.base import Position
from .base import Dispatcher

if TYPE_CHECKING:
    from ..clock import TimerHandle

SendList = list[tuple[Position, bytes, EntryHeader]]


class ReplayQueue:
    """Positions waiting to be sent again, in position order, with their sticky key hash."""

    def __init__(self) -> None:
        self._heap: list[Position] = []
        self._hashes: dict[Position, int] = {}
        self._hash_counts: Counter[int] = Counter()

    def add(self, position: Position, sticky_key_hash: int = 0) -> bool:
        if position in self._hashes:
            return False
        self._hashes[position] = sticky_key_hash
        self._hash_counts[sticky_key_hash] += 1
        heapq.heappush(self._heap, position)
        return True

    def remove(self, position: Position) -> None:
        sticky_key_hash = self._hashes.pop(position, None)
        if sticky_key_hash is not None:
            self._forget_hash(sticky_key_hash)

    def _forget_hash(self, sticky_key_hash: int) -> None:
        self._hash_counts[sticky_key_hash] -= 1
        if self._hash_counts[sticky_key_hash] <= 0:
            del self._hash_counts[sticky_key_hash]

    def pop_first(self, n: int) -> list[Position]:
        out: list[Position] = []
        while self._heap and len(out) < n:
            position = heapq.heappop(self._heap)
            if position in self._hashes:
                self._forget_hash(self._hashes.pop(position))
                out.append(position)
        return out

    def contains_any_hash(self, sticky_key_hashes: Iterable[int]) -> bool:
        counts = self._hash_counts
        return bool(counts) and any(h in counts for h in sticky_key_hashes)

    def positions(self) -> list[Position]:
        return sorted(self._hashes)

    def hashes(self) -> dict[Position, int]:
        """Position -> sticky key hash of everything waiting (read-only view)."""
        return self._hashes

    def __contains__(self, position: Position) -> bool:
        return position in self._hashes

    def __len__(self) -> int:
        return len(self._hashes)


class SharedDispatcher(Dispatcher):
    """Round-robin over consumers with permits; replays go first."""

    sub_type = SubType.Shared

    def __init__(self, subscription) -> None:  # type: ignore[no-untyped-def]
        super().__init__(subscription)
        self.replay = ReplayQueue()
        self._next_index = 0
        settings = subscription.settings
        self.delayed: DelayedDeliveryTracker | None = (
            DelayedDeliveryTracker(
                settings.delayed_delivery_tick_ms,
                settings.is_delayed_delivery_deliver_at_time_strict,
            )
            if settings.delayed_delivery_enabled
            else None
        )
        self._delayed_timer: TimerHandle | None = None
        self._unacked = UnackedCounter()

    # -- consumers ------------------------------------------------------------------------

    def add_consumer(self, consumer: ServerConsumer) -> None:
        if any(c.consumer_id == consumer.consumer_id for c in self.consumers):
            raise ConsumerBusy(f"consumer {consumer.consumer_name} is already subscribed")
        self.consumers.append(consumer)
        consumer.unacked_counter = self._unacked

    @property
    def total_unacked_messages(self) -> int:
        """Unacknowledged messages of all the consumers (Pulsar's totalUnackedMessages)."""
        return self._unacked.value

    def remove_consumer(self, consumer: ServerConsumer) -> None:
        if consumer not in self.consumers:
            return
        self.consumers.remove(consumer)
        pending = consumer.take_all_pending()
        consumer.unacked_counter = None
        self.on_unacked_changed()
        for position, ack in sorted(pending.items()):
            self.replay.add(position, ack.sticky_key_hash)
        if pending:
            self.subscription.emit(
                EventType.REDELIVERY_REQUESTED,
                consumer,
                positions=[list(p) for p in sorted(pending)],
                reason="consumer_removed",
            )
        self.dispatch()

    def redeliver_unacknowledged(
        self, consumer: ServerConsumer, request: RedeliveryRequest
    ) -> None:
        chosen, requested_at = request.chosen(consumer.pending_acks)
        for position in chosen:
            ack = consumer.remove_pending(position)
            if ack is not None and self.replay.add(position, ack.sticky_key_hash):
                self.redelivery_tracker.increment(position)
        # Consumer.redeliverUnacknowledgedMessages (both overloads): a redelivery request
        # unblocks the consumer and flows the permits it granted while blocked.
        self._unblock(consumer)
        self.on_unacked_changed()
        if chosen:
            consumer.msg_redeliver_counter += len(chosen)
            self.subscription.emit(
                EventType.REDELIVERY_REQUESTED,
                consumer,
                positions=[list(p) for p in chosen],
                counts=[self.redelivery_tracker.get(p) for p in chosen],
                reason=request.reason,
                requested_at=requested_at,
            )
        self.dispatch()

    def on_acknowledged(self, positions: Iterable[Position]) -> None:
        if type(positions) is not list:  # read, never kept: a list is used as it is
            positions = list(positions)
        if len(self.replay):
            for position in positions:
                self.replay.remove(position)
        if self.delayed is not None and len(self.delayed):
            for position in positions:
                self.delayed.remove(position)
        super().on_acknowledged(positions)
        self.on_unacked_changed()

    def on_mark_delete_moved(self) -> None:
        super().on_mark_delete_moved()
        self.on_unacked_changed()
        if self.delayed is not None:
            self.delayed.remove_up_to(self.cursor.mark_delete_position)

    def on_unacked_changed(self) -> None:
        """Block or unblock reads on the subscription's unacked total.

        ``PersistentDispatcherMultipleConsumers.addUnAckedMessages``: blocked once the total
        reaches ``max_unacked_messages_per_subscription`` (> 0), unblocked when it falls
        below half of it, or at once if the limit is 0.
        """
        total = self._unacked.value
        limit = self.subscription.settings.max_unacked_messages_per_subscription
        if limit <= 0:
            self.blocked_dispatcher_on_unacked = False
        elif total >= limit:
            self.blocked_dispatcher_on_unacked = True
        elif total < limit // 2:
            self.blocked_dispatcher_on_unacked = False

    def close(self) -> None:
        if self._delayed_timer is not None:
            self._delayed_timer.cancel()
            self._delayed_timer = None
        super().close()

    def cursor_is_reset(self) -> None:
        self.take_replay()

    def take_replay(self) -> list[Position]:
        positions = list(self.replay.positions())
        for position in positions:
            self.replay.remove(position)
        return positions

    def delayed_count(self) -> int:
        return len(self.delayed) if self.delayed is not None else 0

    def stats(self) -> dict[str, Any]:
        return {"msgInReplay": len(self.replay), **super().stats()}

    # -- dispatch -------------------------------------------------------------------------

    def total_available_permits(self) -> int:
        # can_receive() spelled out: this runs on every dispatch round, for every consumer.
        return sum(
            c.permits for c in self.consumers
            if c.permits > 0 and not c.blocked_on_unacked and not c.closed
        )

    def dispatch(self) -> None:
        if self._dispatching:
            return
        self._dispatching = True
        try:
            while True:
                permits = self.total_available_permits()
                if permits <= 0:
                    return
                batch, is_replay = self._read(self.entries_to_read(permits))
                if batch is None:
                    return
                if not self.send_read_entries(batch, is_replay):
                    return
        finally:
            self._dispatching = False

    def _read(self, n: int) -> tuple[SendList | None, bool]:
        """Entries to send next: replayed (and due delayed) ones first, else new ones."""
        batch = self.read_replay(n)
        if batch is not None:
            return batch, True
        if self.blocked_dispatcher_on_unacked:
            return None, False
        return self.read_new(n), False

    def read_replay(self, n: int) -> SendList | None:
        """Due delayed messages and the replay set, in position order."""
        while True:
            positions = self.delayed_due(n)
            if len(positions) < n:
                positions += self.replay.pop_first(n - len(positions))
            if not positions:
                return None
            out = self.read_positions(positions)
            if out:
                return out

    def read_positions(self, positions: list[Position]) -> SendList:
        """The entries at ``positions`` (taken out of the replay set), in position order."""
        out: SendList = []
        for position in sorted(positions):
            if self.cursor.is_deleted(position):
                continue
            data = self.cursor.ledger.read_entry(position)
            header = self.header(position, data)
            if header is not None and data is not None:
                out.append((position, data, header))
        return out

    def read_new(self, n: int) -> SendList | None:
        """New entries from the cursor, holding back delayed ones not yet due."""
        while self.cursor.has_more_entries():
            out: SendList = []
            for position, data in self.cursor.read_entries(n):
                try:  # read_header() first: self.header() reports the entries it refuses
                    header = read_header(data)
                except (TypeError, ValueError):
                    header = self.header(position, data)
                if header is None or data is None:
                    continue
                if header.deliver_at_time and self.track_delayed(position, header):
                    continue
                out.append((position, data, header))
            if out:
                return out
        return None

    # -- delayed delivery -----------------------------------------------------------------

    def track_delayed(self, position: Position, header: EntryHeader) -> bool:
        """Hand a delayed entry to the tracker; return whether it must wait."""
        tracker = self.delayed
        if tracker is None:
            return False
        now = self.subscription.now_ms()
        if not tracker.add(position, header.deliver_at_time, now):
            return False
        self.subscription.emit(
            EventType.DELAYED, None, position=list(position), deliver_at=header.deliver_at_time
        )
        self._schedule_delayed_wakeup(now)
        return True

    def delayed_due(self, n: int) -> list[Position]:
        if self.delayed is None or not len(self.delayed):
            return []
        return self.delayed.get_scheduled_messages(self.subscription.now_ms(), n)

    def _schedule_delayed_wakeup(self, now: int) -> None:
        assert self.delayed is not None
        wake = self.delayed.next_wakeup(now)
        if wake is None:
            return
        timer = self._delayed_timer
        if timer is not None and not timer.cancelled and timer.at_ms <= wake:
            return
        if timer is not None:
            timer.cancel()
        self._delayed_timer = self.subscription.schedule(wake - now, self._on_delayed_timer)

    def _on_delayed_timer(self) -> None:
        self._delayed_timer = None
        self.dispatch()
        if self.delayed is not None and len(self.delayed):
            self._schedule_delayed_wakeup(self.subscription.now_ms())

    def next_consumer(self) -> ServerConsumer | None:
        """Round-robin among the consumers of the best priority level that can receive."""
        ready = [c for c in self.consumers if self.can_receive(c)]
        if not ready:
            return None
        best = min(c.priority_level for c in ready)
        n = len(self.consumers)
        for step in range(n):
            consumer = self.consumers[(self._next_index + step) % n]
            if consumer.priority_level == best and self.can_receive(consumer):
                self._next_index = (self._next_index + step + 1) % n
                return consumer
        return None

    def send_read_entries(self, entries: SendList, is_replay: bool) -> bool:
        """Hand ``entries`` out in round-robin turns; those nobody can take go to the replay set.

        ``PersistentDispatcherMultipleConsumers.trySendMessagesToConsumers``: a turn is
        counted in messages, ``min(messages left in this read, the consumer's available
        permits, dispatcher_max_round_robin_batch_size)``, then turned into entries by the
        read's average batch size (at least one entry). Returns whether anything was sent.
        """
        remaining = sum(header.num_messages for _p, _d, header in entries)
        avg_batch_size = max(remaining // len(entries), 1) if remaining > 0 else 1
        turn = self.subscription.settings.dispatcher_max_round_robin_batch_size
        sent_any = False
        i = 0
        while i < len(entries):
            consumer = self.next_consumer()
            if consumer is None:
                break
            messages = min(remaining, self.available_permits(consumer), turn)
            n = max(messages // avg_batch_size, 1)
            remaining -= self.send_entries(consumer, entries[i:i + n])
            i += n
            sent_any = True
        for position, _data, header in entries[i:]:
            self.replay.add(position, header.sticky_key_hash)
        return sent_any
