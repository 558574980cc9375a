"""Non-persistent topics: memory only, delivered to who is connected now, or dropped.

Pulsar's ``NonPersistentTopic`` stores nothing: a message goes to the consumers connected
at that moment that have permits, is never redelivered, and is lost on restart. Here the
topic keeps the same dispatchers as persistent ones (so every subscription type behaves
the same) over a small in-memory ledger, but every subscription is non-durable, entries
count as acknowledged the moment they are dispatched, and what no consumer could take
right away is dropped (``dropped`` event, ``msgDropCounter`` in stats).
"""

from __future__ import annotations

from typing import Any

from .events import EventType
from .subscription import Subscription
from .topic import AbstractTopic


class NonPersistentTopic(AbstractTopic):
    """A topic whose messages live only while they are being delivered."""

    acks_on_dispatch = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.msg_drop_counter = 0

    def get_or_create_subscription(
        self, name: str, *, durable: bool, earliest: bool, **kwargs: Any
    ) -> tuple[Subscription, bool]:
        # Nothing is kept for anyone: always non-durable, always from now on.
        return super().get_or_create_subscription(name, durable=False, earliest=False)

    def on_entries_confirmed(self) -> None:
        super().on_entries_confirmed()
        for subscription in list(self.subscriptions.values()):
            self._drop_undelivered(subscription)
        self.trim_ledgers()

    def _drop_undelivered(self, subscription: Subscription) -> None:
        dispatcher = subscription.dispatcher
        dropped = dispatcher.take_replay() if dispatcher is not None else []
        cursor = subscription.cursor
        while cursor.has_more_entries():
            dropped.extend(p for p, _ in cursor.read_entries(1000))
        if dropped:
            self.msg_drop_counter += len(dropped)
            subscription.acknowledge_by_broker(dropped)
            subscription.emit(EventType.DROPPED, positions=[list(p) for p in dropped])

    def stats(self) -> dict[str, Any]:
        stats = super().stats()
        stats["msgDropCounter"] = self.msg_drop_counter
        return stats
