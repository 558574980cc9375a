"""Producers, the same through every face: the access modes (the broker admits producers,
as ``AbstractTopic`` does) and a terminated topic."""

from __future__ import annotations

import pytest

from ..client_support import wait_until_in_line
from ..zmq_pulsar.dealer import wait_until
from .conftest import WAIT_MS, Face, in_thread, unique


def test_an_exclusive_producer_keeps_others_out(face: Face, client) -> None:
    topic = unique("access-exclusive")
    modes = face.api.ProducerAccessMode
    holder = client.create_producer(topic, access_mode=modes.Exclusive)
    with pytest.raises(face.api.ProducerBusy):
        client.create_producer(topic)  # a Shared producer
    with pytest.raises(face.api.ProducerFenced):
        client.create_producer(topic, access_mode=modes.Exclusive)
    holder.send(b"still mine")
    holder.close()
    client.create_producer(topic).send(b"shared again")


def test_exclusive_with_fencing_takes_the_topic(face: Face, client) -> None:
    topic = unique("access-fencing")
    modes = face.api.ProducerAccessMode
    consumer = client.subscribe(topic, "s")
    old = client.create_producer(topic, access_mode=modes.Exclusive, batching_enabled=False)
    old.send(b"old")
    taker = client.create_producer(topic, access_mode=modes.ExclusiveWithFencing,
                                   batching_enabled=False)
    taker.send(b"new")
    with pytest.raises(face.api.ProducerFenced):  # the fenced producer is closed for good
        client.create_producer(topic, access_mode=modes.Exclusive)
    assert [m.data() for m in face.receive_n(consumer, 2)] == [b"old", b"new"]


def test_wait_for_exclusive_is_queued_until_the_holder_leaves(face: Face, client) -> None:
    topic = unique("access-wait")
    modes = face.api.ProducerAccessMode
    consumer = client.subscribe(topic, "s")
    holder = client.create_producer(topic, access_mode=modes.Exclusive, batching_enabled=False)
    waiter, created = in_thread(lambda: client.create_producer(
        topic, access_mode=modes.WaitForExclusive, batching_enabled=False))
    assert wait_until_in_line(face.broker, topic) == 1
    holder.send(b"first")  # the holder keeps publishing while the other waits in line
    assert face.receive(consumer).data() == b"first"
    assert waiter.is_alive() and not created
    holder.close()
    waiter.join(WAIT_MS / 1000)
    (producer,) = created
    producer.send(b"second")
    assert face.receive(consumer).data() == b"second"
    with pytest.raises(face.api.ProducerBusy):
        client.create_producer(topic)


def test_a_terminated_topic_refuses_producers_and_readers_reach_its_end(
    face: Face, client, admin
) -> None:
    topic = f"persistent://public/default/{unique('terminated')}"
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic, batching_enabled=False)
    last = [producer.send(f"m{i}".encode()) for i in range(3)][-1]
    end = admin.topics.terminate_topic(topic)
    assert (end["ledgerId"], end["entryId"]) == (last.ledger_id(), last.entry_id())
    with pytest.raises(face.api.TopicTerminated):
        producer.send(b"too late")
    with pytest.raises(face.api.TopicTerminated):
        client.create_producer(topic)
    assert [m.data() for m in face.receive_n(consumer, 3)] == [b"m0", b"m1", b"m2"]
    reader = client.create_reader(topic, face.api.MessageId.earliest)
    read = []
    while reader.has_message_available():
        read.append(reader.read_next(WAIT_MS).data())
    assert read == [b"m0", b"m1", b"m2"]
    if face.official:
        # pulsar-client's C++ core has no REACHED_END_OF_TOPIC handler (it logs "invalid
        # message" and reconnects, against Pulsar 3.3 as here) and no API to ask.
        return
    # REACHED_END_OF_TOPIC comes once the dispatcher finds nothing more to read.
    wait_until(reader.has_reached_end_of_topic, "the reader's end of topic notice")
    late = client.subscribe(topic, "late")
    wait_until(late.has_reached_end_of_topic, "a late consumer's end of topic notice")
