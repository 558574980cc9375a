"""The client's own event kinds: what a consumer decides about redelivery on its side.

A negative ack, an ack timeout and the back-off that schedules a redelivery happen in the
client (:mod:`.redelivery`); the broker only hears of them when the client asks for the
messages again, as a ``REDELIVER_UNACKNOWLEDGED`` whose ``reason`` names the cause
(:data:`REASON_KINDS` maps it to the kind here). Each kind is a frozen event class beside
the broker's (:mod:`pulsarlab.broker.events`), registered with the same ``event_class`` so
``decode_event`` builds it from an event-stream map. Retry and dead-letter hops are the
broker's ``retried`` and ``dead_lettered`` events: the broker sees those messages arrive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar

from ..events import BrokerEvent, PositionList, event_class

__all__ = [
    "REASON_KINDS",
    "AckTimedOut",
    "ClientEvent",
    "ClientEventType",
    "Nacked",
    "RedeliveryScheduled",
]


class ClientEventType(StrEnum):
    NACKED = "nacked"
    ACK_TIMEOUT = "ack_timeout"
    SCHEDULED_REDELIVERY = "scheduled_redelivery"


REASON_KINDS: dict[str, ClientEventType] = {
    "nack": ClientEventType.NACKED,
    "ack_timeout": ClientEventType.ACK_TIMEOUT,
}
"""A redelivery request's ``reason`` (as the client sends it) → the client kind behind it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientEvent(BrokerEvent):
    """One decision of a consumer's client about the entries it names."""

    type: ClassVar[ClientEventType]
    positions: list[PositionList] = field(default_factory=list)


@event_class(ClientEventType.NACKED)
class Nacked(ClientEvent):
    """``negative_acknowledge``: the entries go back after the nack delay (or back-off)."""


@event_class(ClientEventType.ACK_TIMEOUT)
class AckTimedOut(ClientEvent):
    """The ack timeout passed for entries the application received and did not ack."""


@event_class(ClientEventType.SCHEDULED_REDELIVERY)
class RedeliveryScheduled(ClientEvent):
    """The client will ask for the entries again at ``deliver_at`` (ms; the back-off of
    their ``redelivery_count``)."""

    redelivery_count: int = -1
    deliver_at: int | None = None
