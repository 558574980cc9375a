"""pulsarlab's client over ZeroMQ when a seek disconnects the subscription's consumers
(Pulsar's rule, in the core): every consumer subscribes again and reads from the new
position, a reader seeking by time too."""

from __future__ import annotations

from pulsarlab.broker.client import ConsumerType, InitialPosition, MessageId

from .client_support import WAIT_MS, drain, unique


def test_a_seek_brings_every_consumer_of_the_subscription_back_at_the_position(client):
    topic = unique("seek-shared")
    seeker = client.subscribe(topic, "s", consumer_type=ConsumerType.Shared,
                              initial_position=InitialPosition.Earliest)
    other = client.subscribe(topic, "s", consumer_type=ConsumerType.Shared)
    producer = client.create_producer(topic)
    ids = [producer.send(f"m{i}".encode()) for i in range(6)]
    assert len(drain(seeker)) + len(drain(other)) == 6
    seeker.seek(ids[2])
    again = sorted(m.data().decode() for m in drain(seeker) + drain(other))
    assert again == ["m2", "m3", "m4", "m5"]
    producer.send(b"after")
    assert [m.data() for m in drain(seeker) + drain(other)] == [b"after"]


def test_a_reader_seeking_by_time_reads_from_that_time(client):
    topic = unique("seek-time")
    producer = client.create_producer(topic)
    producer.send(b"old")
    reader = client.create_reader(topic, MessageId.latest)
    later = [producer.send(f"new{i}".encode()) for i in range(2)]
    assert [reader.read_next(WAIT_MS).data() for _ in later] == [b"new0", b"new1"]
    first_publish = producer_first_publish_time(client, topic)
    reader.seek(first_publish)  # back to the first message, by its publish time
    got = [reader.read_next(WAIT_MS).data() for _ in range(3)]
    assert got == [b"old", b"new0", b"new1"]


def producer_first_publish_time(client, topic: str) -> int:
    reader = client.create_reader(topic, MessageId.earliest)
    try:
        return reader.read_next(WAIT_MS).publish_timestamp()
    finally:
        reader.close()
