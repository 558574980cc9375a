"""Driver-side planning over Pulsar's binary protocol, for a cluster given without ``admin.url``.

A ``pulsar://`` (or ``pulsar+ssl://``) ``service.url`` with no ``admin.url`` — a broker with no
admin REST API, such as pulsar-lite, or one the driver may not reach over HTTP — is planned
with pulsarlab's own client, which speaks the protocol the executors read with:

- a topic's partitions: ``PARTITIONED_METADATA`` (:meth:`Client.get_topic_partitions`);
- the topics a ``topicsPattern`` selects: ``GET_TOPICS_OF_NAMESPACE``
  (:meth:`Client.get_topics_of_namespace`);
- a partition's last entry: ``GET_LAST_MESSAGE_ID`` on a planning reader — a non-durable
  reader at ``latest`` that never reads (receiver queue 1: it holds at most one message)
  kept open per partition while the query runs, so a micro-batch costs one round trip per
  partition and no subscription, and closed with the query.

What the admin REST API gives and this cannot: the ledger list (internal stats), so
``maxOffsetsPerTrigger`` counts only the entries of each partition's current ledger (exact
while a micro-batch's range lies in one ledger; a range that crosses a ledger roll-over also
reads the rest of the older ledgers in full); and whether a topic exists without touching it
(a planning reader is a subscription, so a broker that auto-creates topics creates a missing
topic empty, and it reads as empty rather than as ``topic ... does not exist``).
"""

from __future__ import annotations

import logging
from typing import Any

from ..broker.message_id import MessageId
from .options import ClientSecurity

__all__ = ["BinaryLookup"]

log = logging.getLogger("pulsarlab.spark")

PLANNER_PREFIX = "spark-planner"
"""``subscription_role_prefix`` of the planning readers (their subscriptions read
``spark-planner-reader-<random>`` in a topic's stats)."""


_NO_MESSAGES = "Topic has no messages"


class BinaryLookup:
    """Partitions, namespace listings and last message ids from a broker's pulsar:// port."""

    def __init__(self, service_url: str, timeout_ms: int, security: ClientSecurity) -> None:
        from ..broker.client import Client

        self.service_url = service_url
        self.client = Client(
            service_url,
            connection_timeout_ms=timeout_ms,
            operation_timeout_seconds=max(1, timeout_ms // 1000),
            **security.client_kwargs(),
        )
        self._readers: dict[str, Any] = {}
        log.info(
            "planning %s over Pulsar's binary protocol (no admin.url): partitions, namespace "
            "listings and last message ids only; without the ledger list maxOffsetsPerTrigger "
            "counts entries of each partition's current ledger, and a missing topic reads as "
            "empty (a broker that auto-creates topics creates it)", service_url,
        )

    def topics_of_namespace(self, namespace: str) -> list[str]:
        return self.client.get_topics_of_namespace(namespace)

    def partitions(self, topic: str) -> list[str]:
        """The partition topics of ``topic`` (``[topic]`` when it is not partitioned)."""
        return self.client.get_topic_partitions(topic)

    def last_message_id(self, topic: str) -> MessageId | None:
        """The last message of one partition topic; None when it holds nothing."""
        from ..broker.client.exceptions import UnknownError

        reader = self._readers.get(topic)
        if reader is None:
            # inclusive: no GET_LAST_MESSAGE_ID at creation (the reader never reads)
            reader = self.client.create_reader(
                topic, MessageId.latest, receiver_queue_size=1,
                subscription_role_prefix=PLANNER_PREFIX, start_message_id_inclusive=True,
            )
            self._readers[topic] = reader
        try:
            last = reader.get_last_message_id()
        except UnknownError as exc:
            if _NO_MESSAGES in str(exc):  # pulsar-lite's answer for an empty topic
                return None
            raise
        if last.ledger_id() < 0 or last.entry_id() < 0:  # Pulsar's answer: entry -1
            return None
        return last

    def keep_only(self, topics: set[str]) -> None:
        """Close the planning readers of partitions no longer read (a topic left a pattern)."""
        for name in [t for t in self._readers if t not in topics]:
            self._readers.pop(name).close()

    def close(self) -> None:
        self._readers.clear()
        self.client.close()  # closes its readers too
