"""Observer events: every state change of the core, for stats, widgets and the PUB stream.

Listeners registered with :meth:`BrokerService.add_listener` receive typed events (one frozen
dataclass per :class:`EventType`, all :class:`BrokerEvent`) synchronously, in order. Events
are plain data (``to_dict`` is JSON-able) so the shell can publish them unchanged, and
:func:`decode_event` turns such a map back into the typed event; no event is built when
nobody listens. The client's own kinds (``pulsarlab.broker.client.events``) register their
classes with :func:`event_class` and decode the same way; a type nobody registered (a newer
broker's) decodes to :class:`UnknownEvent`, which readers pass over.

The event stream: the broker's XPUB socket (``Broker.events_url``) publishes each event as
two frames, the event type (utf-8) and its ``to_dict`` map packed with msgpack, so a
subscriber filters by type; the widgets read it (``pulsarlab.widgets.source``). With
authentication on it binds on loopback only and subscribers log in with a token
(:mod:`.zap`). It is the broker's only ZeroMQ socket that does not speak Pulsar frames.
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
    COMPACTED = "compacted"
    COMPACTION_FAILED = "compaction_failed"
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
_EVENT_CLASSES: dict[str, type[BrokerEvent]] = {}


def event_class(type_: StrEnum) -> Callable[[type[BrokerEvent]], type[BrokerEvent]]:
    """Make the decorated class the frozen event of ``type_`` and let :func:`decode_event`
    build it (a type registered twice is a ``ValueError``)."""
    def register(cls: type[BrokerEvent]) -> type[BrokerEvent]:
        if str(type_) in _EVENT_CLASSES:
            raise ValueError(f"event type {str(type_)!r} already has a class")
        cls = dataclass(frozen=True, slots=True, kw_only=True)(cls)
        cls.type = type_
        _EVENT_CLASSES[str(type_)] = cls
        return cls
    return register


PositionList = list[int]  # [ledger, entry] as the event stream carries a position


@event_class(EventType.TOPIC_CREATED)
class TopicCreated(BrokerEvent):
    partitions: int = 0


@event_class(EventType.TOPIC_DELETED)
class TopicDeleted(BrokerEvent):
    pass


@event_class(EventType.TOPIC_TERMINATED)
class TopicTerminated(BrokerEvent):
    position: PositionList | None = None


@event_class(EventType.PRODUCER_ADDED)
class ProducerAdded(BrokerEvent):
    producer: str | None = None


@event_class(EventType.PRODUCER_REMOVED)
class ProducerRemoved(BrokerEvent):
    producer: str | None = None


@event_class(EventType.PUBLISHED)
class Published(BrokerEvent):
    producer: str | None = None
    sequence_id: int | None = None
    position: PositionList | None = None


@event_class(EventType.SUBSCRIPTION_CREATED)
class SubscriptionCreated(BrokerEvent):
    durable: bool = True
    sub_type: str | None = None


@event_class(EventType.SUBSCRIPTION_DELETED)
class SubscriptionDeleted(BrokerEvent):
    pass


@event_class(EventType.CONSUMER_ADDED)
class ConsumerAdded(BrokerEvent):
    sub_type: str | None = None
    priority_level: int = 0
    consumer_id: int | None = None


@event_class(EventType.CONSUMER_REMOVED)
class ConsumerRemoved(BrokerEvent):
    consumer_id: int | None = None


@event_class(EventType.FLOW)
class Flow(BrokerEvent):
    permits: int = 0
    total: int = 0


@event_class(EventType.DISPATCHED)
class Dispatched(BrokerEvent):
    entries: list[list[int]] = field(default_factory=list)
    """``[ledger, entry, redelivery_count]`` per entry sent."""


@event_class(EventType.FILTERED)
class Filtered(BrokerEvent):
    positions: list[PositionList] = field(default_factory=list)


@event_class(EventType.ACKED)
class Acked(BrokerEvent):
    positions: list[PositionList] = field(default_factory=list)
    cumulative: bool = False
    batch_index: bool | None = None


@event_class(EventType.REDELIVERY_REQUESTED)
class RedeliveryRequested(BrokerEvent):
    positions: list[PositionList] = field(default_factory=list)
    counts: list[int] | None = None
    reason: str | None = None
    requested_at: list[int] | None = None


@event_class(EventType.ACTIVE_CONSUMER_CHANGED)
class ActiveConsumerChanged(BrokerEvent):
    previous: str | None = None
    active: str | None = None


@event_class(EventType.CURSOR_MOVED)
class CursorMoved(BrokerEvent):
    mark_delete: PositionList | None = None
    read_position: PositionList | None = None
    individually_deleted: str | None = None


@event_class(EventType.CURSOR_REWOUND)
class CursorRewound(BrokerEvent):
    read_position: PositionList | None = None
    mark_delete: PositionList | None = None


@event_class(EventType.LEDGER_ROLLED_OVER)
class LedgerRolledOver(BrokerEvent):
    closed: int | None = None
    opened: int | None = None


@event_class(EventType.COMPACTED)
class Compacted(BrokerEvent):
    """A compaction finished: its horizon, and how many entries it kept and removed."""

    horizon: PositionList | None = None
    kept: int | None = None
    removed: int | None = None


@event_class(EventType.COMPACTION_FAILED)
class CompactionFailed(BrokerEvent):
    error: str | None = None


@event_class(EventType.LEDGERS_TRIMMED)
class LedgersTrimmed(BrokerEvent):
    ledgers: list[int] = field(default_factory=list)


@event_class(EventType.CORRUPT_ENTRY_SKIPPED)
class CorruptEntrySkipped(BrokerEvent):
    position: PositionList | None = None
    reason: str | None = None


@event_class(EventType.DELAYED)
class Delayed(BrokerEvent):
    position: PositionList | None = None
    deliver_at: int | None = None


@event_class(EventType.EXPIRED)
class Expired(BrokerEvent):
    up_to: PositionList | None = None
    entries: int = 0
    ttl_seconds: int = 0


@event_class(EventType.DEDUPLICATED)
class Deduplicated(BrokerEvent):
    producer: str | None = None
    sequence_id: int | None = None
    original: PositionList | None = None


@event_class(EventType.DROPPED)
class Dropped(BrokerEvent):
    positions: list[PositionList] = field(default_factory=list)


@event_class(EventType.BACKLOG_QUOTA_EXCEEDED)
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


@event_class(EventType.DEAD_LETTERED)
class DeadLettered(_Hop):
    pass


@event_class(EventType.RETRIED)
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


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownEvent(BrokerEvent):
    """A map :func:`decode_event` has no class for (a newer broker's type) or that does not
    fit its type's class: its type as sent and the map itself, for logs; views skip it."""

    event_type: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.raw)


