"""``RedeliveryRequest``: a consumer asking for unacknowledged messages again, as one value.

It is built and checked once by ``BrokerService.redeliver_unacknowledged`` and handed down
unchanged to the subscription and its dispatcher. ``reason`` and ``requested_at`` (when the
client nacked each message or saw it time out) only travel to the event stream.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import InvalidArgument
from .storage.base import Position

REDELIVERY_REASONS = ("consumer_request", "nack", "ack_timeout")


@dataclass(frozen=True, slots=True)
class RedeliveryRequest:
    """Which messages to send again (``None``: all the consumer's unacknowledged ones)."""

    positions: tuple[Position, ...] | None = None
    reason: str = "consumer_request"
    requested_at: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.reason not in REDELIVERY_REASONS:
            raise InvalidArgument(
                f"redelivery reason must be one of {', '.join(REDELIVERY_REASONS)}, "
                f"not {self.reason!r}"
            )

    def chosen(self, pending: dict[Position, object]) -> tuple[list[Position], list[int] | None]:
        """The requested positions the consumer still owes, in order, and their request
        times where the client gave one per position."""
        if self.positions is None:
            return sorted(pending), self.requested_times()
        chosen = sorted(p for p in self.positions if p in pending)
        requested_at = self.requested_at
        if requested_at is not None and len(requested_at) == len(self.positions):
            times = dict(zip(self.positions, requested_at, strict=True))
            return chosen, [times[p] for p in chosen]
        return chosen, self.requested_times()

    def requested_times(self) -> list[int] | None:
        """``requested_at`` as the event stream carries it."""
        return None if self.requested_at is None else list(self.requested_at)

    def narrowed(self, positions: list[Position]) -> RedeliveryRequest:
        """The same request for ``positions`` only."""
        return RedeliveryRequest(tuple(positions), self.reason, self.requested_at)
