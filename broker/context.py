"""``CoreContext``: what a topic, subscription or dispatcher may ask of the broker core.

Children of the core get this narrow view instead of ``BrokerService`` itself: the time,
the settings and a topic's policies, a way to report an event, to queue an action for the
shell, to schedule a timer and to ask for a group commit. ``BrokerService`` implements it;
a test may pass anything with the same members.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .actions import Action
    from .clock import TimerHandle
    from .events import EventType
    from .policies import Policies
    from .settings import BrokerSettings
    from .topic import AbstractTopic


class CoreContext(Protocol):
    """The broker core as its topics, subscriptions and dispatchers see it."""

    settings: BrokerSettings

    def now_ms(self) -> int:
        """The core clock's time (ms since the epoch)."""

    @property
    def has_listeners(self) -> bool:
        """Whether anyone listens to events: callers skip building an event if not."""

    def policies_for(self, topic: AbstractTopic) -> Policies:
        """The policies in force for ``topic``."""

    def emit(
        self,
        type_: EventType,
        topic: str,
        subscription: str | None = None,
        consumer: str | None = None,
        **data: Any,
    ) -> None:
        """Report an event to the listeners."""

    def push(self, action: Action) -> None:
        """Queue an action for the shell (a delivery, a receipt, a notice)."""

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` once ``delay_ms`` have passed on the core clock."""

    def mark_dirty(self, topic: AbstractTopic) -> None:
        """``topic`` has appended entries or receipts waiting for the next group commit."""
