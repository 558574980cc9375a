"""Helpers for the client integration tests: unique topic names and draining consumers."""

from __future__ import annotations

import itertools
import time
from typing import Any

from pulsarlab.broker.client import Timeout

_COUNTER = itertools.count()

WAIT_MS = 5000  # generous bound for a message that must arrive
QUIET_MS = 300  # how long "nothing more arrives" is checked for


def unique(prefix: str) -> str:
    """A topic or subscription name no other test uses."""
    return f"{prefix}-{next(_COUNTER)}"


def receive_n(consumer: Any, n: int, ack: bool = True, timeout_ms: int = WAIT_MS) -> list:
    """Exactly ``n`` messages (acknowledged unless ``ack=False``)."""
    out = []
    for _ in range(n):
        msg = consumer.receive(timeout_ms)
        if ack:
            consumer.acknowledge(msg)
        out.append(msg)
    return out


def drain(consumer: Any, quiet_ms: int = QUIET_MS, ack: bool = True) -> list:
    """Everything that arrives until the consumer stays quiet for ``quiet_ms``."""
    out = []
    while True:
        try:
            msg = consumer.receive(quiet_ms)
        except Timeout:
            return out
        if ack:
            consumer.acknowledge(msg)
        out.append(msg)


def read_all(reader: Any, quiet_ms: int = QUIET_MS) -> list:
    out = []
    while True:
        try:
            out.append(reader.read_next(quiet_ms))
        except Timeout:
            return out


def wait_until_in_line(broker: Any, topic: str, timeout_ms: int = WAIT_MS) -> int:
    """How many WaitForExclusive producers wait for ``topic`` once at least one does (or
    ``timeout_ms`` passed): a test knows the broker has the waiter in line."""

    def in_line(service: Any) -> int:
        return len(service.get_topic(topic).access.waiting)

    deadline = time.monotonic() + timeout_ms / 1000
    while (waiting := broker.call(in_line)) == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    return waiting
