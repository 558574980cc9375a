"""One broker, three faces: every behaviour test runs once per face.

A *face* is a client library over a transport: pulsarlab's ``Client`` over ZeroMQ
(``zmq://``) and over Pulsar's TCP protocol (``pulsar://``), and the official
``pulsar-client`` over ``pulsar://``. Both libraries have the same API, so a test takes the
face's ``api`` module (``pulsar`` or ``pulsarlab.broker.client``) for its enums, ids and
exceptions and calls the face's client as any application would.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest

from pulsarlab import Admin, Broker
from pulsarlab.broker import client as pulsarlab_api

from ..zmq_pulsar.dealer import wait_until

try:
    import pulsar as official_api
except ImportError:  # the dev extra is not installed: the official face is skipped
    official_api = None

WAIT_MS = 10_000  # generous bound for something that must come
QUIET_MS = 400  # how long "nothing more comes" is checked for

FACES = ("pulsarlab-zmq", "pulsarlab-pulsar", "official-pulsar")

_COUNTER = itertools.count()


def unique(prefix: str) -> str:
    """A topic or subscription name no other test uses."""
    return f"bhv-{prefix}-{next(_COUNTER)}"


@dataclass
class Face:
    """A client library over one transport, against the suite's broker."""

    name: str
    api: ModuleType  # ``pulsar`` or ``pulsarlab.broker.client``: enums, ids, exceptions
    url: str
    broker: Broker

    @property
    def official(self) -> bool:
        return self.api is official_api

    def client(self) -> Any:
        if self.official:
            return self.api.Client(self.url, operation_timeout_seconds=10,
                                   logger=self.api.ConsoleLogger(self.api.LoggerLevel.Error))
        return self.api.Client(self.url, operation_timeout_seconds=10)

    def receive(self, consumer: Any, timeout_ms: int = WAIT_MS) -> Any:
        return consumer.receive(timeout_millis=timeout_ms)

    def receive_n(self, consumer: Any, n: int, ack: bool = True) -> list:
        """Exactly ``n`` messages (acknowledged unless ``ack=False``)."""
        out = []
        for _ in range(n):
            msg = consumer.receive(timeout_millis=WAIT_MS)
            if ack:
                consumer.acknowledge(msg)
            out.append(msg)
        return out

    def drain(self, consumer: Any, ack: bool = True, quiet_ms: int = QUIET_MS) -> list:
        """Everything that arrives until the consumer stays quiet for ``quiet_ms``."""
        out = []
        while True:
            try:
                msg = consumer.receive(timeout_millis=quiet_ms)
            except self.api.Timeout:
                return out
            if ack:
                consumer.acknowledge(msg)
            out.append(msg)


@pytest.fixture(scope="package")
def broker() -> Iterator[Broker]:
    """The suite's one broker (in-process, memory storage) with short timers, so that a
    failover, a delayed message or a dead letter does not keep a test waiting long."""
    with Broker(storage="memory", acknowledgment_at_batch_index_level_enabled=True,
                active_consumer_failover_delay_ms=50, delayed_delivery_tick_ms=50) as b:
        yield b


@pytest.fixture(scope="package")
def admin(broker: Broker) -> Iterator[Admin]:
    with Admin(broker.web_url) as a:
        yield a


def make_face(name: str, broker: Broker) -> Face:
    if name.startswith("official"):
        if official_api is None:
            pytest.skip("the official pulsar-client (dev extra) is not installed")
        return Face(name, official_api, broker.pulsar_url, broker)
    url = broker.service_url if name.endswith("zmq") else broker.pulsar_url
    return Face(name, pulsarlab_api, url, broker)


@pytest.fixture(params=FACES)
def face(request: pytest.FixtureRequest, broker: Broker) -> Face:
    return make_face(request.param, broker)


@pytest.fixture
def client(face: Face) -> Iterator[Any]:
    c = face.client()
    yield c
    c.close()


@pytest.fixture
def clients(broker: Broker) -> Iterator[dict[str, tuple[Face, Any]]]:
    """One client of every face, by face name (the mixed-subscription tests)."""
    opened = {}
    try:
        for name in FACES:
            f = make_face(name, broker)
            opened[name] = (f, f.client())
        yield opened
    finally:
        for _f, c in opened.values():
            c.close()


def wait_for_permits(broker: Broker, topic: str, subscription: str, consumers: int) -> None:
    """Until ``consumers`` consumers of the subscription have sent their first FLOW (a test
    about how messages are shared starts with every consumer ready)."""

    def ready() -> bool:
        stats = broker.call(lambda s: s.topic_stats(topic))
        sub = stats["subscriptions"].get(subscription, {"consumers": []})
        return sum(1 for c in sub["consumers"] if c["availablePermits"] > 0) >= consumers

    wait_until(ready, f"{consumers} consumers with permits on {topic}/{subscription}")


def in_thread(target: Callable[[], Any]) -> tuple[threading.Thread, list]:
    """Run ``target`` in a daemon thread; its result (or exception) lands in the list."""
    out: list = []

    def run() -> None:
        try:
            out.append(target())
        except Exception as exc:
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out
