"""Observer events: every state change of the core, for stats, widgets and the PUB stream.

Listeners registered with :meth:`BrokerService.add_listener` receive :class:`BrokerEvent`
objects synchronously, in order. Events are plain data (``to_dict`` is JSON-able) so the
shell can publish them unchanged; no event is built when nobody listens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


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
    """One state change, stamped with the core's clock."""

    type: EventType
    time_ms: int
    topic: str
    subscription: str | None = None
    consumer: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": str(self.type),
            "time": self.time_ms,
            "topic": self.topic,
            "subscription": self.subscription,
            "consumer": self.consumer,
            **self.data,
        }


EventListener = Callable[[BrokerEvent], None]
