"""Fixtures for the official ``pulsar-client`` against the broker's pulsar:// listener."""

from __future__ import annotations

import itertools
import json
import urllib.request
from collections.abc import Iterator

import pytest

pulsar = pytest.importorskip("pulsar", reason="the official pulsar-client (dev extra) is needed")

from pulsarlab import Broker  # noqa: E402

_COUNTER = itertools.count()
WAIT_MS = 5000  # bound for a message that must arrive
QUIET_MS = 300  # how long "nothing more arrives" is checked for


def unique(prefix: str) -> str:
    """A topic or subscription name no other test uses."""
    return f"{prefix}-{next(_COUNTER)}"


def quiet_logger() -> object:
    return pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(
        storage="memory", acknowledgment_at_batch_index_level_enabled=True
    ) as b:
        yield b


@pytest.fixture
def client(broker: Broker) -> Iterator[pulsar.Client]:
    c = pulsar.Client(broker.pulsar_url, operation_timeout_seconds=10, logger=quiet_logger())
    yield c
    c.close()


def drain(consumer: object, quiet_ms: int = QUIET_MS, ack: bool = True) -> list:
    """Everything that arrives until the consumer stays quiet for ``quiet_ms``."""
    out = []
    while True:
        try:
            msg = consumer.receive(timeout_millis=quiet_ms)
        except pulsar.Timeout:
            return out
        if ack:
            consumer.acknowledge(msg)
        out.append(msg)


def rest(broker: Broker, method: str, path: str, body: object = None) -> object:
    """One admin REST call (``path`` from ``/admin/...``); its JSON answer, ``None`` if
    empty. An error status raises ``urllib.error.HTTPError``."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{broker.web_url}{path}", data=data, method=method,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        raw = answer.read()
    return json.loads(raw) if raw else None
