"""R-PRODUCE end to end: partition routing modes, batching, chunking and compression."""

from __future__ import annotations

import logging
import threading

import pytest

from pulsarlab import Broker
from pulsarlab.broker.client import (
    BatchingType,
    Client,
    CompressionType,
    ConsumerType,
    HashingScheme,
    InitialPosition,
    InvalidTopicName,
    MessageTooBig,
    PartitionsRoutingMode,
    ProducerQueueIsFull,
    Result,
)
from pulsarlab.broker.selectors.hashing import java_string_hash, murmur3_32_hash

from .client_support import WAIT_MS, drain, receive_n, unique

EARLIEST = InitialPosition.Earliest
MAX_MESSAGE_SIZE = 64 * 1024


@pytest.fixture(scope="module")
def broker():
    with Broker(storage="memory", max_message_size=MAX_MESSAGE_SIZE) as b:
        yield b


@pytest.fixture
def client(broker):
    c = Client(broker.service_url, operation_timeout_seconds=10)
    yield c
    c.close()


def partitioned(broker, prefix, n):
    topic = unique(prefix)
    broker.call(lambda service: service.create_partitioned_topic(topic, n))
    return topic


# -- partitioned topics -----------------------------------------------------------------


def test_topic_partitions_and_a_consumer_of_all_partitions(broker, client):
    topic = partitioned(broker, "parts", 3)
    full = f"persistent://public/default/{topic}"
    assert client.get_topic_partitions(topic) == [f"{full}-partition-{i}" for i in range(3)]
    assert client.get_topic_partitions("plain-topic") == ["persistent://public/default/plain-topic"]
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST)
    producer = client.create_producer(topic)
    assert producer.topic() == full
    for i in range(30):
        producer.send(f"m{i}".encode())
    got = receive_n(consumer, 30)
    assert sorted(m.data() for m in got) == sorted(f"m{i}".encode() for i in range(30))
    assert {m.topic_name() for m in got} == {f"{full}-partition-{i}" for i in range(3)}
    assert {m.message_id().partition() for m in got} == {0, 1, 2}
    assert consumer.topic() == full


@pytest.mark.parametrize("scheme", list(HashingScheme), ids=lambda s: s.name)
def test_round_robin_routes_keys_by_hash(broker, client, scheme):
    topic = partitioned(broker, "rr-keys", 4)
    producer = client.create_producer(topic, hashing_scheme=scheme)
    hash_fn = java_string_hash if scheme is HashingScheme.JavaStringHash else murmur3_32_hash
    for i in range(20):
        key = f"key-{i}"
        assert producer.send(b"x", partition_key=key).partition() == hash_fn(key) % 4


def test_a_topic_name_outside_pulsars_characters_is_refused_and_the_client_goes_on(client):
    for call in (client.create_producer, lambda t: client.subscribe(t, "s")):
        with pytest.raises(InvalidTopicName, match="topic 'bad topic!' may only contain"):
            call("bad topic!")
    producer = client.create_producer(unique("after-bad-name"))
    producer.send(b"x")
    producer.close()


def test_round_robin_without_key_cycles_partitions(broker, client):
    topic = partitioned(broker, "rr", 4)
    producer = client.create_producer(topic)
    parts = [producer.send(b"x").partition() for _ in range(8)]
    assert parts[4:] == parts[:4] and sorted(parts[:4]) == [0, 1, 2, 3]


def test_use_single_partition(broker, client):
    topic = partitioned(broker, "single", 4)
    producer = client.create_producer(
        topic, message_routing_mode=PartitionsRoutingMode.UseSinglePartition
    )
    assert len({producer.send(b"x").partition() for _ in range(10)}) == 1


def test_custom_partition(broker, client):
    topic = partitioned(broker, "custom", 3)
    producer = client.create_producer(
        topic,
        message_routing_mode=PartitionsRoutingMode.CustomPartition,
        message_router=lambda msg, n: int(msg.partition_key()) % n,
    )
    assert [producer.send(b"x", partition_key=str(i)).partition() for i in range(6)] == [
        0, 1, 2, 0, 1, 2
    ]


# -- batching ---------------------------------------------------------------------------


def send_all_async(producer, payloads, keys=None):
    results = []
    done = threading.Event()
    lock = threading.Lock()

    def callback(res, msg_id):
        with lock:
            results.append((res, msg_id))
            if len(results) == len(payloads):
                done.set()

    for i, p in enumerate(payloads):
        producer.send_async(p, callback, partition_key=keys[i % len(keys)] if keys else None)
    producer.flush()
    assert done.wait(WAIT_MS / 1000)
    return results


