"""Exclusive and Failover subscriptions: one active consumer receives everything.

Pulsar's ``PersistentDispatcherSingleActiveConsumer``. Consumers are ranked by priority
level then name; the active one is picked by the Failover rule (partition index modulo the
eligible consumers, or the consumer ring for a non-partitioned topic). When the active
consumer changes on a Failover subscription, every consumer is told at once, and after
``active_consumer_failover_delay_ms`` the cursor rewinds to just after the mark-delete
position: everything not acknowledged goes to the new active consumer, so duplicates and
reordering are possible. Redelivery counts are not tracked here (always 0), as in Pulsar.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..consumer import Consumer, SubType
from ..errors import ConsumerBusy
from ..events import EventType
from ..selectors.failover import pick_active_consumer
from ..storage.base import Position
from .base import Dispatcher, RedeliveryTrackerDisabled


class SingleActiveConsumerDispatcher(Dispatcher):
    """One active consumer at a time (Exclusive, or Failover with standbys)."""

    def __init__(self, subscription, sub_type: SubType) -> None:  # type: ignore[no-untyped-def]
        super().__init__(subscription)
        self.sub_type = sub_type
        self.redelivery_tracker = RedeliveryTrackerDisabled()
        self.active_consumer: Consumer | None = None
        self._switch_timer = None  # pending delayed rewind after a failover switch

    # -- consumers ------------------------------------------------------------------------

    def add_consumer(self, consumer: Consumer) -> None:
        if self.sub_type is SubType.Exclusive and self.consumers:
            raise ConsumerBusy(
                f"Exclusive consumer is already connected to subscription "
                f"{self.subscription.name!r} on {self.subscription.topic_name}"
            )
        if any(c.consumer_name == consumer.consumer_name for c in self.consumers) and (
            self.sub_type is SubType.Exclusive
        ):
            raise ConsumerBusy(f"consumer {consumer.consumer_name} is already subscribed")
        self.consumers.append(consumer)
        if not self._pick_and_schedule():
            # The active consumer did not change: tell the newcomer who it is.
            self.subscription.notify_active(consumer, consumer is self.active_consumer)

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer not in self.consumers:
            return
        self.consumers.remove(consumer)
        consumer.take_all_pending()
        self._pick_and_schedule()

    def _pick_and_schedule(self) -> bool:
        """Re-pick the active consumer; return whether it changed."""
        new = pick_active_consumer(
            self.consumers, self.subscription.partition_index, self.subscription.topic_name
        )
        old = self.active_consumer
        if new is old:
            return False
        self.active_consumer = new
        for c in self.consumers:
            c.is_active = c is new
            self.subscription.notify_active(c, c is new)
        self.subscription.emit(
            EventType.ACTIVE_CONSUMER_CHANGED,
            new,
            previous=old.consumer_name if old else None,
            active=new.consumer_name if new else None,
        )
        if new is None:
            return True
        self._cancel_switch()
        delay = self.subscription.settings.active_consumer_failover_delay_ms
        # A switch away from a previous active consumer waits for the delay; the very
        # first pick reads at once.
        if self.sub_type is SubType.Failover and delay > 0 and old is not None:
            self._switch_timer = self.subscription.schedule(delay, self._rewind_and_read)
        else:
            self._rewind_and_read()
        return True

    def _cancel_switch(self) -> None:
        if self._switch_timer is not None:
            self._switch_timer.cancel()
            self._switch_timer = None

    def _rewind_and_read(self) -> None:
        self._switch_timer = None
        for consumer in self.consumers:
            consumer.take_all_pending()
        self.cursor.rewind()
        self.subscription.emit(
            EventType.CURSOR_REWOUND,
            self.active_consumer,
            read_position=list(self.cursor.read_position),
        )
        self.dispatch()

    def redeliver_unacknowledged(
        self,
        consumer: Consumer,
        positions: Iterable[Position] | None = None,
        *,
        reason: str = "consumer_request",
        requested_at: list[int] | None = None,
    ) -> None:
        """Exclusive/Failover always redeliver everything unacknowledged (a rewind)."""
        if consumer is not self.active_consumer:
            return
        pending = sorted(consumer.pending_acks)
        consumer.msg_redeliver_counter += len(pending)
        self.subscription.emit(
            EventType.REDELIVERY_REQUESTED,
            consumer,
            positions=[list(p) for p in pending],
            reason=reason,
            requested_at=requested_at,
        )
        self._rewind_and_read()

    # -- dispatch -------------------------------------------------------------------------

    def dispatch(self) -> None:
        if self._dispatching:
            return
        self._dispatching = True
        try:
            while True:
                consumer = self.active_consumer
                if consumer is None or self._switch_timer is not None:
                    return
                if not self.can_receive(consumer) or not self.cursor.has_more_entries():
                    return
                entries = self.cursor.read_entries(self.entries_to_read(consumer.permits))
                batch = []
                filtered: list[Position] = []
                for position, data in entries:
                    header = self.header(position, data)
                    if header is None or data is None:
                        continue
                    selector = consumer.key_hash_filter
                    if selector is not None and selector.select(header.sticky_key_hash) is None:
                        filtered.append(position)
                        continue
                    batch.append((position, data, header))
                if filtered:
                    self.subscription.emit(
                        EventType.FILTERED, consumer, positions=[list(p) for p in filtered]
                    )
                    self.subscription.acknowledge_by_broker(filtered)
                self.send_entries(consumer, batch)
        finally:
            self._dispatching = False

    def close(self) -> None:
        self._cancel_switch()
        super().close()
