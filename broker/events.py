"""Observer events: every state change of the core, for stats, widgets and the PUB stream.

Listeners registered with :meth:`BrokerService.add_listener` receive typed events (one frozen
dataclass per :class:`EventType`, all :class:`BrokerEvent`) synchronously, in order. Events
are plain data (``to_dict`` is JSON-able) so the shell can publish them unchanged, and
:func:`decode_event` turns such a map back into the typed event; no event is built when
nobody listens.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, ClassVar


class EventType(StrEnum):
    TOPIC_CREATED = "topic_created"
    TOPIC_DELETED = "topic_deleted"
    TOPIC_TERMINATED = "topic_terminated"
    PRODUCER_ADDED = "producer_added"
    PRODUCER_REMOVED = "producer_removed"
    PUBLISHED = "published"
    SUBSCRIPTION_CREATED = "subscription_created"
    SUBSCRIPTION_DELETED = "subscription_deleted"
    CONSUMER_ADDED = "consumer_added"
    CONSUMER_REMOVED = "consumer_removed"
    FLOW = "flow"
    DISPATCHED = "dispatched"
    FILTERED = "filtered"
    ACKED = "acked"
    REDELIVERY_REQUESTED = "redelivery_requested"
    ACTIVE_CONSUMER_CHANGED = "active_consumer_changed"
    CURSOR_MOVED = "cursor_moved"
    CURSOR_REWOUND = "cursor_rewound"
    LEDGER_ROLLED_OVER = "ledger_rolled_over"
    LEDGERS_TRIMMED = "ledgers_trimmed"
    CORRUPT_ENTRY_SKIPPED = "corrupt_entry_skipped"
    DELAYED = "delayed"
    EXPIRED = "expired"
    DEDUPLICATED = "deduplicated"
    DROPPED = "dropped"
    BACKLOG_QUOTA_EXCEEDED = "backlog_quota_exceeded"
    DEAD_LETTERED = "dead_lettered"
    RETRIED = "retried"


@dataclass(frozen=True, slots=True)
class BrokerEvent:
    """One state change, stamped with the core's clock; each type adds its own fields."""

    type: ClassVar[EventType]
    time_ms: int
    topic: str
    subscription: str | None = None
    consumer: str | None = None

    @property
    def data(self) -> dict[str, Any]:
        """The type's own fields (what ``to_dict`` adds to the common ones)."""
        return {f.name: getattr(self, f.name) for f in fields(self)[_COMMON:]}

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": str(self.type),
            "time": self.time_ms,
            "topic": self.topic,
            "subscription": self.subscription,
            "consumer": self.consumer,
            **self.data,
        }


_COMMON = 4  # time_ms, topic, subscription, consumer
_EVENT_CLASSES: dict[EventType, type[BrokerEvent]] = {}


def _event(type_: EventType) -> Callable[[type[BrokerEvent]], type[BrokerEvent]]:
    def register(cls: type[BrokerEvent]) -> type[BrokerEvent]:
        cls = dataclass(frozen=True, slots=True, kw_only=True)(cls)
        cls.type = type_
        _EVENT_CLASSES[type_] = cls
        return cls
    return register


PositionList = list[int]  # [ledger, entry] as the event stream carries a position


@_event(EventType.TOPIC_CREATED)
class TopicCreated(BrokerEvent):
    partitions: int = 0


@_event(EventType.TOPIC_DELETED)
class TopicDeleted(BrokerEvent):
    pass


@_event(EventType.TOPIC_TERMINATED)
class TopicTerminated(BrokerEvent):
    position: PositionList | None = None


@_event(EventType.PRODUCER_ADDED)
class ProducerAdded(BrokerEvent):
    producer: str | None = None


@_event(EventType.PRODUCER_REMOVED)
class ProducerRemoved(BrokerEvent):
    producer: str | None = None


@_event(EventType.PUBLISHED)
class Published(BrokerEvent):
    producer: str | None = None
    sequence_id: int | None = None
    position: PositionList | None = None


@_event(EventType.SUBSCRIPTION_CREATED)
class SubscriptionCreated(BrokerEvent):
    durable: bool = True
    sub_type: str | None = None


@_event(EventType.SUBSCRIPTION_DELETED)
class SubscriptionDeleted(BrokerEvent):
    pass


@_event(EventType.CONSUMER_ADDED)
class ConsumerAdded(BrokerEvent):
    sub_type: str | None = None
    priority_level: int = 0
    consumer_id: int | None = None


