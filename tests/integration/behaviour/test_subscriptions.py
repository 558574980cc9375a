"""Subscriptions, the same through every face: the four types, seeking a subscription (its
consumers are disconnected, then its cursor moves) and readers."""

from __future__ import annotations

import pytest

from .conftest import WAIT_MS, Face, unique, wait_for_permits


def _publish(client, topic: str, n: int, keys: list[str] | None = None) -> list:
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode(), partition_key=keys[i % len(keys)] if keys else None)
           for i in range(n)]
    producer.close()
    return ids


def test_exclusive_refuses_a_second_consumer(face: Face, client) -> None:
    topic = unique("exclusive")
    first = client.subscribe(topic, "s")
    with pytest.raises(face.api.ConsumerBusy):
        client.subscribe(topic, "s")
    _publish(client, topic, 3)
    assert [m.data() for m in face.receive_n(first, 3)] == [b"m0", b"m1", b"m2"]
    first.close()
    client.subscribe(topic, "s")  # free again once the first one left


def test_shared_hands_each_message_to_one_consumer_in_turns(face: Face, client) -> None:
    topic = unique("shared")
    consumers = [client.subscribe(topic, "s", consumer_type=face.api.ConsumerType.Shared,
                                  consumer_name=f"c{i}") for i in range(2)]
    wait_for_permits(face.broker, topic, "s", 2)
    _publish(client, topic, 40)
    got = [face.drain(c) for c in consumers]
    assert sorted(m.data() for m in got[0] + got[1]) == sorted(f"m{i}".encode()
                                                                for i in range(40))
    assert all(got), "both consumers get turns"
    for messages in got:  # each consumer's share stays in publish order
        numbers = [int(m.data()[1:]) for m in messages]
        assert numbers == sorted(numbers)


def test_failover_delivers_to_the_active_consumer_then_moves(face: Face, client) -> None:
    topic = unique("failover")
    failover = face.api.ConsumerType.Failover
    a = client.subscribe(topic, "s", consumer_type=failover, consumer_name="a")
    b = client.subscribe(topic, "s", consumer_type=failover, consumer_name="b")
    _publish(client, topic, 10)
    got_a, got_b = face.drain(a, ack=False), face.drain(b, ack=False)
    assert sorted((len(got_a), len(got_b))) == [0, 10], "one active consumer gets everything"
    active, standby = (a, b) if got_a else (b, a)
    got = got_a or got_b
    assert [m.data() for m in got] == [f"m{i}".encode() for i in range(10)]
    for m in got[:4]:
        active.acknowledge(m)
    active.close()
    rest = face.receive_n(standby, 6)  # the unacknowledged ones, to the new active one
    assert [m.data() for m in rest] == [f"m{i}".encode() for i in range(4, 10)]


def test_key_shared_keeps_each_key_on_one_consumer(face: Face, client) -> None:
    topic = unique("key-shared")
    consumers = [client.subscribe(topic, "s", consumer_type=face.api.ConsumerType.KeyShared,
                                  consumer_name=f"c{i}") for i in range(3)]
    keys = [f"key-{i}" for i in range(12)]
    _publish(client, topic, 120, keys=keys)
    owners: dict[str, set[int]] = {}
    per_key: dict[str, list[int]] = {}
    for index, consumer in enumerate(consumers):
        for m in face.drain(consumer):
            owners.setdefault(m.partition_key(), set()).add(index)
            per_key.setdefault(m.partition_key(), []).append(int(m.data()[1:]))
    assert set(owners) == set(keys)
    assert all(len(o) == 1 for o in owners.values()), owners
    assert sum(len(v) for v in per_key.values()) == 120
    assert all(v == sorted(v) for v in per_key.values()), "each key in order"


def test_seek_to_a_message_id_redelivers_after_it(face: Face, client) -> None:
    """The broker moves the cursor to the id; the consumer skips the id itself (Java's
    ``ConsumerImpl`` after a seek, without ``startMessageIdInclusive``, and the C++ client
    alike), so what comes next is what followed it."""
    topic = unique("seek-id")
    consumer = client.subscribe(topic, "s")
    ids = _publish(client, topic, 5)
    assert len(face.drain(consumer)) == 5
    consumer.seek(ids[2])
    assert [m.data() for m in face.drain(consumer)] == [b"m3", b"m4"]
    consumer.seek(face.api.MessageId.earliest)
    assert [m.data() for m in face.drain(consumer)] == [f"m{i}".encode() for i in range(5)]
    inclusive = client.subscribe(topic, "inclusive", start_message_id_inclusive=True,
                                 initial_position=face.api.InitialPosition.Earliest)
    assert len(face.drain(inclusive)) == 5
    inclusive.seek(ids[3])  # an inclusive consumer reads the id itself again
    assert [m.data() for m in face.drain(inclusive)] == [b"m3", b"m4"]


def test_seek_by_time_disconnects_every_consumer_then_moves_the_cursor(
    face: Face, client
) -> None:
    """PersistentSubscription.resetCursor: the subscription's consumers are disconnected
    first (a consumer drops what it had prefetched when it subscribes again), then the
    cursor moves; between them the consumers get what was published from that time on."""
    topic = unique("seek-time")
    shared = face.api.ConsumerType.Shared
    holder = client.subscribe(topic, "s", consumer_type=shared, consumer_name="holder")
    _publish(client, topic, 6)
    reader = client.create_reader(topic, face.api.MessageId.earliest)
    times = [reader.read_next(WAIT_MS).publish_timestamp() for _ in range(6)]
    reader.close()
    seeker = client.subscribe(topic, "s", consumer_type=shared, consumer_name="seeker")
    # The holder has all six prefetched (it subscribed alone) and received none of them.
    seeker.seek(times[3])
    expected = [f"m{i}".encode() for i in range(6) if times[i] >= times[3]]
    again = face.drain(holder) + face.drain(seeker)
    assert sorted(m.data() for m in again) == expected
    producer = client.create_producer(topic)
    producer.send(b"after")
    assert [m.data() for m in face.drain(seeker) + face.drain(holder)] == [b"after"]


def test_readers_from_the_earliest_the_latest_and_an_id(face: Face, client) -> None:
    topic = unique("readers")
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"r{i}".encode()) for i in range(4)]
    earliest = client.create_reader(topic, face.api.MessageId.earliest)
    assert [earliest.read_next(WAIT_MS).data() for _ in range(4)] == [b"r0", b"r1", b"r2", b"r3"]
    assert not earliest.has_message_available()
    latest = client.create_reader(topic, face.api.MessageId.latest)
    assert not latest.has_message_available()
    after = client.create_reader(topic, ids[1])  # exclusive, as Pulsar's readers
    assert after.read_next(WAIT_MS).data() == b"r2"
    inclusive = client.create_reader(topic, ids[1], start_message_id_inclusive=True)
    assert inclusive.read_next(WAIT_MS).data() == b"r1"
    producer.send(b"new")
    assert latest.read_next(WAIT_MS).data() == b"new"
    assert earliest.read_next(WAIT_MS).data() == b"new"
    earliest.seek(ids[1])  # a reader seeks like a consumer: what followed the id comes next
    assert earliest.read_next(WAIT_MS).data() == b"r2"
    inclusive.seek(ids[2])
    assert inclusive.read_next(WAIT_MS).data() == b"r2"
