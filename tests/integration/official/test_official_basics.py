"""The official pulsar-client over pulsar://, beyond the rules every face shares (those are in
tests/integration/behaviour/): every subscription type with batches, key-based batches,
sticky ranges, batch-index acks, regex subscriptions, partitions, compression, chunks."""

from __future__ import annotations

import re

import pulsar
import pytest

from .conftest import WAIT_MS, drain, unique


@pytest.mark.parametrize(
    "sub_type",
    [pulsar.ConsumerType.Exclusive, pulsar.ConsumerType.Failover,
     pulsar.ConsumerType.Shared, pulsar.ConsumerType.KeyShared],
)
def test_every_subscription_type_delivers_everything_once(
    client: pulsar.Client, sub_type: pulsar.ConsumerType
) -> None:
    topic = unique("off-types")
    consumer = client.subscribe(topic, "s", consumer_type=sub_type)
    producer = client.create_producer(topic, batching_enabled=True,
                                      batching_max_publish_delay_ms=1)
    for i in range(200):
        producer.send_async(f"{i}".encode(), None, partition_key=f"k{i % 7}")
    producer.flush()
    first = consumer.receive(timeout_millis=WAIT_MS)  # Failover: after the failover delay
    consumer.acknowledge(first)
    values = sorted(int(m.data()) for m in [first, *drain(consumer)])
    assert values == list(range(200))


def test_key_shared_key_based_batches_keep_each_key_on_one_consumer(
    client: pulsar.Client,
) -> None:
    topic = unique("off-ks")
    consumers = [
        client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.KeyShared,
                         consumer_name=f"c{i}")
        for i in range(3)
    ]
    producer = client.create_producer(
        topic, batching_enabled=True, batching_type=pulsar.BatchingType.KeyBased,
        batching_max_publish_delay_ms=1,
    )
    for i in range(300):
        producer.send_async(f"{i}".encode(), None, partition_key=f"key-{i % 20}")
    producer.flush()
    owners: dict[str, set[int]] = {}
    total = 0
    for index, consumer in enumerate(consumers):
        for msg in drain(consumer):
            owners.setdefault(msg.partition_key(), set()).add(index)
            total += 1
    assert total == 300
    assert all(len(o) == 1 for o in owners.values())


def test_key_shared_sticky_ranges(client: pulsar.Client) -> None:
    topic = unique("off-sticky")
    policy = pulsar.ConsumerKeySharedPolicy(
        pulsar.KeySharedMode.Sticky, sticky_ranges=[(0, 32767)]
    )
    low = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.KeyShared,
                           key_shared_policy=policy)
    high = client.subscribe(
        topic, "s", consumer_type=pulsar.ConsumerType.KeyShared,
        key_shared_policy=pulsar.ConsumerKeySharedPolicy(
            pulsar.KeySharedMode.Sticky, sticky_ranges=[(32768, 65535)]
        ),
    )
    producer = client.create_producer(topic)
    for i in range(20):
        producer.send(b"x", partition_key=f"k{i}")
    assert len(drain(low)) + len(drain(high)) == 20
    with pytest.raises(pulsar.PulsarException):
        client.subscribe(
            topic, "s", consumer_type=pulsar.ConsumerType.KeyShared,
            key_shared_policy=pulsar.ConsumerKeySharedPolicy(
                pulsar.KeySharedMode.Sticky, sticky_ranges=[(100, 200)]
            ),
        )


def test_batch_index_acks_redeliver_only_the_unacked_messages(client: pulsar.Client) -> None:
    topic = unique("off-batchack")
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                                batch_index_ack_enabled=True)
    producer = client.create_producer(topic, batching_enabled=True,
                                      batching_max_publish_delay_ms=50)
    for i in range(10):
        producer.send_async(f"{i}".encode(), None)
    producer.flush()
    got = [consumer.receive(timeout_millis=WAIT_MS) for _ in range(10)]
    assert len({(m.message_id().ledger_id(), m.message_id().entry_id()) for m in got}) == 1
    for msg in got:
        if int(msg.data()) % 2 == 0:
            consumer.acknowledge(msg)
    consumer.close()
    again = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                             batch_index_ack_enabled=True)
    assert sorted(int(m.data()) for m in drain(again)) == [1, 3, 5, 7, 9]


