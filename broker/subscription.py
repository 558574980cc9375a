"""A subscription: a cursor, a dispatcher of its type, and the rules that tie them.

The type is fixed by the first consumer and may change only when no consumer is
connected. Acknowledgements land here: individual and batch-index acks on any type,
cumulative acks only on Exclusive and Failover (on Shared and Key_Shared one is logged and
ignored, as Pulsar's broker does; the client refuses to send it).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .actions import ActiveConsumerChange, Deliver, DeliveredEntry, ReachedEndOfTopic
from .consumer import ServerConsumer, SubType
from .cursor import ManagedCursor
from .dispatchers.base import Dispatcher
from .dispatchers.key_shared import KeySharedDispatcher
from .dispatchers.key_shared_draining import KeySharedDrainingDispatcher
from .dispatchers.shared import SharedDispatcher
from .dispatchers.single_active import SingleActiveConsumerDispatcher
from .errors import InvalidArgument, SubscriptionTypeMismatch
from .events import EventType
from .rates import Rate, date_string
from .redelivery_request import RedeliveryRequest
from .selectors import sticky_selector
from .storage.base import Position

if TYPE_CHECKING:
    from .clock import TimerHandle
    from .context import CoreContext
    from .settings import BrokerSettings
    from .topic import AbstractTopic

log = logging.getLogger("pulsarlab.broker.subscription")

# The 3.3 classic and the 4.0 (PIP-379) Key_Shared dispatchers report the same stats hooks.


class Subscription:
    """One named subscription of one topic (partition)."""

    def __init__(self, topic: AbstractTopic, name: str, cursor: ManagedCursor) -> None:
        self.topic = topic
        self.context: CoreContext = topic.context
        self.name = name
        self.cursor = cursor
        self.dispatcher: Dispatcher | None = None
        self.sub_type: SubType | None = None
        # What consumers that left had sent (msgOutFromRemovedConsumer): the
        # subscription's out-counters never go back.
        self.msg_out_from_removed_consumers = 0
        self.bytes_out_from_removed_consumers = 0
        # Message expiry (PersistentMessageExpiryMonitor): entries expired, the last time.
        self.total_msg_expired = 0
        self.last_expire_timestamp = 0
        self.last_consumed_flow_timestamp = 0
        self.last_mark_delete_advanced_timestamp = 0
        self.msg_expired_rate = Rate(self.context.now_ms())

    # -- context for dispatchers ----------------------------------------------------------

    @property
    def settings(self) -> BrokerSettings:
        return self.context.settings

    @property
    def topic_name(self) -> str:
        return self.topic.name

    @property
    def partition_index(self) -> int:
        return self.topic.partition_index

    @property
    def durable(self) -> bool:
        return self.cursor.durable

    @property
    def consumers(self) -> list[ServerConsumer]:
        return self.dispatcher.consumers if self.dispatcher else []

    def now_ms(self) -> int:
        return self.context.now_ms()

    def emit(self, type_: EventType, consumer: ServerConsumer | None = None, **data: Any) -> None:
        context = self.context
        if context.has_listeners:
            context.emit(
                type_, self.topic.name, self.name,
                consumer.consumer_name if consumer else None, **data,
            )

    @property
    def listening(self) -> bool:
        """Whether anyone listens to events: callers skip building an event's data if not."""
        return self.context.has_listeners

    def deliver(self, consumer: ServerConsumer, entries: list[DeliveredEntry]) -> None:
        topic = self.topic
        context = self.context
        context.push(Deliver(consumer.consumer_id, consumer.conn, topic.name, entries))
        consumer.last_consumed_timestamp = context.now_ms()
        if self.context.has_listeners:
            self.emit(
                EventType.DISPATCHED,
                consumer,
                entries=[[e.position[0], e.position[1], e.redelivery_count] for e in entries],
            )
        if topic.acks_on_dispatch:
            self.acknowledge_by_broker([e.position for e in entries])

    def notify_active(self, consumer: ServerConsumer, is_active: bool) -> None:
        self.context.push(ActiveConsumerChange(consumer.consumer_id, consumer.conn, is_active))

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        return self.context.schedule(delay_ms, callback)

    def batch_index_ack_enabled(self, consumer: ServerConsumer) -> bool:
        return (
            self.settings.acknowledgment_at_batch_index_level_enabled
            and consumer.batch_index_ack_enabled
        )

    # -- consumers ------------------------------------------------------------------------

    def add_consumer(self, consumer: ServerConsumer, sub_type: SubType) -> None:
        """Attach a consumer; on any rejection the subscription is left as it was."""
        if self.dispatcher is not None and self.sub_type is not sub_type:
            if self.dispatcher.consumers:
                raise SubscriptionTypeMismatch(
                    f"subscription {self.name!r} on {self.topic.name} is of type "
                    f"{self.sub_type}; a {sub_type} consumer cannot join while it has consumers"
                )
            self.dispatcher.close()
            self.dispatcher = None
        consumer.topic_name = self.topic.name
        consumer.subscription_name = self.name
        if consumer.key_hash_ranges and sub_type in (SubType.Exclusive, SubType.Failover):
            selector = sticky_selector(self.settings.version())
            selector.add_consumer(consumer)
            consumer.key_hash_filter = selector
        dispatcher = self.dispatcher or self._new_dispatcher(sub_type)
        dispatcher.add_consumer(consumer)
        self.dispatcher = dispatcher
        self.sub_type = sub_type
        self.emit(
            EventType.CONSUMER_ADDED,
            consumer,
            sub_type=str(sub_type),
            priority_level=consumer.priority_level,
            consumer_id=consumer.consumer_id,
        )

    def _new_dispatcher(self, sub_type: SubType) -> Dispatcher:
        if sub_type is SubType.Shared:
            return SharedDispatcher(self)
        if sub_type is SubType.Key_Shared:
            if self.settings.version().key_shared_draining_hashes:
                return KeySharedDrainingDispatcher(self)
            return KeySharedDispatcher(self)
        return SingleActiveConsumerDispatcher(self, sub_type)

    def remove_consumer(self, consumer: ServerConsumer) -> None:
        if self.dispatcher is None or consumer not in self.dispatcher.consumers:
            return
        consumer.closed = True
        self.msg_out_from_removed_consumers += consumer.msg_out_counter
        self.bytes_out_from_removed_consumers += consumer.bytes_out_counter
        self.dispatcher.remove_consumer(consumer)
        self.emit(EventType.CONSUMER_REMOVED, consumer, consumer_id=consumer.consumer_id)

    def flow(self, consumer: ServerConsumer, permits: int) -> None:
        if self.dispatcher is None:
            return
        now = self.context.now_ms()
        consumer.last_consumed_flow_timestamp = self.last_consumed_flow_timestamp = now
        if self.listening:
            self.emit(EventType.FLOW, consumer, permits=permits, total=consumer.permits + permits)
        self.dispatcher.consumer_flow(consumer, permits)

    def redeliver_unacknowledged(
        self, consumer: ServerConsumer, request: RedeliveryRequest
    ) -> None:
        if self.dispatcher is not None:
            self.dispatcher.redeliver_unacknowledged(consumer, request)

    # -- acknowledgements -----------------------------------------------------------------

    def acknowledge(
        self,
        consumer: ServerConsumer | None,
        positions: Iterable[Position],
        *,
        cumulative: bool = False,
        ack_sets: dict[Position, tuple[int, int]] | None = None,
    ) -> None:
        """Apply an ack command.

        ``ack_sets`` maps a position to ``(unacked_bits, batch_size)`` for batch-index acks;
        they are honoured only when both the broker and the consumer enable batch-index
        acks, otherwise the entry is acknowledged whole, as Pulsar's broker does.
        """
        if type(positions) is not list:  # read, never kept: a list is used as it is
            positions = list(positions)
        last = self.topic.ledger.last_confirmed
        if positions and max(positions) > last:  # find the first offender only when one is
            position = next(p for p in positions if p > last)
            raise InvalidArgument(
                f"ack for {position[0]}:{position[1]} is beyond the last entry "
                f"{last[0]}:{last[1]} of {self.topic.name}"
            )
        if cumulative:
            if len(positions) != 1:
                raise InvalidArgument("a cumulative ack carries exactly one message id")
            if self.sub_type in (SubType.Shared, SubType.Key_Shared):
                # Consumer.messageAcked: warn and ignore, no error to the client.
                log.warning(
                    "[%s] [%s] Received cumulative ack on %s subscription, ignoring",
                    self.topic.name, self.name, self.sub_type,
                )
                return
            position = positions[0]
            ack_set = (ack_sets or {}).get(position)
            batch_acks = consumer is not None and self.batch_index_ack_enabled(consumer)
            if ack_set is not None and batch_acks:
                moved = self.cursor.mark_delete(self.topic.ledger.previous_position(position))
                self.cursor.delete_batch_indexes(position, ack_set[0], ack_set[1])
            else:
                moved = self.cursor.mark_delete(position)
            self.emit(EventType.ACKED, consumer, positions=[list(position)], cumulative=True)
            self._after_ack([], moved, consumer)
            return
        moved = False
        batch_acks = (
            bool(ack_sets) and consumer is not None and self.batch_index_ack_enabled(consumer)
        )
        if batch_acks:
            full: list[Position] = []
            for position in positions:
                ack_set = ack_sets.get(position)
                if ack_set is not None:
                    moved |= self.cursor.delete_batch_indexes(position, ack_set[0], ack_set[1])
                    if self.cursor.is_deleted(position):
                        full.append(position)
                else:
                    full.append(position)
        else:
            full = positions  # every entry acknowledged whole
        moved |= self.cursor.delete(full)
        if self.listening:
            self.emit(
                EventType.ACKED,
                consumer,
                positions=[list(p) for p in positions],
                cumulative=False,
                batch_index=batch_acks,
            )
        self._after_ack(full, moved, consumer)

    def acknowledge_by_broker(self, positions: list[Position]) -> None:
        """Acks the broker makes itself (filtered or corrupt entries)."""
        moved = self.cursor.delete(positions)
        self._after_ack(positions, moved)

    def mark_delete_by_broker(self, position: Position) -> None:
        """Cumulative acks the broker makes itself (expiry, skip)."""
        self._after_ack([], self.cursor.mark_delete(position))

    def _after_ack(
        self, positions: list[Position], mark_delete_moved: bool,
        acker: ServerConsumer | None = None,
    ) -> None:
        if self.dispatcher is not None:
            # The acker's messageAckRate counts the messages its ack took off its own
            # unacked ones: one subtraction per ack command, none per message.
            before = acker.unacked_messages if acker is not None else 0
            self.dispatcher.on_acknowledged(positions)
            if mark_delete_moved:
                self.dispatcher.on_mark_delete_moved()
            if acker is not None:
                acker.msg_ack_counter += before - acker.unacked_messages
        if acker is not None or mark_delete_moved:
            now = self.context.now_ms()
            if acker is not None:
                acker.last_acked_timestamp = now
            if mark_delete_moved:
                self.last_mark_delete_advanced_timestamp = now
        if mark_delete_moved and self.listening:
            md = self.cursor.mark_delete_position
            self.emit(
                EventType.CURSOR_MOVED,
                mark_delete=list(md),
                read_position=list(self.cursor.read_position),
                individually_deleted=str(self.cursor.individually_deleted),
            )
        if self.dispatcher is not None:
            self.dispatcher.dispatch()
        if mark_delete_moved and self.topic.held_sends:
            self.topic.release_held_sends()
        if self.topic.ledger.terminated_position is not None:
            self.check_end_of_topic()

    def check_end_of_topic(self) -> None:
        """Tell the consumers they reached the end of the terminated topic, once each.

        Pulsar's rule (``PersistentSubscription.acknowledgeMessage``, the dispatchers'
        ``notifyConsumersEndOfTopic`` and their ``readEntriesFailed`` on
        ``NoMoreEntriesToReadException``): only when the ledger is terminated and the
        subscription's backlog is empty, i.e. everything up to the terminated position is
        acknowledged. Checked at termination, after acks, on subscribe and after a seek.
        """
        if self.dispatcher is None or self.topic.ledger.terminated_position is None:
            return
        if self.cursor.number_of_entries_in_backlog() > 0:
            return
        for consumer in self.dispatcher.consumers:
            if not consumer.reached_end_of_topic:
                consumer.reached_end_of_topic = True
                self.context.push(ReachedEndOfTopic(consumer.consumer_id, consumer.conn))

    # -- cursor control -------------------------------------------------------------------

    def reset_cursor(self, position: Position) -> None:
        """Move the cursor so ``position`` is read next (admin reset-cursor / consumer seek)."""
        self.cursor.reset(position)
        if self.dispatcher is not None:
            for consumer in self.dispatcher.consumers:
                consumer.take_all_pending()
            self.dispatcher.on_unacked_changed()
            self.dispatcher.cursor_is_reset()
        self.emit(
            EventType.CURSOR_REWOUND,
            read_position=list(self.cursor.read_position),
            mark_delete=list(self.cursor.mark_delete_position),
        )
        if self.dispatcher is not None:
            self.dispatcher.dispatch()
            for consumer in self.dispatcher.consumers:
                consumer.reached_end_of_topic = False
            self.check_end_of_topic()

    def position_for_publish_time(
        self, publish_time: int, start: Position | None = None
    ) -> Position:
        """The first entry from ``start`` published at or after ``publish_time`` (or the end)."""
        return self.cursor.find_position_by_publish_time(publish_time, start)

    def reset_cursor_by_publish_time(self, publish_time: int) -> None:
        """Seek / reset-cursor by time: read next the first entry published at or after it."""
        self.reset_cursor(self.position_for_publish_time(publish_time))

    def skip_messages(self, count: int) -> None:
        """Acknowledge the next ``count`` unacknowledged entries (admin skip)."""
        chosen = list(itertools.islice(self.cursor.iter_unacked(), count))
        if chosen:
            self.acknowledge_by_broker(chosen)

    def skip_all_messages(self) -> None:
        """Acknowledge the whole backlog (Pulsar's skip-all / clear-backlog)."""
        last = self.topic.ledger.last_confirmed
        if last > self.cursor.mark_delete_position:
            self.mark_delete_by_broker(last)

    def peek_messages(self, count: int) -> list[tuple[Position, bytes]]:
        """The next ``count`` unacknowledged entries, without moving anything."""
        out: list[tuple[Position, bytes]] = []
        read_entry = self.topic.ledger.read_entry
        for position in self.cursor.iter_unacked():
            if len(out) >= count:
                break
            data = read_entry(position)
            if data is not None:
                out.append((position, data))
        return out

    def expire_messages(self, ttl_seconds: int, now_ms: int) -> None:
        """Mark-delete past every entry older than ``ttl_seconds`` (delayed ones included)."""
        limit = now_ms - ttl_seconds * 1000
        ledger = self.topic.ledger
        start = ledger.next_position(self.cursor.mark_delete_position)
        end = self.position_for_publish_time(limit + 1, start)
        last = ledger.previous_position(end)
        if last > self.cursor.mark_delete_position:
            expired = ledger.count_entries(start, last)
            self.total_msg_expired += expired
            self.last_expire_timestamp = now_ms
            self.mark_delete_by_broker(last)
            self.context.emit(EventType.EXPIRED, self.topic.name, self.name, None,
                              up_to=list(last), entries=expired, ttl_seconds=ttl_seconds)

    def on_new_entries(self) -> None:
        if self.dispatcher is not None:
            self.dispatcher.dispatch()

    def tick(self, now_ms: int) -> None:
        if self.dispatcher is not None:
            self.dispatcher.tick(now_ms)

    def close(self) -> None:
        if self.dispatcher is not None:
            self.dispatcher.close()

    # -- stats ----------------------------------------------------------------------------

    def update_rates(self, now_ms: int) -> None:
        for consumer in self.consumers:
            consumer.update_rates(now_ms)
        self.msg_expired_rate.calculate(self.total_msg_expired, 0, now_ms)

    def out_counters(self) -> tuple[int, int]:
        """Messages and bytes sent, by its consumers and the ones that left."""
        consumers = self.consumers
        return (
            self.msg_out_from_removed_consumers + sum(c.msg_out_counter for c in consumers),
            self.bytes_out_from_removed_consumers + sum(c.bytes_out_counter for c in consumers),
        )

    def stats(self) -> dict[str, Any]:
        """``SubscriptionStatsImpl``'s fields (``PersistentSubscription.getStats``): rates
        and counters summed over the consumers, plus those of consumers that left."""
        consumers = self.consumers
        dispatcher = self.dispatcher
        active = dispatcher.active_consumer if dispatcher is not None else None
        msg_out, bytes_out = self.out_counters()
        backlog = self.cursor.number_of_entries_in_backlog()
        stats: dict[str, Any] = {
            "msgRateOut": sum(c.msg_out_rate.rate for c in consumers),
            "msgThroughputOut": sum(c.msg_out_rate.value_rate for c in consumers),
            "bytesOutCounter": bytes_out,
            "msgOutCounter": msg_out,
            "msgRateRedeliver": sum(c.msg_redeliver_rate.rate for c in consumers),
            "messageAckRate": sum(c.msg_ack_rate.rate for c in consumers),
            "chunkedMessageRate": 0.0,
            "type": str(self.sub_type) if self.sub_type else None,
            "msgBacklog": backlog,
            "backlogSize": self.topic.estimated_backlog_size(self.cursor.mark_delete_position),
            "unackedMessages": sum(c.unacked_messages for c in consumers),
            "msgRateExpired": self.msg_expired_rate.rate,
            "totalMsgExpired": self.total_msg_expired,
            "lastExpireTimestamp": self.last_expire_timestamp,
            "lastConsumedFlowTimestamp": self.last_consumed_flow_timestamp,
            "lastConsumedTimestamp": max(
                (c.last_consumed_timestamp for c in consumers), default=0
            ),
            "lastAckedTimestamp": max((c.last_acked_timestamp for c in consumers), default=0),
            "lastMarkDeleteAdvancedTimestamp": self.last_mark_delete_advanced_timestamp,
            "isDurable": self.durable,
            "blockedSubscriptionOnUnackedMsgs": bool(
                dispatcher is not None and dispatcher.blocked_dispatcher_on_unacked
            ),
            "activeConsumerName": active.consumer_name if active else None,
            "consumers": [self._consumer_stats(c) for c in consumers],
        }
        stats.update(dispatcher.stats() if dispatcher is not None else {"msgDelayed": 0})
        stats["msgBacklogNoDelayed"] = backlog - stats["msgDelayed"]
        stats.update(self._stats_by_pulsar_defaults(stats))
        return stats

    def _stats_by_pulsar_defaults(self, stats: dict[str, Any]) -> dict[str, Any]:
        """``SubscriptionStatsImpl`` fields with no dispatcher of their own here: what
        Pulsar reports for a subscription without entry filters, geo-replication or dispatch
        rate limits; ``durable`` is the same flag as ``isDurable`` (both are serialized)."""
        out: dict[str, Any] = {
            "durable": self.durable,
            "isReplicated": False,
            "replicated": False,
            "earliestMsgPublishTimeInBacklog": 0,  # only with ?getEarliestTimeInBacklog
            "subscriptionProperties": {},
            "nonContiguousDeletedMessagesRanges": len(self.cursor.individually_deleted),
            "filterProcessedMsgCount": 0,
            "filterAcceptedMsgCount": 0,
            "filterRejectedMsgCount": 0,
            "filterRescheduledMsgCount": 0,
        }
        out["msgInReplay"] = stats.get("msgInReplay", 0)
        out["allowOutOfOrderDelivery"] = stats.get("allowOutOfOrderDelivery", False)
        out["consumersAfterMarkDeletePosition"] = stats.get(
            "consumersAfterMarkDeletePosition", {})
        if self.settings.version().at_least(4, 0):
            for limit in ("Subscription", "Topic", "Broker"):
                out[f"dispatchThrottledMsgEventsBy{limit}Limit"] = 0
                out[f"dispatchThrottledBytesEventsBy{limit}Limit"] = 0
            for key in ("drainingHashesCount", "drainingHashesClearedTotal",
                        "drainingHashesUnackedMessages"):
                out[key] = stats.get(key, 0)
        return out

    def _consumer_stats(self, consumer: ServerConsumer) -> dict[str, Any]:
        out = consumer.msg_out_rate
        stats: dict[str, Any] = {
            "msgRateOut": out.rate,
            "msgThroughputOut": out.value_rate,
            "bytesOutCounter": consumer.bytes_out_counter,
            "msgOutCounter": consumer.msg_out_counter,
            "msgRateRedeliver": consumer.msg_redeliver_rate.rate,
            "messageAckRate": consumer.msg_ack_rate.rate,
            "chunkedMessageRate": 0.0,
            "consumerName": consumer.consumer_name,
            "availablePermits": consumer.permits,
            "unackedMessages": consumer.unacked_messages,
            "blockedConsumerOnUnackedMsgs": consumer.blocked_on_unacked,
            "priorityLevel": consumer.priority_level,
            "address": consumer.address,
            "connectedSince": date_string(consumer.connected_since_ms),
            "clientVersion": consumer.client_version,
            "lastAckedTimestamp": consumer.last_acked_timestamp,
            "lastConsumedTimestamp": consumer.last_consumed_timestamp,
            "lastConsumedFlowTimestamp": consumer.last_consumed_flow_timestamp,
            "lastAckedTime": date_string(consumer.last_acked_timestamp),
            "lastConsumedTime": date_string(consumer.last_consumed_timestamp),
            "metadata": {},
        }
        if self.dispatcher is not None:
            stats.update(self.dispatcher.consumer_stats(consumer))
        if self.settings.version().at_least(4, 0):  # ConsumerStatsImpl of 4.0: 0 unless
            for key in ("drainingHashesCount", "drainingHashesClearedTotal",  # Key_Shared
                        "drainingHashesUnackedMessages"):
                stats.setdefault(key, 0)
        return stats
