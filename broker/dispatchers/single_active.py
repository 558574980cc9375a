"""Exclusive and Failover subscriptions: one active consumer receives everything.

Pulsar 3.3's ``PersistentDispatcherSingleActiveConsumer``. Consumers are ranked by priority
level then name; the active one is picked by the Failover rule (partition index modulo the
eligible consumers, or the consumer ring for a non-partitioned topic). Whenever the pick
changes — the very first pick included — ``scheduleReadOnActiveConsumer`` runs:

* Exclusive, or ``active_consumer_failover_delay_ms <= 0``: the cursor rewinds to just after
  the mark-delete position and reading starts at once;
* Failover: the rewind and the first read wait ``active_consumer_failover_delay_ms`` (1000),
  during which flow permits and redelivery requests are ignored; a change while a switch is
  pending does not restart the wait — the switch serves whoever is active when it fires.

``ACTIVE_CONSUMER_CHANGE`` goes to every consumer of a Failover subscription when the switch
completes (Exclusive consumers never get one), and to a joining consumer at once when its
arrival does not change the active consumer. After the rewind everything not acknowledged
goes to the new active consumer, so duplicates and reordering are possible. Redelivery
counts are not tracked here (always 0), as in Pulsar.
"""

from __future__ import annotations

from typing import Any

from ..consumer import ServerConsumer, SubType
from ..errors import ConsumerBusy
from ..events import EventType
from ..redelivery_request import RedeliveryRequest
from ..selectors.failover import pick_active_consumer
from ..storage.base import Position
from .base import Dispatcher, RedeliveryTrackerDisabled


class SingleActiveConsumerDispatcher(Dispatcher):
    """One active consumer at a time (Exclusive, or Failover with standbys)."""

    def __init__(self, subscription, sub_type: SubType) -> None:  # type: ignore[no-untyped-def]
        super().__init__(subscription)
        self.sub_type = sub_type
        self.redelivery_tracker = RedeliveryTrackerDisabled()
        self.active_consumer: ServerConsumer | None = None
        self._switch_timer = None  # Pulsar's readOnActiveConsumerTask: a delayed switch

    # -- consumers ------------------------------------------------------------------------

    @property
    def switch_pending(self) -> bool:
        """Whether a Failover switch waits for its delay (reads and redeliveries held)."""
        return self._switch_timer is not None

    def add_consumer(self, consumer: ServerConsumer) -> None:
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
        if not self._pick_and_schedule() and self.active_consumer is not None:
            # The active consumer did not change: tell the newcomer who it is.
            self.subscription.notify_active(consumer, consumer is self.active_consumer)

    def remove_consumer(self, consumer: ServerConsumer) -> None:
        if consumer not in self.consumers:
            return
        self.consumers.remove(consumer)
        consumer.take_all_pending()
        self._pick_and_schedule()

    def _pick_and_schedule(self) -> bool:
        """``pickAndScheduleActiveConsumer``: re-pick; return whether the pick changed."""
        new = pick_active_consumer(
            self.consumers, self.subscription.partition_index, self.subscription.topic_name
        )
        old = self.active_consumer
        if new is old:
            return False
        self.active_consumer = new
        for c in self.consumers:
            c.is_active = c is new
        self.subscription.emit(
            EventType.ACTIVE_CONSUMER_CHANGED,
            new,
            previous=old.consumer_name if old else None,
            active=new.consumer_name if new else None,
        )
        if new is not None:  # the last consumer left: nothing to schedule
            self._schedule_read_on_active_consumer()
        return True

    def _schedule_read_on_active_consumer(self) -> None:
        """``scheduleReadOnActiveConsumer``: switch now, or after the Failover delay."""
        if self.subscription.topic.acks_on_dispatch:
            # Non-persistent: nothing to rewind, and Pulsar's NonPersistentDispatcher-
            # SingleActiveConsumer schedules no read and sends no notification.
            self.dispatch()
            return
        delay = self.subscription.settings.active_consumer_failover_delay_ms
        if self.sub_type is not SubType.Failover or delay <= 0:
            self._complete_switch()
        elif self._switch_timer is None:
            self._switch_timer = self.subscription.schedule(delay, self._complete_switch)

    def _complete_switch(self) -> None:
        """Rewind, tell every consumer who is active (Failover only), read for it."""
        self._switch_timer = None
        self._rewind()
        active = self.active_consumer
        if active is not None and self.sub_type is SubType.Failover:
            for consumer in self.consumers:  # notifyActiveConsumerChanged
                self.subscription.notify_active(consumer, consumer is active)
        self.dispatch()

    def _cancel_switch(self) -> None:
        if self._switch_timer is not None:
            self._switch_timer.cancel()
            self._switch_timer = None

    def _rewind(self) -> None:
        for consumer in self.consumers:
            consumer.take_all_pending()
        self.cursor.rewind()
        self.subscription.emit(
            EventType.CURSOR_REWOUND,
            self.active_consumer,
            read_position=list(self.cursor.read_position),
        )

    def redeliver_unacknowledged(
        self, consumer: ServerConsumer, request: RedeliveryRequest
    ) -> None:
        """Exclusive/Failover always redeliver everything unacknowledged (a rewind).

        Only the active consumer may ask, and not while a switch waits for its delay
        (``internalRedeliverUnacknowledgedMessages`` ignores both).
        """
        if consumer is not self.active_consumer or self._switch_timer is not None:
            return
        pending = sorted(consumer.pending_acks)
        consumer.msg_redeliver_counter += len(pending)
        self.subscription.emit(
            EventType.REDELIVERY_REQUESTED,
            consumer,
            positions=[list(p) for p in pending],
            reason=request.reason,
            requested_at=request.requested_times(),
        )
        self._rewind()
        self.dispatch()

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
                count = self.entries_to_read(consumer.permits)
                compacted = self.subscription.topic.compacted
                if consumer.read_compacted and compacted is not None:
                    entries = self.cursor.read_compacted_entries(compacted, count)
                else:
                    entries = self.cursor.read_entries(count)
                batch = self.readable(entries)
                filtered: list[Position] = []
                selector = consumer.key_hash_filter
                if selector is not None:
                    kept = []
                    for item in batch:
                        if selector.select(item[2].sticky_key_hash) is None:
                            filtered.append(item[0])
                        else:
                            kept.append(item)
                    batch = kept
                if filtered:
                    self.subscription.emit(
                        EventType.FILTERED, consumer, positions=[list(p) for p in filtered]
                    )
                    self.subscription.acknowledge_by_broker(filtered)
                self.send_entries(consumer, batch)
        finally:
            self._dispatching = False

    def consumer_stats(self, consumer: ServerConsumer) -> dict[str, Any]:
        return {"isActive": consumer.is_active}

    def close(self) -> None:
        self._cancel_switch()
        super().close()