def test_regex_subscription_finds_matching_topics(client: pulsar.Client) -> None:
    prefix = unique("off-regex")
    producers = [client.create_producer(f"{prefix}-{i}") for i in range(3)]
    client.create_producer(unique("off-other")).send(b"not me")
    consumer = client.subscribe(
        re.compile(f"persistent://public/default/{prefix}-.*"), "s",
        initial_position=pulsar.InitialPosition.Earliest,
    )
    for i, producer in enumerate(producers):
        producer.send(f"{i}".encode())
    assert sorted(m.data() for m in drain(consumer, quiet_ms=500)) == [b"0", b"1", b"2"]


def test_partitioned_topic_round_trip(broker, client: pulsar.Client) -> None:
    topic = unique("off-parts")
    broker.call(lambda service: service.create_partitioned_topic(topic, 3))
    assert len(client.get_topic_partitions(topic)) == 3
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic)
    for i in range(30):
        producer.send(f"{i}".encode(), partition_key=f"k{i}")
    got = drain(consumer)
    assert sorted(int(m.data()) for m in got) == list(range(30))
    assert {m.message_id().partition() for m in got} == {0, 1, 2}


def test_compressed_messages_pass_through(client: pulsar.Client) -> None:
    topic = unique("off-lz4")
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(
        topic, compression_type=pulsar.CompressionType.LZ4, batching_enabled=True,
        batching_max_publish_delay_ms=1,
    )
    for i in range(50):
        producer.send_async(b"payload-%d" % i * 10, None)
    producer.flush()
    assert len(drain(consumer)) == 50


def test_last_message_id_and_unsubscribe(client: pulsar.Client) -> None:
    topic = unique("off-last")
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic)
    last = [producer.send(b"x") for _ in range(3)][-1]
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert reader.has_message_available()
    drain(consumer)
    consumer.unsubscribe()
    assert last.entry_id() == 2


def test_deleting_a_topic_closes_its_clients_which_reconnect(broker, client) -> None:
    topic = unique("off-deleted")
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic)
    producer.send(b"before")
    consumer.acknowledge(consumer.receive(timeout_millis=WAIT_MS))
    broker.call(lambda service: service.delete_topic(topic, force=True))
    # CLOSE_PRODUCER / CLOSE_CONSUMER: both reconnect (the topic is created again).
    producer.send(b"after")
    assert consumer.receive(timeout_millis=WAIT_MS).data() == b"after"


def test_chunked_messages_are_reassembled(client: pulsar.Client) -> None:
    topic = unique("off-chunks")
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic, chunking_enabled=True, batching_enabled=False)
    big = bytes(range(256)) * 30_000  # 7.7 MB: above the 5 MiB max message size
    producer.send(big)
    msg = consumer.receive(timeout_millis=WAIT_MS)
    assert msg.data() == big
    consumer.acknowledge(msg)
    assert drain(consumer) == []


def test_non_persistent_topic_and_cumulative_ack(client: pulsar.Client) -> None:
    np_topic = f"non-persistent://public/default/{unique('off-np')}"
    np_consumer = client.subscribe(np_topic, "s")
    client.create_producer(np_topic).send(b"now")
    assert np_consumer.receive(timeout_millis=WAIT_MS).data() == b"now"
    topic = unique("off-cumulative")
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Failover)
    producer = client.create_producer(topic)
    for i in range(5):
        producer.send(f"{i}".encode())
    last = [consumer.receive(timeout_millis=WAIT_MS) for _ in range(5)][-1]
    consumer.acknowledge_cumulative(last)
    consumer.close()
    again = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Failover)
    assert drain(again) == []


