"""Shared fixtures: a sans-I/O broker core on a manual clock, and helpers to drive it."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from pulsarlab.broker import BrokerService, BrokerSettings, ManualClock, MessageMetadata, SubType
from pulsarlab.broker.actions import (
    ActiveConsumerChange,
    ConsumerClosed,
    Deliver,
    ProducerClosed,
    ReachedEndOfTopic,
    SendError,
    SendReceipt,
    SendReceipts,
)
from pulsarlab.broker.consumer import ServerConsumer
from pulsarlab.broker.storage import DurableStorage, MemoryStorage


class Harness:
    """Drives a :class:`BrokerService` and sorts what it sends by consumer."""

    def __init__(self, storage: Any = None, clock: ManualClock | None = None, **settings: Any):
        self.clock = clock or ManualClock()
        self.storage = storage if storage is not None else MemoryStorage()
        self.service = BrokerService(
            self.storage, self.clock, BrokerSettings.from_kwargs(**settings)
        )
        self.events: list[Any] = []
        self.service.add_listener(self.events.append)
        self.delivered: dict[int, list[tuple[tuple[int, int], int, int | None]]] = defaultdict(list)
        self.receipts: list[SendReceipt] = []
        self.send_errors: list[SendError] = []
        self.active: dict[int, bool] = {}
        self.reached_end: list[int] = []  # consumer ids told REACHED_END_OF_TOPIC, in order
        self.producers_closed: list[ProducerClosed] = []
        self.consumers_closed: list[ConsumerClosed] = []
        self._producers: dict[str, int] = {}

    # -- producing ------------------------------------------------------------------------

    def producer(self, topic: str, name: str | None = None) -> int:
        key = f"{topic}|{name}"
        if key not in self._producers:
            self._producers[key] = self.service.create_producer(topic, name).producer_id
        return self._producers[key]

    def publish(
        self,
        topic: str,
        count: int = 1,
        *,
        key: str | None = None,
        ordering_key: bytes | None = None,
        batch: int | None = None,
        payload: bytes = b"x",
        commit: bool = True,
        deliver_at: int = 0,
        producer_name: str | None = None,
        sequence_id: int | None = None,
    ) -> list[tuple[int, int]]:
        producer_id = self.producer(topic, producer_name)
        positions = []
        for _ in range(count):
            meta = MessageMetadata(
                partition_key=key, ordering_key=ordering_key, num_messages_in_batch=batch,
                deliver_at_time=deliver_at,
                sequence_id=sequence_id if sequence_id is not None else 0,
            )
            positions.append(self.service.send(producer_id, meta, payload))
        if commit:
            self.commit()
        return positions

    def commit(self) -> None:
        self.service.commit()
        self.drain()

    # -- consuming ------------------------------------------------------------------------

    def subscribe(
        self,
        topic: str,
        subscription: str,
        name: str,
        sub_type: SubType = SubType.Exclusive,
        permits: int = 0,
        **kwargs: Any,
    ) -> ServerConsumer:
        consumer = self.service.subscribe(topic, subscription, name, sub_type, **kwargs)
        self.drain()
        if permits:
            self.flow(consumer, permits)
        return consumer

    def flow(self, consumer: ServerConsumer, permits: int) -> None:
        self.service.flow(consumer.consumer_id, permits)
        self.drain()

    def ack(self, consumer: ServerConsumer, positions: Any, **kwargs: Any) -> None:
        self.service.ack(consumer.consumer_id, list(positions), **kwargs)
        self.drain()

    def close(self, consumer: ServerConsumer) -> None:
        self.service.close_consumer(consumer.consumer_id)
        self.drain()

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        self.service.tick()
        self.drain()

    def drain(self) -> None:
        for action in self.service.take_actions():
            if isinstance(action, Deliver):
                self.delivered[action.consumer_id].extend(
                    (e.position, e.redelivery_count, e.ack_set) for e in action.entries
                )
            elif isinstance(action, SendReceipts):
                self.receipts.extend(action.each())
            elif isinstance(action, SendError):
                self.send_errors.append(action)
            elif isinstance(action, ActiveConsumerChange):
                self.active[action.consumer_id] = action.is_active
            elif isinstance(action, ReachedEndOfTopic):
                self.reached_end.append(action.consumer_id)
            elif isinstance(action, ProducerClosed):
                self.producers_closed.append(action)
            elif isinstance(action, ConsumerClosed):
                self.consumers_closed.append(action)

    def take(self, consumer: ServerConsumer) -> list[tuple[int, int]]:
        """Positions delivered to ``consumer`` since the last call."""
        got = [p for p, _, _ in self.delivered.pop(consumer.consumer_id, [])]
        return got

    def take_full(self, consumer: ServerConsumer) -> list[tuple[tuple[int, int], int, int | None]]:
        return self.delivered.pop(consumer.consumer_id, [])

    def events_of(self, type_: Any) -> list[Any]:
        return [e for e in self.events if e.type == type_]


@pytest.fixture
def harness() -> Harness:
    return Harness()


@pytest.fixture
def make_harness():
    return Harness


@pytest.fixture
def durable_storage_factory(tmp_path):
    def factory() -> DurableStorage:
        return DurableStorage(tmp_path / "data")

    return factory


# -- clean-venv installs (tests/packaging, tests/binder) --------------------------------------

WHEELHOUSE_ENV = "PULSARLAB_WHEELHOUSE"


def pip_install_cached(python: str, requirements: list[str], **run: Any) -> None:
    """``pip install requirements`` into ``python``'s venv from a local wheelhouse.

    This registry's answers are not kept by pip's HTTP cache, so every fresh venv would
    download PySpark, JupyterLab and the rest again: the first run fills a wheelhouse
    (``$PULSARLAB_WHEELHOUSE``, default ``~/.cache/pulsarlab-wheelhouse``) with ``pip wheel``,
    every run installs from it with ``--no-index``. ``--no-compile`` leaves byte-compiling
    to the imports that need it. ``run`` goes to :func:`subprocess.run` (cwd, env, timeout).
    """
    import os
    import subprocess
    from pathlib import Path

    house = Path(os.environ.get(WHEELHOUSE_ENV) or Path.home() / ".cache" / "pulsarlab-wheelhouse")
    install = [python, "-m", "pip", "install", "-q", "--no-compile", "--no-index",
               "--find-links", str(house), *requirements]
    if house.is_dir() and subprocess.run(install, capture_output=True, **run).returncode == 0:
        return
    house.mkdir(parents=True, exist_ok=True)
    filled = subprocess.run([python, "-m", "pip", "wheel", "-q", "-w", str(house),
                             "--find-links", str(house), *requirements],
                            capture_output=True, text=True, **run)
    assert filled.returncode == 0, filled.stdout[-3000:] + filled.stderr[-3000:]
    for own in house.glob("pulsarlab-*.whl"):  # the wheel under test is never cached
        own.unlink()
    done = subprocess.run(install, capture_output=True, text=True, **run)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="session")
def pip_install() -> Any:
    """:func:`pip_install_cached`, for tests that build a clean venv."""
    return pip_install_cached
@pytest.fixture(scope="session")
def tls_pki(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A throw-away CA with broker and client certificates (tests/security/tls_pki.py)."""
    from security.tls_pki import make_pki

    return make_pki(tmp_path_factory.mktemp("pki"))
