"""The official pulsar-client over pulsar://: produce/consume on the four subscription
types, batches and batch-index acks, nacks, ack timeouts, dead letters, seek, readers."""

from __future__ import annotations

import re
import threading

import pulsar
import pytest

from ..client_support import wait_until_in_line
from .conftest import WAIT_MS, drain, unique


def test_produce_consume_keeps_ids_keys_properties_and_times(client: pulsar.Client) -> None:
    topic = unique("off-basic")
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, producer_name="p-basic")
    sent = [
        producer.send(f"m{i}".encode(), properties={"i": str(i)}, partition_key=f"k{i}",
                      event_timestamp=1000 + i)
        for i in range(5)
    ]
    got = [consumer.receive(timeout_millis=WAIT_MS) for _ in range(5)]
    for i, (mid, msg) in enumerate(zip(sent, got, strict=True)):
        assert msg.data() == f"m{i}".encode()
        assert msg.message_id() == mid
        assert msg.properties() == {"i": str(i)}
        assert msg.partition_key() == f"k{i}"
        assert msg.event_timestamp() == 1000 + i
        assert msg.publish_timestamp() > 0
        consumer.acknowledge(msg)
    assert drain(consumer) == []


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


def test_exclusive_refuses_a_second_consumer(client: pulsar.Client) -> None:
    topic = unique("off-excl")
    client.subscribe(topic, "s")
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "s")


def test_failover_standby_takes_over_unacked_messages(client: pulsar.Client) -> None:
    topic = unique("off-failover")
    first = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Failover,
                             consumer_name="a")
    producer = client.create_producer(topic)
    for i in range(5):
        producer.send(f"{i}".encode())
    got = [first.receive(timeout_millis=WAIT_MS) for _ in range(5)]
    assert [int(m.data()) for m in got] == list(range(5))
    second = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Failover,
                              consumer_name="b")
    first.close()
    redelivered = [second.receive(timeout_millis=WAIT_MS) for _ in range(5)]
    assert [int(m.data()) for m in redelivered] == list(range(5))
    assert [m.message_id() for m in redelivered] == [m.message_id() for m in got]


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


def test_negative_ack_redelivers_with_a_count(client: pulsar.Client) -> None:
    topic = unique("off-nack")
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                                negative_ack_redelivery_delay_ms=100)
    producer = client.create_producer(topic)
    producer.send(b"x")
    msg = consumer.receive(timeout_millis=WAIT_MS)
    assert msg.redelivery_count() == 0
    consumer.negative_acknowledge(msg)
    again = consumer.receive(timeout_millis=WAIT_MS)
    assert again.data() == b"x"
    assert again.redelivery_count() == 1
    assert again.message_id() == msg.message_id()
    consumer.acknowledge(again)


@pytest.mark.slow  # the official client's smallest ack timeout is 10 s
def test_ack_timeout_redelivers(client: pulsar.Client) -> None:
    topic = unique("off-acktimeout")
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                                unacked_messages_timeout_ms=10_000)
    producer = client.create_producer(topic)
    producer.send(b"late")
    first = consumer.receive(timeout_millis=WAIT_MS)
    again = consumer.receive(timeout_millis=15_000)
    assert again.data() == b"late"
    assert again.message_id() == first.message_id()
    assert again.redelivery_count() == 1
    consumer.acknowledge(again)


def test_dead_letter_policy_moves_a_message_after_max_redeliveries(
    client: pulsar.Client,
) -> None:
    topic = unique("off-dlq")
    dlq = f"{topic}-dead"
    dlq_consumer = client.subscribe(dlq, "inspect")
    consumer = client.subscribe(
        topic, "s", consumer_type=pulsar.ConsumerType.Shared,
        negative_ack_redelivery_delay_ms=50,
        dead_letter_policy=pulsar.ConsumerDeadLetterPolicy(
            max_redeliver_count=2, dead_letter_topic=dlq
        ),
    )
    producer = client.create_producer(topic)
    producer.send(b"poison", properties={"why": "test"})
    for _ in range(3):
        msg = consumer.receive(timeout_millis=WAIT_MS)
        consumer.negative_acknowledge(msg)
    dead = dlq_consumer.receive(timeout_millis=WAIT_MS)
    assert dead.data() == b"poison"
    assert dead.properties()["why"] == "test"
    assert "ORIGIN_MESSAGE_ID" in dead.properties()
    dlq_consumer.acknowledge(dead)
    assert drain(consumer, quiet_ms=300) == []


