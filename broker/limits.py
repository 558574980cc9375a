"""Limits against abuse: connections, producers and consumers per connection, topics.

Each check raises the error a Pulsar client would see for the matching Pulsar limit, with a
one-line message naming the setting: ``ConnectError`` past ``max_connections`` (Pulsar
closes the connection past brokerMaxConnections), ``ProducerBusy``/``ConsumerBusy`` past the
per-connection producer/consumer limits (as for maxProducersPerTopic and
maxConsumersPerSubscription), ``NotAllowedError`` past ``max_topics`` or
``max_topics_per_namespace`` (as for maxTopicsPerNamespace). A limit of 0 means none.
Frame size is bounded elsewhere: the ROUTER socket drops peers sending a message larger than
``max_message_size`` plus 1 MiB of headers, and the core refuses payloads over
``max_message_size`` with ``MessageTooBig``.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import ConsumerBusy, NotAllowed, ProducerBusy, TooManyConnections
from .settings import BrokerSettings
from .topic_name import TopicName

__all__ = ["check_connections", "check_consumers", "check_producers", "check_topic_quota"]


def check_connections(settings: BrokerSettings, open_connections: int) -> None:
    """Refuse a connection beyond ``max_connections`` (``open_connections`` includes it)."""
    limit = settings.max_connections
    if limit and open_connections > limit:
        raise TooManyConnections(
            f"connection refused: the broker serves max_connections={limit} connections"
        )


def check_producers(settings: BrokerSettings, open_producers: int) -> None:
    """Refuse one more producer on a connection that has ``open_producers`` already."""
    limit = settings.max_producers_per_connection
    if limit and open_producers >= limit:
        raise ProducerBusy(
            f"this connection has {open_producers} producers open, the limit "
            f"(max_producers_per_connection) is {limit}"
        )


def check_consumers(settings: BrokerSettings, open_consumers: int) -> None:
    """Refuse one more consumer on a connection that has ``open_consumers`` already."""
    limit = settings.max_consumers_per_connection
    if limit and open_consumers >= limit:
        raise ConsumerBusy(
            f"this connection has {open_consumers} consumers open, the limit "
            f"(max_consumers_per_connection) is {limit}"
        )


def check_topic_quota(
    settings: BrokerSettings, existing: Iterable[str], name: TopicName, adding: int = 1
) -> None:
    """Refuse creating ``adding`` topics (partitions) named like ``name`` past the limits."""
    total_limit = settings.max_topics
    ns_limit = settings.max_topics_per_namespace
    if not total_limit and not ns_limit:
        return
    names = list(existing)
    if total_limit and len(names) + adding > total_limit:
        raise NotAllowed(
            f"cannot create {name}: the broker holds {len(names)} topics and max_topics is "
            f"{total_limit}"
        )
    if ns_limit:
        namespace = name.namespace
        in_ns = sum(1 for n in names if TopicName.get(n).namespace == namespace)
        if in_ns + adding > ns_limit:
            raise NotAllowed(
                f"cannot create {name}: namespace {namespace} has {in_ns} topics and "
                f"max_topics_per_namespace is {ns_limit}"
            )
