"""What every dispatcher shares: sending entries to a consumer, permits and pending acks.

A dispatcher decides which consumer of a subscription gets which entry. The base class
does the bookkeeping common to all of them (permit accounting where a batch counts as its
number of messages, pending acks, redelivery counts, corrupt-entry filtering) so each
subclass holds only its own rule.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..actions import DeliveredEntry
from ..consumer import ServerConsumer, SubType
from ..entry import EntryHeader, read_header
from ..events import EventType
from ..redelivery_request import RedeliveryRequest
from ..storage.base import Position

if TYPE_CHECKING:
    from ..selectors.base import StickyKeyConsumerSelector
    from ..subscription import Subscription

log = logging.getLogger("pulsarlab.broker.dispatch")

ReadEntry = tuple[Position, bytes | None]
_SHARED_TYPES = (SubType.Shared, SubType.Key_Shared)  # types blocked on unacked messages
# One DeliveredEntry per entry sent: tuple.__new__ directly skips the NamedTuple's __new__,
# which takes three times as long.
_new_tuple = tuple.__new__


class RedeliveryTracker:
    """Per-subscription count of how often each entry was redelivered."""

    def __init__(self) -> None:
        self._counts: dict[Position, int] = {}

    def increment(self, position: Position) -> int:
        count = self._counts.get(position, 0) + 1
        self._counts[position] = count
        return count

    def get(self, position: Position) -> int:
        return self._counts.get(position, 0)

    def remove(self, position: Position) -> None:
        self._counts.pop(position, None)

    def remove_up_to(self, position: Position) -> None:
        if self._counts:
            for pos in [p for p in self._counts if p <= position]:
                del self._counts[pos]


class RedeliveryTrackerDisabled(RedeliveryTracker):
    """Exclusive/Failover dispatchers in Pulsar do not count redeliveries (always 0)."""

    def increment(self, position: Position) -> int:
        return 0


class Dispatcher(ABC):
    """Base of the subscription dispatchers."""

    sub_type: SubType
    # Reads of new entries stop while the subscription is at its unacked limit (Pulsar's
    # blockedDispatcherOnUnackedMsgs); only the Shared dispatchers ever set it.
    blocked_dispatcher_on_unacked = False
    # The consumer that gets everything, on the single-active types (None elsewhere).
    active_consumer: ServerConsumer | None = None
    # Who owns which key hash, on Key_Shared (None elsewhere, and until a consumer joins).
    selector: StickyKeyConsumerSelector | None = None

    def __init__(self, subscription: Subscription) -> None:
        self.subscription = subscription
        self.cursor = subscription.cursor
        self.consumers: list[ServerConsumer] = []
        self.redelivery_tracker: RedeliveryTracker = RedeliveryTracker()
        self._dispatching = False
        # Average messages per entry, so a read of batched entries does not overshoot permits.
        self._avg_messages_per_entry = 1.0

    # -- consumer lifecycle ---------------------------------------------------------------

    @abstractmethod
    def add_consumer(self, consumer: ServerConsumer) -> None:
        """Admit a consumer (raising if the rules forbid it, with nothing changed)."""

    @abstractmethod
    def remove_consumer(self, consumer: ServerConsumer) -> None:
        """Drop a consumer; what it had not acknowledged goes to the others."""

    def consumer_flow(self, consumer: ServerConsumer, permits: int) -> None:
        """The consumer grants permits (Pulsar's ``Consumer.flowPermits``).

        A Shared/Key_Shared consumer at its unacked limit is blocked, and permits it grants
        while blocked are held back until it is unblocked.
        """
        limit = self.max_unacked_messages(consumer)
        if limit > 0 and consumer.unacked_messages >= limit:
            consumer.blocked_on_unacked = True
        if consumer.blocked_on_unacked:
            consumer.permits_received_while_blocked += permits
            return
        consumer.permits += permits
        self.dispatch()

    @abstractmethod
    def redeliver_unacknowledged(
        self, consumer: ServerConsumer, request: RedeliveryRequest
    ) -> None:
        """The consumer asks for its unacknowledged messages again."""

    def on_acknowledged(self, positions: Iterable[Position]) -> None:
        """Entries were fully acknowledged: no consumer owes them any more."""
        if type(positions) is not list:  # read, never kept: a list is used as it is
            positions = list(positions)
        if not positions:
            return
        # An entry is pending on one consumer at most, and one ack command's entries are
        # mostly one consumer's: the one that owed the first entry goes first, the others
        # get what it did not owe.
        first = positions[0]
        consumers = self.consumers
        owner = next((c for c in consumers if first in c.pending_acks), None)
        rest = positions
        if owner is not None:
            rest = owner.remove_pendings(rest)
            if owner.blocked_on_unacked:
                self._maybe_unblock(owner)
        for consumer in consumers:
            if not rest:
                break
            if consumer is not owner and consumer.pending_acks:
                left = consumer.remove_pendings(rest)
                if len(left) != len(rest) and consumer.blocked_on_unacked:
                    self._maybe_unblock(consumer)
                rest = left
        counts = self.redelivery_tracker._counts
        if counts:  # most entries were never redelivered
            for position in positions:
                counts.pop(position, None)

    def on_mark_delete_moved(self) -> None:
        """The mark-delete position advanced (cumulative ack or contiguous acks)."""
        md = self.cursor.mark_delete_position
        for consumer in self.consumers:
            # After individual acks there is usually nothing at or below.
            lowest = consumer.lowest_pending()
            if lowest is not None and lowest <= md:
                for position in [p for p in consumer.pending_acks if p <= md]:
                    consumer.remove_pending(position)
            if consumer.blocked_on_unacked:
                self._maybe_unblock(consumer)
        self.redelivery_tracker.remove_up_to(md)

    @abstractmethod
    def dispatch(self) -> None:
        """Send what can be sent now, within the consumers' permits."""

    def tick(self, now_ms: int) -> None:  # noqa: B027 - optional hook
        """Time moved on; dispatchers with timers override this."""

    def close(self) -> None:
        self.consumers.clear()

    # -- hooks the subscription calls -----------------------------------------------------

    def cursor_is_reset(self) -> None:  # noqa: B027 - optional hook
        """The cursor was reset and every pending ack dropped; forget what was queued."""

    def take_replay(self) -> list[Position]:
        """Empty the queue of entries waiting to be sent again and return them."""
        return []

    def delayed_count(self) -> int:
        """Delayed messages held back until their delivery time (Pulsar's msgDelayed)."""
        return 0

    def stats(self) -> dict[str, Any]:
        """This dispatcher's part of the subscription's stats."""
        return {"msgDelayed": self.delayed_count()}

    def consumer_stats(self, consumer: ServerConsumer) -> dict[str, Any]:
        """This dispatcher's part of one consumer's stats."""
        return {}

    # -- unacked-message limits -----------------------------------------------------------

    def max_unacked_messages(self, consumer: ServerConsumer) -> int:
        """The consumer's unacked-message limit, 0 for none (``Consumer.getMaxUnackedMessages``).

        Only Shared and Key_Shared consumers (individual-ack mode) are limited, and only on a
        durable subscription.
        """
        if self.sub_type not in _SHARED_TYPES or not self.cursor.durable:
            return 0
        return self.subscription.settings.max_unacked_messages_per_consumer

    def available_permits(self, consumer: ServerConsumer) -> int:
        """Messages the consumer may get now: its permits cut to what its unacked limit leaves.

        As ``PersistentDispatcherMultipleConsumers.trySendMessagesToConsumers`` computes it
        for every turn: ``min(permits, max(limit - unacked, 0))`` when a limit is set.
        """
        permits = max(consumer.permits, 0)
        limit = self.max_unacked_messages(consumer)
        if limit > 0:
            return min(permits, max(limit - consumer.unacked_messages, 0))
        return permits

    def on_unacked_changed(self) -> None:  # noqa: B027 - optional hook
        """Consumers' unacked counts changed; dispatchers with a subscription limit check it."""

    def _unblock(self, consumer: ServerConsumer) -> None:
        """Unblock the consumer and hand over the permits it granted while blocked."""
        consumer.blocked_on_unacked = False
        held = consumer.permits_received_while_blocked
        if held:
            consumer.permits_received_while_blocked = 0
            consumer.permits += held

    def _maybe_unblock(self, consumer: ServerConsumer) -> None:
        """Unblock once acks bring the consumer to half its limit or below.

        ``Consumer.updateBlockedConsumerOnUnackedMsgs``; the caller dispatches afterwards.
        """
        if consumer.blocked_on_unacked:
            limit = self.max_unacked_messages(consumer)
            if limit <= 0 or consumer.unacked_messages <= limit // 2:
                self._unblock(consumer)

    # -- helpers --------------------------------------------------------------------------

    def entries_to_read(self, permits: int) -> int:
        """How many entries to read for ``permits`` messages, as Pulsar estimates it."""
        max_read = self.subscription.settings.dispatcher_max_read_batch_size
        return max(1, min(max_read, int(permits / self._avg_messages_per_entry)))

    def header(self, position: Position, data: bytes | None) -> EntryHeader | None:
        """The entry's header, or ``None`` (after reporting it) if the entry is unusable."""
        if data is None:
            reason = "failed its CRC check"
        else:
            try:
                return read_header(data)
            except ValueError as exc:
                reason = str(exc)
        log.error(
            "skipping corrupt entry %d:%d of %s: %s",
            position[0], position[1], self.subscription.topic_name, reason,
        )
        self.subscription.emit(
            EventType.CORRUPT_ENTRY_SKIPPED, position=list(position), reason=reason
        )
        self.subscription.acknowledge_by_broker([position])
        return None

    def readable(
        self, entries: list[ReadEntry]
    ) -> list[tuple[Position, bytes, EntryHeader]]:
        """The entries read with their headers, in order; an unusable one is reported and
        left out (see :meth:`header`)."""
        try:  # one pass, no per-entry call to header(), while every entry is sound
            return [(position, data, read_header(data)) for position, data in entries]
        except (ValueError, TypeError):  # damaged, or None (it failed its CRC check)
            return [
                (position, data, header) for position, data in entries
                if (header := self.header(position, data)) is not None
            ]

    def send_entries(
        self, consumer: ServerConsumer, entries: list[tuple[Position, bytes, EntryHeader]]
    ) -> int:
        """Deliver entries to a consumer, charging its permits and recording pending acks.

        Returns the number of messages sent.
        """
        if not entries:
            return 0
        subscription = self.subscription
        settings = subscription.settings
        partition = subscription.partition_index
        batch_index_ack = (
            settings.acknowledgment_at_batch_index_level_enabled
            and consumer.batch_index_ack_enabled
        )
        batch_deleted = self.cursor.batch_deleted if batch_index_ack else None
        delivered: list[DeliveredEntry] = []
        total_messages = 0
        total_bytes = 0
        # Most entries were never redelivered: skip the lookup while nothing was.
        counts = self.redelivery_tracker._counts
        if batch_deleted or counts:
            for position, data, header in entries:
                ack_set = None
                messages = header[0]
                if header[4] and batch_deleted:  # batched, and partly acknowledged?
                    bits = batch_deleted.get(position)
                    if bits is not None:
                        ack_set = bits
                        messages = bits.bit_count()
                delivered.append(_new_tuple(DeliveredEntry, (
                    position, partition, counts.get(position, 0) if counts else 0, data,
                    ack_set,
                )))
                total_messages += messages
                total_bytes += len(data)
        else:  # the common case: first deliveries, nothing acknowledged inside a batch
            append = delivered.append
            for position, data, header in entries:
                append(_new_tuple(DeliveredEntry, (position, partition, 0, data, None)))
                total_messages += header[0]
                total_bytes += len(data)
        consumer.add_pendings(entries)
        consumer.permits -= total_messages
        consumer.msg_out_counter += total_messages
        consumer.bytes_out_counter += total_bytes
        n = len(entries)
        self._avg_messages_per_entry = max(
            1.0, 0.9 * self._avg_messages_per_entry + 0.1 * (total_messages / n)
        )
        limit = self.max_unacked_messages(consumer)
        if 0 < limit <= consumer.unacked_messages:
            consumer.blocked_on_unacked = True
        self.on_unacked_changed()
        subscription.deliver(consumer, delivered)
        return total_messages

    @staticmethod
    def can_receive(consumer: ServerConsumer) -> bool:
        return consumer.permits > 0 and not consumer.blocked_on_unacked and not consumer.closed
