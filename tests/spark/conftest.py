"""Fixtures of the Spark tests: ONE local[2] SparkSession for the whole run, a broker per module.

The session comes from :func:`pulsarlab.spark.get_or_create_session` (tuned for a small
machine, ``pulsar`` registered), so any other test that asks for a session reuses this JVM.
Without PySpark, pyarrow or Java the Spark tests are skipped with the reason.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

import pulsarlab

_NAMES = itertools.count()


def _skip_reason() -> str | None:
    for module, hint in (("pyspark", "pyspark"), ("pyarrow", "pyarrow")):
        try:
            __import__(module)
        except ImportError:
            return f"{hint} is not installed (pip install 'pulsarlab[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java (17+) is not installed; PySpark needs it"
    return None


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The shared SparkSession (started on first use, stopped at the end of the run)."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    from pulsarlab.spark import get_or_create_session, stop_session

    session = get_or_create_session("pulsarlab-tests", "local[2]")
    yield session
    stop_session()


@pytest.fixture(scope="module")
def broker() -> Iterator[pulsarlab.Broker]:
    """An in-memory broker for one test module."""
    b = pulsarlab.Broker(storage="memory").start()
    yield b
    b.stop()


@pytest.fixture(scope="module")
def client(broker: pulsarlab.Broker) -> Iterator[Any]:
    c = pulsarlab.Client(broker.service_url)
    yield c
    c.close()


@pytest.fixture(scope="module")
def admin(broker: pulsarlab.Broker) -> Iterator[pulsarlab.Admin]:
    a = pulsarlab.Admin(broker.web_url)
    yield a
    a.close()


def unique(prefix: str) -> str:
    """A topic name no other test uses."""
    return f"{prefix}-{next(_NAMES)}"


def produce(client: Any, topic: str, count: int, *, start: int = 0, **producer: Any) -> list[bytes]:
    """Send ``count`` keyed messages with properties; returns their serialized message ids."""
    ids = []
    with client.create_producer(topic, **producer) as p:
        for i in range(start, start + count):
            mid = p.send(
                f"m{i}".encode(), partition_key=f"k{i % 5}", properties={"i": str(i)},
                event_timestamp=1_000 + i,
            )
            ids.append(mid.serialize())
    return ids