def test_default_batching_packs_messages_in_one_entry(client):
    topic = unique("batch")
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST)
    producer = client.create_producer(topic, batching_enabled=True,
                                      batching_max_publish_delay_ms=200)
    results = send_all_async(producer, [f"m{i}".encode() for i in range(50)])
    assert all(res is Result.Ok for res, _ in results)
    ids = sorted(mid for _, mid in results)
    assert len({mid.position for mid in ids}) < 50
    assert any(mid.batch_index() > 0 for mid in ids)
    got = receive_n(consumer, 50)
    assert [m.data() for m in got] == [f"m{i}".encode() for i in range(50)]
    assert [m.message_id() for m in got] == ids


def test_flush_returns_after_the_send_async_callbacks_ran(client):
    producer = client.create_producer(unique("flush-callbacks"), batching_enabled=True,
                                      batching_max_messages=10,
                                      batching_max_publish_delay_ms=10_000)
    seen = []

    def callback(res, mid, i):
        sum(range(20_000))  # a callback that does some work keeps the listener thread busy
        seen.append((i, res))

    for i in range(200):
        producer.send_async(b"x", lambda res, mid, i=i: callback(res, mid, i))
    producer.flush()
    # no waiting here: flush() itself waits for the callbacks, as users of the official
    # client expect when they read the callbacks' results right after it
    assert seen == [(i, Result.Ok) for i in range(200)]


def test_batching_max_messages_splits_batches(client):
    topic = unique("batch-max")
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=10,
                                      batching_max_publish_delay_ms=1000)
    results = send_all_async(producer, [b"x"] * 30)
    assert len({mid.position for _, mid in results}) == 3
    assert {mid.batch_size() for _, mid in results} == {10}


def test_key_based_batching_one_key_per_entry(client):
    topic = unique("batch-key")
    keys = ["a", "b", "c"]
    consumer = client.subscribe(topic, "sub", ConsumerType.KeyShared, initial_position=EARLIEST)
    producer = client.create_producer(topic, batching_enabled=True,
                                      batching_type=BatchingType.KeyBased,
                                      batching_max_publish_delay_ms=200)
    send_all_async(producer, [f"m{i}".encode() for i in range(30)], keys=keys)
    got = receive_n(consumer, 30)
    keys_per_entry: dict = {}
    for m in got:
        keys_per_entry.setdefault(m.message_id().position, set()).add(m.partition_key())
    assert all(len(k) == 1 for k in keys_per_entry.values())
    by_key: dict = {}
    for m in got:
        by_key.setdefault(m.partition_key(), []).append(int(m.data()[1:]))
    assert all(v == sorted(v) for v in by_key.values())


def test_batch_default_entry_carries_the_first_key(client):
    """The Key_Shared hazard: a default batch is dispatched by its first message's key."""
    topic = unique("batch-hazard")
    consumers = [client.subscribe(topic, "sub", ConsumerType.KeyShared, consumer_name=f"c{i}",
                                  initial_position=EARLIEST) for i in range(2)]
    producer = client.create_producer(topic, batching_enabled=True,
                                      batching_max_publish_delay_ms=500)
    send_all_async(producer, [b"x"] * 10, keys=[f"k{i}" for i in range(10)])
    counts = [len(drain(c)) for c in consumers]
    assert sorted(counts) == [0, 10]


def test_batch_with_compression_round_trips(client):
    topic = unique("batch-zstd")
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST)
    producer = client.create_producer(topic, batching_enabled=True,
                                      compression_type=CompressionType.ZSTD)
    send_all_async(producer, [b"payload-%d" % i * 20 for i in range(20)])
    assert [m.data() for m in receive_n(consumer, 20)] == [b"payload-%d" % i * 20
                                                          for i in range(20)]


# -- compression ------------------------------------------------------------------------


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_each_codec(client, codec):
    topic = unique(f"codec-{codec.name.lower()}")
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST)
    producer = client.create_producer(topic, compression_type=codec)
    payloads = [b"", b"tiny", b"compressible " * 2000, bytes(range(256)) * 8]
    for p in payloads:
        producer.send(p)
    assert [m.data() for m in receive_n(consumer, len(payloads))] == payloads