def decode_event(values: Mapping[str, Any]) -> BrokerEvent:
    """The typed event of a ``to_dict`` map (as the event stream carries it): the class
    registered for its ``type`` (fields it does not have are dropped), else an
    :class:`UnknownEvent` (also for a map whose time, topic, subscription or consumer has
    the wrong type)."""
    name = values.get("type")
    common = _common_fields(values)
    cls = _EVENT_CLASSES.get(name) if isinstance(name, str) else None
    if cls is None or common is None:
        return UnknownEvent(**(common or {"time_ms": 0, "topic": ""}), event_type=str(name),
                            raw=dict(values))
    known = {f.name for f in fields(cls)[_COMMON:]}
    return cls(**common, **{k: v for k, v in values.items() if k in known})


def _common_fields(values: Mapping[str, Any]) -> dict[str, Any] | None:
    """The fields every event has, from a map; ``None`` where one has the wrong type."""
    time_ms, topic = values.get("time") or 0, values.get("topic") or ""
    subscription, consumer = values.get("subscription"), values.get("consumer")
    names_ok = all(v is None or isinstance(v, str) for v in (subscription, consumer))
    if type(time_ms) is not int or not isinstance(topic, str) or not names_ok:
        return None
    return {"time_ms": time_ms, "topic": topic, "subscription": subscription,
            "consumer": consumer}


EventListener = Callable[[BrokerEvent], None]
