"""Key_Shared details as Pulsar 3.3 words and counts them, seen through a ``Client``."""

from __future__ import annotations

import pytest

from pulsarlab import Broker
from pulsarlab.broker.client import (
    Client,
    ConsumerAssignError,
    ConsumerKeySharedPolicy,
    ConsumerType,
    InitialPosition,
    KeySharedMode,
)

from .client_support import receive_n, unique

EARLIEST = InitialPosition.Earliest


@pytest.fixture
def broker():
    with Broker(storage="memory") as b:
        yield b


@pytest.fixture
def client(broker):
    c = Client(broker.service_url, operation_timeout_seconds=10)
    yield c
    c.close()


def sticky(ranges):
    return ConsumerKeySharedPolicy(KeySharedMode.Sticky, sticky_ranges=ranges)


def test_sticky_conflict_names_the_consumer_as_pulsar_prints_it(client):
    topic = unique("sticky-words")
    client.subscribe(topic, "sub", ConsumerType.KeyShared, consumer_name="low",
                     key_shared_policy=sticky([(0, 32767)]))
    with pytest.raises(ConsumerAssignError) as info:
        client.subscribe(topic, "sub", ConsumerType.KeyShared, consumer_name="clash",
                         key_shared_policy=sticky([(100, 200)]))
    message = str(info.value)
    assert "Range conflict with consumer Consumer{subscription=PersistentSubscription{" in message
    assert f"topic=persistent://public/default/{topic}, name=sub}}" in message
    assert "consumerName=low}" in message
    assert "\n" not in message


def test_one_unacked_message_makes_a_joining_consumer_recently_joined(broker, client):
    topic = unique("recently-joined")
    first = client.subscribe(topic, "sub", ConsumerType.KeyShared, consumer_name="A",
                             initial_position=EARLIEST)
    client.create_producer(topic).send(b"m0", partition_key="k")
    receive_n(first, 1, ack=False)
    client.subscribe(topic, "sub", ConsumerType.KeyShared, consumer_name="B")
    internal = broker.call(lambda service: service.internal_stats(topic))
    assert internal["cursors"]["sub"]["numberOfEntriesSinceFirstNotAckedMessage"] == 2
    stats = broker.call(lambda service: service.topic_stats(topic))["subscriptions"]["sub"]
    assert list(stats["consumersAfterMarkDeletePosition"]) == ["B"]