# -- chunking ---------------------------------------------------------------------------


def big(tag: bytes, size: int) -> bytes:
    return (tag * (size // len(tag) + 1))[:size]


def test_too_big_without_chunking_is_refused(client):
    producer = client.create_producer(unique("too-big"))
    with pytest.raises(MessageTooBig):
        producer.send(b"x" * (MAX_MESSAGE_SIZE + 1))
    with pytest.raises(ValueError, match="can't be enabled together"):
        client.create_producer(unique("both"), batching_enabled=True, chunking_enabled=True)


def test_chunked_message_is_reassembled(client):
    topic = unique("chunk")
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST)
    producer = client.create_producer(topic, chunking_enabled=True)
    payload = big(b"0123456789abcdef", 5 * MAX_MESSAGE_SIZE + 123)
    msg_id = producer.send(payload, properties={"k": "v"}, partition_key="key")
    producer.send(b"small")
    got = receive_n(consumer, 2)
    assert got[0].data() == payload and got[0].properties() == {"k": "v"}
    assert got[0].partition_key() == "key"
    assert got[0].message_id() == msg_id
    assert got[1].data() == b"small"
    consumer.close()
    assert drain(client.subscribe(topic, "sub")) == []  # every chunk was acked


def test_interleaved_chunks_from_two_producers(client):
    topic = unique("chunk-2p")
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST)
    producers = [client.create_producer(topic, chunking_enabled=True,
                                        chunk_max_message_size=1000) for _ in range(2)]
    payloads = {0: [big(b"A%d" % i, 4500) for i in range(3)],
                1: [big(b"B%d" % i, 3200) for i in range(3)]}
    for i in range(3):
        for p, producer in enumerate(producers):
            producer.send_async(payloads[p][i], None)
    for producer in producers:
        producer.flush()
    got = [m.data() for m in receive_n(consumer, 6)]
    assert sorted(got) == sorted(payloads[0] + payloads[1])
    assert [d for d in got if d.startswith(b"A")] == payloads[0]


def test_chunking_with_compression(client):
    topic = unique("chunk-lz4")
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST)
    producer = client.create_producer(topic, chunking_enabled=True,
                                      compression_type=CompressionType.LZ4,
                                      chunk_max_message_size=2048)
    payload = bytes(range(256)) * 200  # barely compressible: several chunks
    producer.send(payload)
    assert consumer.receive(WAIT_MS).data() == payload


# -- pending queue ----------------------------------------------------------------------


def test_queue_full_error_without_blocking(client):
    producer = client.create_producer(unique("full"), batching_enabled=True,
                                      batching_max_publish_delay_ms=60_000,
                                      batching_max_messages=100, max_pending_messages=3)
    results = []
    for _ in range(5):
        producer.send_async(b"x", lambda res, mid: results.append(res))
    with pytest.raises(ProducerQueueIsFull):
        producer.send(b"x")
    producer.flush()
    for _ in range(100):  # callbacks run on the listener thread
        if len(results) == 5:
            break
        threading.Event().wait(0.05)
    assert results.count(Result.ProducerQueueIsFull) == 2
    assert producer.last_sequence_id() == 2


def test_queue_full_without_a_callback_is_logged(client, caplog):
    producer = client.create_producer(unique("full-nocb"), batching_enabled=True,
                                      batching_max_publish_delay_ms=60_000,
                                      batching_max_messages=100, max_pending_messages=1)
    producer.send_async(b"kept", None)
    with caplog.at_level(logging.WARNING, logger="pulsarlab.client"):
        producer.send_async(b"rejected", None)
    producer.flush()
    assert [r.getMessage() for r in caplog.records if "was not sent" in r.getMessage()] == [
        f"send_async to {producer.topic()} without a callback was not sent: "
        "ProducerQueueIsFull: producer on "
        f"{producer.topic()} has 1 pending messages"
    ]


def test_blocking_queue_takes_more_than_its_size_in_one_burst(client):
    topic = unique("burst")
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST)
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=10,
                                      block_if_queue_full=True, max_pending_messages=20)
    settled = []
    for i in range(500):
        producer.send_async(str(i).encode(), lambda res, mid: settled.append(res))
    producer.flush()
    assert settled == [Result.Ok] * 500
    assert [consumer.receive(WAIT_MS).data() for _ in range(500)] == [
        str(i).encode() for i in range(500)
    ]
