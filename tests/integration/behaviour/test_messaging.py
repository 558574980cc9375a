"""Producing, consuming and redelivering, the same through every face: order and acks,
batches, negative acks and their redelivery count, the ack timeout, dead letters, delayed
delivery and the last message id."""

from __future__ import annotations

import datetime

import pytest

from .conftest import WAIT_MS, Face, unique


def test_produce_consume_and_ack_in_order(face: Face, client) -> None:
    topic = unique("order")
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode(), properties={"i": str(i)}, partition_key=f"k{i}",
                         event_timestamp=1000 + i) for i in range(10)]
    got = face.receive_n(consumer, 10)
    assert [m.data() for m in got] == [f"m{i}".encode() for i in range(10)]
    assert [m.message_id() for m in got] == ids
    assert [m.properties() for m in got] == [{"i": str(i)} for i in range(10)]
    assert [m.partition_key() for m in got] == [f"k{i}" for i in range(10)]
    assert [m.event_timestamp() for m in got] == [1000 + i for i in range(10)]
    assert all(m.publish_timestamp() > 0 for m in got)
    consumer.close()
    again = client.subscribe(topic, "s")  # everything was acknowledged
    assert face.drain(again) == []


def test_a_batch_is_one_entry_with_one_index_per_message(face: Face, client) -> None:
    topic = unique("batch")
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=10,
                                      batching_max_publish_delay_ms=60_000)
    sent = []
    for i in range(10):
        producer.send_async(f"b{i}".encode(), lambda _res, mid: sent.append(mid),
                            properties={"n": str(i)})
    producer.flush()
    got = face.receive_n(consumer, 10)
    assert [m.data() for m in got] == [f"b{i}".encode() for i in range(10)]
    assert [m.properties() for m in got] == [{"n": str(i)} for i in range(10)]
    ids = [m.message_id() for m in got]
    assert len({(i.ledger_id(), i.entry_id()) for i in ids}) == 1
    assert [i.batch_index() for i in ids] == list(range(10))
    assert sorted(str(i) for i in sent) == sorted(str(i) for i in ids)


def test_negative_ack_redelivers_with_a_redelivery_count(face: Face, client) -> None:
    topic = unique("nack")
    consumer = client.subscribe(topic, "s", consumer_type=face.api.ConsumerType.Shared,
                                negative_ack_redelivery_delay_ms=100)
    producer = client.create_producer(topic)
    for i in range(3):
        producer.send(f"m{i}".encode())
    first = face.receive_n(consumer, 3, ack=False)
    assert [m.redelivery_count() for m in first] == [0, 0, 0]
    consumer.acknowledge(first[0])
    consumer.acknowledge(first[2])
    consumer.negative_acknowledge(first[1])
    again = face.receive(consumer)
    assert again.data() == b"m1"
    assert again.message_id() == first[1].message_id()
    assert again.redelivery_count() == 1
    consumer.negative_acknowledge(again)
    third = face.receive(consumer)
    assert (third.data(), third.redelivery_count()) == (b"m1", 2)
    consumer.acknowledge(third)
    assert face.drain(consumer) == []


@pytest.mark.slow  # both clients' smallest ack timeout is 10 s
def test_ack_timeout_redelivers_what_was_not_acknowledged(face: Face, client) -> None:
    topic = unique("ack-timeout")
    consumer = client.subscribe(topic, "s", consumer_type=face.api.ConsumerType.Shared,
                                unacked_messages_timeout_ms=10_000)
    producer = client.create_producer(topic)
    producer.send(b"acked")
    producer.send(b"late")
    acked, late = face.receive_n(consumer, 2, ack=False)
    consumer.acknowledge(acked)
    again = face.receive(consumer, timeout_ms=30_000)  # the timeout plus a tick or two
    assert again.data() == b"late"
    assert again.message_id() == late.message_id()
    assert again.redelivery_count() == 1
    consumer.acknowledge(again)
    assert face.drain(consumer) == []


def test_dead_letter_topic_after_max_redeliveries(face: Face, client) -> None:
    topic = unique("dlq")
    dead_letters = f"{topic}-dead"
    inspect = client.subscribe(dead_letters, "inspect")
    consumer = client.subscribe(
        topic, "s", consumer_type=face.api.ConsumerType.Shared,
        negative_ack_redelivery_delay_ms=100,
        dead_letter_policy=face.api.ConsumerDeadLetterPolicy(
            max_redeliver_count=2, dead_letter_topic=dead_letters),
    )
    producer = client.create_producer(topic)
    producer.send(b"poison", properties={"why": "test"}, partition_key="pk")
    counts = []
    for _ in range(3):  # redelivery counts 0, 1 and 2 reach the application
        msg = face.receive(consumer)
        counts.append(msg.redelivery_count())
        consumer.negative_acknowledge(msg)
    assert counts == [0, 1, 2]
    dead = face.receive(inspect)
    assert dead.data() == b"poison"
    assert dead.partition_key() == "pk"
    props = dead.properties()
    assert props["why"] == "test"
    assert props["ORIGIN_MESSAGE_ID"]  # each client writes its own id format
    assert props["REAL_TOPIC"] == f"persistent://public/default/{topic}"
    inspect.acknowledge(dead)
    assert face.drain(consumer) == []  # acknowledged on the original subscription


def test_delayed_delivery_on_shared_and_at_once_on_exclusive(face: Face, client) -> None:
    """Pulsar delays only on Shared and Key_Shared subscriptions; Exclusive and Failover
    get a delayed message in publish order, at once. No assertion rests on how fast the
    sends go: the held message is due in an hour, long after the test, and the one due
    soon may come before or after the undelayed one."""
    topic = unique("delayed")
    shared = client.subscribe(topic, "shared", consumer_type=face.api.ConsumerType.Shared)
    exclusive = client.subscribe(topic, "exclusive")
    producer = client.create_producer(topic)
    producer.send(b"held", deliver_after=datetime.timedelta(hours=1))
    producer.send(b"soon", deliver_after=datetime.timedelta(milliseconds=500))
    producer.send(b"now")
    assert [m.data() for m in face.receive_n(exclusive, 3)] == [b"held", b"soon", b"now"]
    assert sorted(m.data() for m in face.receive_n(shared, 2)) == [b"now", b"soon"]
    assert face.drain(shared) == []  # the held one waits for its time


def test_last_message_id_names_the_real_batch_index(face: Face, client) -> None:
    topic = unique("last-id")
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=5,
                                      batching_max_publish_delay_ms=60_000)
    sent = []
    for i in range(5):
        producer.send_async(f"m{i}".encode(), lambda _res, mid: sent.append(mid))
    producer.flush()
    got = face.receive_n(consumer, 5)
    last = consumer.get_last_message_id()
    newest = got[-1].message_id()
    assert (last.ledger_id(), last.entry_id(), last.batch_index()) == (
        newest.ledger_id(), newest.entry_id(), 4)
    # A reader that stops once nothing is available reads the whole last batch.
    reader = client.create_reader(topic, face.api.MessageId.earliest, receiver_queue_size=1)
    read = []
    while reader.has_message_available():
        read.append(reader.read_next(WAIT_MS).data())
    assert read == [f"m{i}".encode() for i in range(5)]
    reader.close()
