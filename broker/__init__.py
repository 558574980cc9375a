"""pulsarlab's broker: Apache Pulsar 3.3's messaging model, sans-I/O core first.

``BrokerService`` is the core (topics, managed ledgers, cursors, subscriptions,
dispatchers, selectors); storage backends live in ``pulsarlab.broker.storage``.
"""

from importlib import import_module
from typing import Any

# Lazy (PEP 562): ``import pulsarlab.broker.client`` must not load the core or the server.
_EXPORTS = {
    "Clock": ".clock", "ManualClock": ".clock", "WallClock": ".clock",
    "KeySharedMeta": ".consumer", "KeySharedMetaMode": ".consumer",
    "ServerConsumer": ".consumer", "SubType": ".consumer",
    "MessageMetadata": ".entry", "PulsarLabError": ".errors",
    "BrokerEvent": ".events", "EventType": ".events", "MessageId": ".message_id",
    "BrokerService": ".service", "BrokerSettings": ".settings", "TopicName": ".topic_name",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module, __name__), name)


__all__ = [
    "BrokerEvent",
    "BrokerService",
    "BrokerSettings",
    "Clock",
    "EventType",
    "KeySharedMeta",
    "KeySharedMetaMode",
    "ManualClock",
    "MessageId",
    "MessageMetadata",
    "PulsarLabError",
    "ServerConsumer",
    "SubType",
    "TopicName",
    "WallClock",
]
