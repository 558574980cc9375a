"""A broker bound to every interface (``*`` or ``0.0.0.0``, with authentication on, as a
non-loopback bind requires) reports URLs naming this machine's host name, as Pulsar's
default advertisedAddress: pulsarlab's client connects through each, and a lookup answers
a broker URL the official client can connect to (never ``*`` or ``0.0.0.0``)."""

from __future__ import annotations

import base64
import socket
from collections.abc import Iterator

import pulsar
import pytest

from pulsarlab import Broker
from pulsarlab.broker.client import AuthenticationToken, Client

WAIT_MS = 10_000
KEY = "data:;base64," + base64.b64encode(b"k" * 32).decode()
HOST = socket.gethostname()


def host_name_unreachable() -> str | None:
    """Why this machine's host name cannot be connected to here, or ``None``."""
    try:
        socket.getaddrinfo(HOST, None, type=socket.SOCK_STREAM)
    except OSError as exc:
        return f"this machine's host name {HOST!r} does not resolve: {exc}"
    return None


pytestmark = pytest.mark.skipif(host_name_unreachable() is not None,
                                reason=host_name_unreachable() or "")


@pytest.fixture(scope="module", params=["*", "0.0.0.0"])
def broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    with Broker(host=request.param, storage="memory", authentication_enabled=True,
                token_secret_key=KEY) as b:
        yield b


def test_the_urls_name_this_machine(broker: Broker) -> None:
    assert broker.service_url == f"zmq://{HOST}:{broker.port}"
    assert broker.pulsar_url == f"pulsar://{HOST}:{broker.pulsar_port}"
    assert broker.web_url.startswith(f"http://{HOST}:")
    assert broker.advertised.lookup("").broker_service_url == broker.pulsar_url


@pytest.mark.parametrize("face", ["service_url", "pulsar_url"])
def test_pulsarlab_client_connects_through_the_reported_url(broker: Broker, face: str) -> None:
    topic = f"wildcard-{face}"
    client = Client(getattr(broker, face), operation_timeout_seconds=10,
                    authentication=AuthenticationToken(broker.create_token("alice")))
    try:
        consumer = client.subscribe(topic, "sub")
        client.create_producer(topic).send(b"to every interface")
        assert consumer.receive(WAIT_MS).data() == b"to every interface"
    finally:
        client.close()


def test_the_official_client_follows_the_lookup(broker: Broker) -> None:
    client = pulsar.Client(broker.pulsar_url, operation_timeout_seconds=10,
                           authentication=pulsar.AuthenticationToken(
                               broker.create_token("alice")),
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe("wildcard-official", "sub")
        client.create_producer("wildcard-official").send(b"looked up")
        assert consumer.receive(WAIT_MS).data() == b"looked up"
    finally:
        client.close()
