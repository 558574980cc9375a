"""pulsarlab's client over ZeroMQ: a reader seeking by time reads from that time (a seek
disconnecting every consumer of a subscription is in tests/integration/behaviour/)."""

from __future__ import annotations

from pulsarlab.broker.client import MessageId

from .client_support import WAIT_MS, unique


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
