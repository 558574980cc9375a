"""Advertised listeners with the official client's ``listener_name``: the LOOKUP answer is
the named listener's URL (one that leads nowhere proves it), an unknown name is refused."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from pulsarlab import Broker

from .conftest import WAIT_MS, pulsar, quiet_logger, unique


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    port, nowhere = free_port(), free_port()
    listeners = (f"internal:pulsar://127.0.0.1:{port},external:pulsar://localhost:{port},"
                 f"dead:pulsar://127.0.0.1:{nowhere}")
    with Broker(storage="memory", broker_service_port=port, advertised_listeners=listeners,
                internal_listener_name="internal") as b:
        yield b


def client(broker: Broker, listener_name: str | None, timeout_s: int = 10) -> pulsar.Client:
    return pulsar.Client(broker.pulsar_url, listener_name=listener_name,
                         operation_timeout_seconds=timeout_s, logger=quiet_logger())


def echo(broker: Broker, name: str | None, payload: bytes) -> bytes:
    """``payload`` through a new topic by a client with listener ``name``."""
    topic = unique("listener")
    c = client(broker, name)
    try:
        consumer = c.subscribe(topic, "s")
        c.create_producer(topic).send(payload)
        return consumer.receive(timeout_millis=WAIT_MS).data()
    finally:
        c.close()


@pytest.mark.parametrize("name", [None, "internal", "external"])
def test_a_named_listener_serves(broker: Broker, name: str | None) -> None:
    assert echo(broker, name, f"via {name}".encode()) == f"via {name}".encode()


@pytest.mark.parametrize("name", ["dead", "nope"])
def test_lookup_follows_the_listener_name(broker: Broker, name: str) -> None:
    """``dead`` answers a port nothing listens on, ``nope`` is not advertised: neither
    client can create a producer, and the broker stores nothing for them."""
    topic = unique(f"listener-{name}")
    c = client(broker, name, timeout_s=3)
    started = time.monotonic()
    try:
        # The client retries the lookup ("the broker do not have nope listener" is
        # ServiceNotReady, retryable) or the dead address until its operation timeout.
        with pytest.raises(pulsar.Timeout):
            c.create_producer(topic)
    finally:
        c.close()
    assert time.monotonic() - started < 30
    assert f"persistent://public/default/{topic}" not in broker.call(lambda s: s.topics)


def test_advertised_address_is_the_host_lookups_answer() -> None:
    with Broker(storage="memory", advertised_address="localhost") as b:
        assert b.advertised.lookup("").broker_service_url == f"pulsar://localhost:{b.pulsar_port}"
        assert echo(b, None, b"via localhost") == b"via localhost"
