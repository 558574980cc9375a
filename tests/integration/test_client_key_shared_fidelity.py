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


@pytest.mark.parametrize("version", ["3.3", "3.3.1"])
def test_ring_and_key_hash_ranges_follow_pulsar_version(version):
    from pulsarlab.broker.pulsar_version import PulsarVersion
    from pulsarlab.broker.selectors import consistent_hashing_selector, sticky_key_hash

    with Broker(storage="memory", pulsar_version=version) as broker:
        client = Client(broker.service_url, operation_timeout_seconds=10)
        topic = unique("ring-version")
        consumers = {
            name: client.subscribe(topic, "sub", ConsumerType.KeyShared, consumer_name=name)
            for name in ("C1", "C2")
        }
        stats = broker.call(lambda service: service.topic_stats(topic))
        ranges = {c["consumerName"]: c["keyHashRanges"]
                  for c in stats["subscriptions"]["sub"]["consumers"]}
        counts = sorted(len(r) for r in ranges.values())
        assert counts == ([100, 101] if version == "3.3" else [100, 100])
        assert any(r[-1].endswith(", 2147483646]") for r in ranges.values()) == (
            version == "3.3"
        )
        reference = consistent_hashing_selector(100, PulsarVersion.parse(version))

        class Named:
            def __init__(self, name):
                self.consumer_name = name

        named = {name: Named(name) for name in consumers}
        for probe in named.values():
            reference.add_consumer(probe)
        producer = client.create_producer(topic)
        keys = [f"key-{i}" for i in range(20)]
        for key in keys:
            producer.send(key.encode(), partition_key=key)
        for name, consumer in consumers.items():
            for msg in receive_n(consumer, sum(
                1 for k in keys if reference.select(sticky_key_hash(k.encode())) is named[name]
            )):
                owner = reference.select(sticky_key_hash(msg.partition_key().encode()))
                assert owner is named[name]
        client.close()


def test_sticky_gap_goes_to_the_consumer_on_3_3_8():
    from pulsarlab.broker.selectors import slot, sticky_key_hash

    with Broker(storage="memory", pulsar_version="3.3.8") as broker:
        client = Client(broker.service_url, operation_timeout_seconds=10)
        topic = unique("sticky-gap")
        consumer = client.subscribe(topic, "sub", ConsumerType.KeyShared,
                                    key_shared_policy=sticky([(0, 16383), (32768, 49151)]))
        key = next(k for k in (f"k{i}" for i in range(1000))
                   if 16384 <= slot(sticky_key_hash(k.encode())) <= 32767)
        client.create_producer(topic).send(b"in the gap", partition_key=key)
        (msg,) = receive_n(consumer, 1)
        assert msg.partition_key() == key  # the ≤ 3.3.8 floor/ceiling rule
        client.close()
