"""R-CLIENT / R-SUB end to end: each subscription type with several consumers, over ZeroMQ."""

from __future__ import annotations

import threading

import pytest

from pulsarlab import Broker, MessageId
from pulsarlab.broker.client import (
    Client,
    ConsumerAssignError,
    ConsumerBusy,
    ConsumerKeySharedPolicy,
    ConsumerType,
    CumulativeAcknowledgementNotAllowedError,
    InitialPosition,
    InvalidConfiguration,
    KeySharedMode,
    Timeout,
)

from .client_support import QUIET_MS, WAIT_MS, drain, receive_n, unique

EARLIEST = InitialPosition.Earliest


@pytest.fixture(scope="module")
def broker():
    with Broker(storage="memory", active_consumer_failover_delay_ms=50) as b:
        yield b


@pytest.fixture
def client(broker):
    c = Client(broker.service_url, operation_timeout_seconds=10)
    yield c
    c.close()


def publish(client, topic, n, key=None, keys=None):
    producer = client.create_producer(topic)
    ids = []
    for i in range(n):
        k = keys[i % len(keys)] if keys else key
        ids.append(producer.send(f"m{i}".encode(), partition_key=k))
    producer.close()
    return ids


def test_exclusive_in_order_and_a_second_consumer_is_refused(client):
    topic = unique("excl")
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST)
    with pytest.raises(ConsumerBusy):
        client.subscribe(topic, "sub")
    publish(client, topic, 20)
    assert [m.data() for m in receive_n(consumer, 20)] == [f"m{i}".encode() for i in range(20)]
    assert consumer.topic() == f"persistent://public/default/{topic}"
    assert consumer.subscription_name() == "sub"
    assert consumer.is_connected()
    consumer.close()
    assert not consumer.is_connected()


def test_exclusive_cumulative_ack_and_redelivery_after_close(client):
    topic = unique("excl-cum")
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST,
                                acknowledgements_group_time_ms=0)
    publish(client, topic, 10)
    msgs = receive_n(consumer, 10, ack=False)
    consumer.acknowledge_cumulative(msgs[5])
    consumer.close()
    again = client.subscribe(topic, "sub")
    assert [m.data() for m in drain(again)] == [f"m{i}".encode() for i in range(6, 10)]


def test_shared_spreads_each_message_to_one_consumer(client):
    topic = unique("shared")
    consumers = [
        client.subscribe(topic, "sub", ConsumerType.Shared, receiver_queue_size=5,
                         initial_position=EARLIEST)
        for _ in range(3)
    ]
    publish(client, topic, 60)
    seen = []
    per_consumer = []
    for c in consumers:
        got = []
        while len(seen) + len(got) < 60:
            try:
                m = c.receive(QUIET_MS)
            except Timeout:
                break
            c.acknowledge(m)
            got.append(m.data())
        seen.extend(got)
        per_consumer.append(len(got))
    for c in consumers:  # whatever a small queue left for the others
        seen.extend(m.data() for m in drain(c))
    assert sorted(seen) == sorted(f"m{i}".encode() for i in range(60))
    assert sum(1 for n in per_consumer if n) >= 2
    with pytest.raises(CumulativeAcknowledgementNotAllowedError):
        consumers[0].acknowledge_cumulative(MessageId(-1, 0, 0))


def test_key_shared_keeps_each_key_on_one_consumer(client):
    topic = unique("ks")
    consumers = [
        client.subscribe(topic, "sub", ConsumerType.KeyShared, consumer_name=f"c{i}",
                         initial_position=EARLIEST)
        for i in range(3)
    ]
    keys = [f"key-{i}" for i in range(12)]
    publish(client, topic, 120, keys=keys)
    owner: dict[str, set[int]] = {}
    total = 0
    for idx, c in enumerate(consumers):
        for m in drain(c):
            owner.setdefault(m.partition_key(), set()).add(idx)
            total += 1
    assert total == 120
    assert set(owner) == set(keys)
    assert all(len(v) == 1 for v in owner.values())
    with pytest.raises(CumulativeAcknowledgementNotAllowedError):
        consumers[0].acknowledge_cumulative(MessageId(-1, 0, 0))


def test_key_shared_sticky_ranges_and_conflicts(client):
    topic = unique("sticky")
    low = client.subscribe(
        topic, "sub", ConsumerType.KeyShared, initial_position=EARLIEST,
        key_shared_policy=ConsumerKeySharedPolicy(KeySharedMode.Sticky,
                                                  sticky_ranges=[(0, 32767)]),
    )
    high = client.subscribe(
        topic, "sub", ConsumerType.KeyShared,
        key_shared_policy=ConsumerKeySharedPolicy(KeySharedMode.Sticky,
                                                  sticky_ranges=[(32768, 65535)]),
    )
    with pytest.raises(ConsumerAssignError):
        client.subscribe(
            topic, "sub", ConsumerType.KeyShared,
            key_shared_policy=ConsumerKeySharedPolicy(KeySharedMode.Sticky,
                                                      sticky_ranges=[(100, 200)]),
        )
    from pulsarlab.broker.selectors.hashing import murmur3_32_hash

    keys = [f"k{i}" for i in range(20)]
    publish(client, topic, 40, keys=keys)
    for consumer, (lo, hi) in ((low, (0, 32767)), (high, (32768, 65535))):
        for m in drain(consumer):
            assert lo <= murmur3_32_hash(m.partition_key()) % 65536 <= hi


