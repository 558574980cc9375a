"""Garbage on a pulsar:// socket costs that connection only; everyone else keeps going."""

from __future__ import annotations

import socket

import pulsar
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab import Broker

from .conftest import WAIT_MS, unique


def _address(broker: Broker) -> tuple[str, int]:
    return broker.host, broker.pulsar_port


@settings(max_examples=25, deadline=None)
@given(st.binary(min_size=1, max_size=256))
def test_garbage_from_one_socket_leaves_the_others_served(broker: Broker, garbage: bytes) -> None:
    with socket.create_connection(_address(broker), timeout=5) as raw:
        raw.sendall(garbage)
        raw.shutdown(socket.SHUT_WR)
        while raw.recv(65536):  # the broker answers (an ERROR) or closes; never hangs
            pass
    assert broker.running


def test_an_official_client_survives_a_neighbour_sending_garbage(
    broker: Broker, client: pulsar.Client
) -> None:
    topic = unique("off-neighbour")
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic)
    producer.send(b"before")
    with socket.create_connection(_address(broker), timeout=5) as raw:
        raw.sendall(b"\x00\x00\x00\x08\x00\x00\x00\x04garbage!" * 3)
        raw.recv(65536)
    producer.send(b"after")
    assert [consumer.receive(timeout_millis=WAIT_MS).data() for _ in range(2)] == [
        b"before", b"after",
    ]
