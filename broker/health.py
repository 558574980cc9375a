"""The broker health check (``brokers/health``), as Pulsar's ``BrokersBase.healthCheck``
runs it: a message published on the broker's heartbeat topic must reach a reader.

The heartbeat topic is ``persistent://pulsar/{host:port}/healthcheck`` (Pulsar's
``TopicVersion.V2`` name; pulsarlab's topic names have no cluster part, so ``V1`` asks for
the same topic). Old subscriptions of that topic are deleted first, as Pulsar does; the
reader and producer are closed again afterwards. Everything happens in one turn of the
broker thread, so a wedged loop, a failing ledger or a dispatcher that does not deliver
shows up as a failed check.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from .consumer import SubType
from .entry import MessageMetadata
from .errors import PulsarLabError
from .message_id import MessageId

if TYPE_CHECKING:
    from .service import BrokerService


class HealthCheckFailed(PulsarLabError):
    """The heartbeat message did not come back."""

    code = "UnknownError"


def heartbeat_topic(broker_id: str) -> str:
    return f"persistent://pulsar/{broker_id}/healthcheck"


def run_health_check(service: BrokerService, topic: str) -> None:
    """Publish one message on ``topic`` and see a reader that started at the end get it."""
    service.get_topic(topic, create=True)
    for name in list(service.get_topic(topic).subscriptions):
        service.delete_subscription(topic, name, force=True)
    payload = str(uuid.uuid4()).encode()
    producer = service.create_producer(topic)
    try:
        reader = service.subscribe(
            topic, f"healthCheck-{uuid.uuid4()}", None, SubType.Exclusive, durable=False,
            is_reader=True, start_message_id=MessageId.latest,
        )
        try:
            service.flow(reader.consumer_id, 1)
            position = service.send(producer.producer_id, MessageMetadata(), payload)
            service.commit()
            if position is None or position not in reader.pending_acks:
                raise HealthCheckFailed(
                    f"the health check message on {topic} did not reach its reader"
                )
        finally:
            service.close_consumer(reader.consumer_id)
    finally:
        service.close_producer(producer.producer_id)