def test_redeliver_unacknowledged_messages(client):
    topic = unique("redeliver")
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST)
    publish(client, topic, 5)
    receive_n(consumer, 5, ack=False)
    consumer.redeliver_unacknowledged_messages()
    again = receive_n(consumer, 5)
    # Exclusive rewinds the cursor; Pulsar counts redeliveries on Shared/Key_Shared only.
    assert [m.data() for m in again] == [f"m{i}".encode() for i in range(5)]


def test_message_listener_runs_off_the_io_thread_and_pauses(client):
    topic = unique("listener")
    got, threads = [], set()
    done = threading.Event()

    def listener(consumer, msg):
        threads.add(threading.current_thread().name)
        got.append(msg.data())
        consumer.acknowledge(msg)
        if len(got) == 10:
            done.set()

    consumer = client.subscribe(topic, "sub", message_listener=listener,
                                initial_position=EARLIEST)
    with pytest.raises(InvalidConfiguration):
        consumer.receive(10)
    publish(client, topic, 10)
    assert done.wait(WAIT_MS / 1000)
    assert got == [f"m{i}".encode() for i in range(10)]
    assert threads == {"pulsarlab-client-listener"}
    consumer.pause_message_listener()
    publish(client, topic, 3)
    done.clear()
    consumer.resume_message_listener()
    for _ in range(50):
        if len(got) == 13:
            break
        done.wait(0.1)
    assert len(got) == 13


def test_seek_get_last_message_id_and_unsubscribe(client):
    topic = unique("seek")
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST)
    ids = publish(client, topic, 6)
    receive_n(consumer, 6)
    assert consumer.get_last_message_id().position == ids[-1].position
    consumer.seek(ids[2])  # what followed the id comes next, as with Pulsar's clients
    assert [m.data() for m in receive_n(consumer, 3)] == [b"m3", b"m4", b"m5"]
    consumer.seek(0)  # publish time 0: everything again
    assert len(receive_n(consumer, 6)) == 6
    consumer.unsubscribe()
    assert not consumer.is_connected()
    fresh = client.subscribe(topic, "sub")  # the subscription was deleted: starts at latest
    with pytest.raises(Timeout):
        fresh.receive(QUIET_MS)


def test_batch_receive(client):
    from pulsarlab.broker.client import ConsumerBatchReceivePolicy

    topic = unique("batch-receive")
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST,
                                batch_receive_policy=ConsumerBatchReceivePolicy(4, -1, 2000))
    publish(client, topic, 6)
    first = consumer.batch_receive()
    assert len(first) == 4
    rest = []
    while len(rest) < 2:
        rest.extend(consumer.batch_receive())
    assert [m.data() for m in first + rest] == [f"m{i}".encode() for i in range(6)]


@pytest.mark.parametrize("batch_index_acks", [False, True])
def test_partially_acked_batch_after_reconnect(batch_index_acks):
    settings = {"acknowledgment_at_batch_index_level_enabled": batch_index_acks}
    with Broker(storage="memory", **settings) as b, Client(b.service_url) as client:
        topic = unique("batch-ack")
        consumer = client.subscribe(topic, "sub", initial_position=EARLIEST,
                                    batch_index_ack_enabled=batch_index_acks,
                                    acknowledgements_group_time_ms=0)
        producer = client.create_producer(topic, batching_enabled=True,
                                          batching_max_publish_delay_ms=500)
        for i in range(4):
            producer.send_async(f"m{i}".encode(), None)
        producer.flush()
        got = receive_n(consumer, 4, ack=False)
        assert {m.message_id().position for m in got} == {got[0].message_id().position}
        consumer.acknowledge(got[0])
        consumer.acknowledge(got[2])
        consumer.close()
        again = client.subscribe(topic, "sub", batch_index_ack_enabled=batch_index_acks)
        expected = [b"m1", b"m3"] if batch_index_acks else [b"m0", b"m1", b"m2", b"m3"]
        assert [m.data() for m in drain(again)] == expected


def test_ack_timeout_below_ten_seconds_is_refused(client):
    # The end-to-end ack timeout lives in test_client_redelivery.py.
    with pytest.raises(ValueError, match="greater than 10 seconds"):
        client.subscribe(unique("ack-timeout"), "other", unacked_messages_timeout_ms=5000)
