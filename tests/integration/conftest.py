"""Fixtures the ZeroMQ client tests share: one in-memory broker per module and a client of
it per test (a module that needs other settings defines its own ``broker``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pulsarlab import Broker
from pulsarlab.broker.client import Client


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(storage="memory") as b:
        yield b


@pytest.fixture
def client(broker: Broker) -> Iterator[Client]:
    c = Client(broker.service_url, operation_timeout_seconds=10)
    yield c
    c.close()