def test_seek_by_message_id_and_by_time(client: pulsar.Client) -> None:
    topic = unique("off-seek")
    consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic)
    ids = [producer.send(f"{i}".encode()) for i in range(5)]
    assert len(drain(consumer)) == 5
    consumer.seek(ids[2])  # the broker rewinds to the id; the client skips the id itself
    assert [m.data() for m in drain(consumer)] == [b"3", b"4"]
    consumer.seek(0)  # publish time 0: everything again
    assert [m.data() for m in drain(consumer)] == [b"0", b"1", b"2", b"3", b"4"]


def test_readers_from_earliest_latest_and_an_id(client: pulsar.Client) -> None:
    topic = unique("off-reader")
    producer = client.create_producer(topic)
    ids = [producer.send(f"{i}".encode()) for i in range(4)]
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert [reader.read_next(WAIT_MS).data() for _ in range(4)] == [b"0", b"1", b"2", b"3"]
    assert not reader.has_message_available()
    from_id = client.create_reader(topic, ids[1])
    assert from_id.read_next(WAIT_MS).data() == b"2"
    inclusive = client.create_reader(topic, ids[1], start_message_id_inclusive=True)
    assert inclusive.read_next(WAIT_MS).data() == b"1"
    latest = client.create_reader(topic, pulsar.MessageId.latest)
    producer.send(b"new")
    assert latest.read_next(WAIT_MS).data() == b"new"


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


def test_producer_access_mode_exclusive(client: pulsar.Client) -> None:
    topic = unique("off-access")
    client.create_producer(topic, access_mode=pulsar.ProducerAccessMode.Exclusive)
    with pytest.raises(pulsar.PulsarException):
        client.create_producer(topic)


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


def test_a_reader_reads_every_message_of_a_last_batch(client: pulsar.Client) -> None:
    # GetLastMessageId answers the last entry's largest batch index, as Pulsar does: a reader
    # that stops when has_message_available() turns false reads the whole last batch (with
    # -1 the client stops after its first message once it holds nothing more).
    topic = unique("off-last-batch")
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=10,
                                      batching_max_publish_delay_ms=60_000)
    for i in range(30):
        producer.send_async(b"m%d" % i, None)
    producer.flush()
    reader = client.create_reader(topic, pulsar.MessageId.earliest, receiver_queue_size=1)
    got = []
    while reader.has_message_available():
        got.append(reader.read_next(WAIT_MS).data())
    assert got == [b"m%d" % i for i in range(30)]
    reader.close()
    producer.close()


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


def test_wait_for_exclusive_blocks_until_the_exclusive_producer_closes(
    broker, client: pulsar.Client,
) -> None:
    topic = unique("off-waitex")
    holder = client.create_producer(topic, access_mode=pulsar.ProducerAccessMode.Exclusive)
    consumer = client.subscribe(topic, "s")
    created: list = []
    waiter = threading.Thread(target=lambda: created.append(client.create_producer(
        topic, access_mode=pulsar.ProducerAccessMode.WaitForExclusive)))
    waiter.start()

    assert wait_until_in_line(broker, topic) == 1
    # Answered "not ready" at once, the client keeps waiting while the holder publishes
    # (the C++ client gives up after its operation timeout, 10 s here, whatever the broker
    # answered: HandlerBase's start timeout).
    holder.send(b"first")
    assert consumer.receive(timeout_millis=WAIT_MS).data() == b"first"
    assert waiter.is_alive() and not created
    holder.close()
    waiter.join(WAIT_MS / 1000)
    assert not waiter.is_alive()
    (producer,) = created
    producer.send(b"second")
    assert consumer.receive(timeout_millis=WAIT_MS).data() == b"second"
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic)