@_event(EventType.CONSUMER_REMOVED)
class ConsumerRemoved(BrokerEvent):
    consumer_id: int | None = None


@_event(EventType.FLOW)
class Flow(BrokerEvent):
    permits: int = 0
    total: int = 0


@_event(EventType.DISPATCHED)
class Dispatched(BrokerEvent):
    entries: list[list[int]] = field(default_factory=list)
    """``[ledger, entry, redelivery_count]`` per entry sent."""


@_event(EventType.FILTERED)
class Filtered(BrokerEvent):
    positions: list[PositionList] = field(default_factory=list)


@_event(EventType.ACKED)
class Acked(BrokerEvent):
    positions: list[PositionList] = field(default_factory=list)
    cumulative: bool = False
    batch_index: bool | None = None


@_event(EventType.REDELIVERY_REQUESTED)
class RedeliveryRequested(BrokerEvent):
    positions: list[PositionList] = field(default_factory=list)
    counts: list[int] | None = None
    reason: str | None = None
    requested_at: list[int] | None = None


@_event(EventType.ACTIVE_CONSUMER_CHANGED)
class ActiveConsumerChanged(BrokerEvent):
    previous: str | None = None
    active: str | None = None


@_event(EventType.CURSOR_MOVED)
class CursorMoved(BrokerEvent):
    mark_delete: PositionList | None = None
    read_position: PositionList | None = None
    individually_deleted: str | None = None


@_event(EventType.CURSOR_REWOUND)
class CursorRewound(BrokerEvent):
    read_position: PositionList | None = None
    mark_delete: PositionList | None = None


@_event(EventType.LEDGER_ROLLED_OVER)
class LedgerRolledOver(BrokerEvent):
    closed: int | None = None
    opened: int | None = None


@_event(EventType.LEDGERS_TRIMMED)
class LedgersTrimmed(BrokerEvent):
    ledgers: list[int] = field(default_factory=list)


@_event(EventType.CORRUPT_ENTRY_SKIPPED)
class CorruptEntrySkipped(BrokerEvent):
    position: PositionList | None = None
    reason: str | None = None


@_event(EventType.DELAYED)
class Delayed(BrokerEvent):
    position: PositionList | None = None
    deliver_at: int | None = None


@_event(EventType.EXPIRED)
class Expired(BrokerEvent):
    up_to: PositionList | None = None
    entries: int = 0
    ttl_seconds: int = 0


@_event(EventType.DEDUPLICATED)
class Deduplicated(BrokerEvent):
    producer: str | None = None
    sequence_id: int | None = None
    original: PositionList | None = None


@_event(EventType.DROPPED)
class Dropped(BrokerEvent):
    positions: list[PositionList] = field(default_factory=list)


@_event(EventType.BACKLOG_QUOTA_EXCEEDED)
class BacklogQuotaExceeded(BrokerEvent):
    producer: str | None = None
    sequence_id: int | None = None
    policy: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Hop(BrokerEvent):
    """A message a client moved to a retry or dead-letter topic (from its properties)."""

    position: PositionList | None = None
    origin_message_id: str | None = None
    real_topic: str | None = None
    reconsume_times: str | None = None
    delay_time: str | None = None


@_event(EventType.DEAD_LETTERED)
class DeadLettered(_Hop):
    pass


@_event(EventType.RETRIED)
class Retried(_Hop):
    pass


def make_event(
    type_: EventType,
    time_ms: int,
    topic: str,
    subscription: str | None = None,
    consumer: str | None = None,
    **data: Any,
) -> BrokerEvent:
    """The typed event of ``type_`` (a field it does not have is a ``TypeError``)."""
    return _EVENT_CLASSES[type_](
        time_ms=time_ms, topic=topic, subscription=subscription, consumer=consumer, **data
    )


def decode_event(values: Mapping[str, Any]) -> BrokerEvent | None:
    """The typed event of a ``to_dict`` map (as the event stream carries it); ``None`` for a
    type the broker does not emit (the client's own events) or a map that does not fit."""
    try:
        cls = _EVENT_CLASSES[EventType(values.get("type"))]
    except ValueError:
        return None
    known = {f.name for f in fields(cls)[_COMMON:]}
    try:
        return cls(
            time_ms=int(values.get("time") or 0),
            topic=values.get("topic") or "",
            subscription=values.get("subscription"),
            consumer=values.get("consumer"),
            **{k: v for k, v in values.items() if k in known},
        )
    except TypeError:
        return None


EventListener = Callable[[BrokerEvent], None]
