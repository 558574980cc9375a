"""Consumers of every face on one subscription: the broker sees Pulsar consumers, whichever
library and transport they came through, so keys spread over all of them on Key_Shared and
the active consumer moves between them on Failover, and what one face holds exclusively the
others are refused."""

from __future__ import annotations

import pytest

from .conftest import FACES, unique, wait_for_permits


def test_one_key_shared_subscription_spreads_keys_over_every_face(clients) -> None:
    topic = unique("mixed-key-shared")
    consumers = {
        name: (face, client.subscribe(topic, "s", consumer_type=face.api.ConsumerType.KeyShared,
                                      consumer_name=name))
        for name, (face, client) in clients.items()
    }
    wait_for_permits(next(iter(clients.values()))[0].broker, topic, "s", len(FACES))
    keys = [f"key-{i}" for i in range(30)]
    producers = [client.create_producer(topic, batching_enabled=False)
                 for _face, client in clients.values()]
    for i in range(150):  # every face produces too
        producers[i % len(producers)].send(f"{i}".encode(), partition_key=keys[i % len(keys)])
    owners: dict[str, set[str]] = {}
    per_key: dict[str, list[int]] = {}
    for name, (face, consumer) in consumers.items():
        for m in face.drain(consumer):
            owners.setdefault(m.partition_key(), set()).add(name)
            per_key.setdefault(m.partition_key(), []).append(int(m.data()))
    assert sum(len(v) for v in per_key.values()) == 150
    assert all(len(o) == 1 for o in owners.values()), owners
    assert {name for o in owners.values() for name in o} == set(FACES), "keys spread"
    assert all(v == sorted(v) for v in per_key.values()), "each key in order"


def test_one_failover_subscription_moves_between_faces(clients) -> None:
    topic = unique("mixed-failover")
    consumers = {
        name: (face, client.subscribe(topic, "s", consumer_type=face.api.ConsumerType.Failover,
                                      consumer_name=name))
        for name, (face, client) in clients.items()
    }
    _face, client = clients["official-pulsar"]
    producer = client.create_producer(topic, batching_enabled=False)
    sent = 0
    seen: list[str] = []
    while consumers:
        for i in range(5):
            producer.send(f"{sent + i}".encode())
        got = {name: face.drain(consumer, ack=False)
               for name, (face, consumer) in consumers.items()}
        active = [name for name, messages in got.items() if messages]
        assert len(active) == 1, f"one active consumer: {got}"
        (name,) = active
        numbers = [int(m.data()) for m in got[name]]
        assert numbers[-5:] == list(range(sent, sent + 5))
        if sent:  # what the closed active consumer left unacknowledged came first
            assert numbers[0] == sent - 1
        _face, consumer = consumers.pop(name)
        for m in got[name][:-1]:
            consumer.acknowledge(m)
        consumer.close()  # the last one stays unacknowledged: the next active gets it
        seen.append(name)
        sent += 5
    assert sorted(seen) == sorted(FACES), "the active consumer moved through every face"


def test_an_exclusive_holder_of_one_face_keeps_the_other_faces_out(clients) -> None:
    """One core admits producers and consumers for every face: what one face holds
    exclusively, the others are refused."""
    for holder_name, (holder_face, holder_client) in clients.items():
        topic = unique("mixed-exclusive")
        producer = holder_client.create_producer(
            topic, access_mode=holder_face.api.ProducerAccessMode.Exclusive)
        consumer = holder_client.subscribe(topic, "s")
        for name, (face, client) in clients.items():
            if name == holder_name:
                continue
            with pytest.raises(face.api.ProducerBusy):
                client.create_producer(topic)
            with pytest.raises(face.api.ConsumerBusy):
                client.subscribe(topic, "s")
        producer.close()
        consumer.close()
