"""pulsarlab's broker: Apache Pulsar 3.3's messaging model, sans-I/O core first.

``BrokerService`` is the core (topics, managed ledgers, cursors, subscriptions,
dispatchers, selectors); storage backends live in ``pulsarlab.broker.storage``.
"""

from .clock import Clock, ManualClock, WallClock
from .consumer import KeySharedMeta, KeySharedMetaMode, ServerConsumer, SubType
from .entry import MessageMetadata
from .errors import PulsarLabError
from .events import BrokerEvent, EventType
from .message_id import MessageId
from .service import BrokerService
from .settings import BrokerSettings
from .topic_name import TopicName

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
