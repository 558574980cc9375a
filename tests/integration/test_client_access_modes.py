"""pulsarlab's client with producer access modes over ZeroMQ: the broker enforces them (the
same core rules as for the official client over pulsar://)."""

from __future__ import annotations

import threading

import pytest

from pulsarlab.broker.client import ProducerAccessMode, ProducerBusy, ProducerFenced

from .client_support import WAIT_MS, unique, wait_until_in_line


def test_an_exclusive_producer_keeps_others_out(client) -> None:
    topic = unique("zmq-excl")
    client.create_producer(topic, access_mode=ProducerAccessMode.Exclusive)
    with pytest.raises(ProducerBusy):
        client.create_producer(topic)
    with pytest.raises(ProducerFenced):
        client.create_producer(topic, access_mode=ProducerAccessMode.Exclusive)


def test_fencing_takes_the_topic_from_the_exclusive_producer(client) -> None:
    topic = unique("zmq-fence")
    client.create_producer(topic, access_mode=ProducerAccessMode.Exclusive)
    taker = client.create_producer(topic, access_mode=ProducerAccessMode.ExclusiveWithFencing)
    taker.send(b"x")


def test_wait_for_exclusive_waits_for_the_holder(broker, client) -> None:
    topic = unique("zmq-waitex")
    holder = client.create_producer(topic, access_mode=ProducerAccessMode.Exclusive)
    created: list = []
    waiter = threading.Thread(target=lambda: created.append(client.create_producer(
        topic, access_mode=ProducerAccessMode.WaitForExclusive)))
    waiter.start()

    assert wait_until_in_line(broker, topic) == 1 and not created
    holder.close()
    waiter.join(WAIT_MS / 1000)
    (producer,) = created
    producer.send(b"mine now")
