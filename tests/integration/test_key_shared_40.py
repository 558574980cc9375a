"""A broker running as Pulsar 4.0 (``pulsar_version="4.0"``) for the client, over ZeroMQ."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pulsarlab import Admin, Broker
from pulsarlab.broker.client import Client, ConsumerType, InitialPosition, Timeout
from pulsarlab.broker.selectors.pip379 import ConsistentHashingStickyKeyConsumerSelector40
from pulsarlab.widgets.keys import Probe

from .client_support import QUIET_MS, WAIT_MS, unique


@pytest.fixture(scope="module")
def broker():
    with Broker(storage="memory", pulsar_version="4.0") as b:
        yield b


def _moving_key() -> str:
    """A key that c1 owns alone and that moves to c2 when c2 joins (4.0 ring)."""
    ring = ConsistentHashingStickyKeyConsumerSelector40()
    ring.add_consumer(Probe("c1"))
    ring.add_consumer(Probe("c2"))
    for i in range(1000):
        key = f"key-{i}"
        if ring.select_for_key(key.encode()).consumer_name == "c2":
            return key
    raise AssertionError("no key moves to c2")


def test_a_moved_key_reaches_the_new_consumer_only_after_the_old_one_acks(broker):
    """PIP-379 through the client: c2 gets the key's next message after c1's ack."""
    topic = unique("ks40")
    key = _moving_key()
    with Client(broker.service_url) as client, Admin(broker.web_url) as admin:
        c1 = client.subscribe(topic, "sub", ConsumerType.KeyShared, consumer_name="c1",
                              initial_position=InitialPosition.Earliest)
        producer = client.create_producer(topic)
        producer.send(b"first", partition_key=key)
        first = c1.receive(WAIT_MS)
        c2 = client.subscribe(topic, "sub", ConsumerType.KeyShared, consumer_name="c2")
        producer.send(b"second", partition_key=key)
        with pytest.raises(Timeout):
            c2.receive(QUIET_MS)
        sub = admin.topics.get_stats(topic)["subscriptions"]["sub"]
        assert sub["drainingHashesCount"] == 1
        c1.acknowledge(first)
        assert c2.receive(WAIT_MS).data() == b"second"


def test_cli_runs_a_4_0_broker():
    """``pulsarlab broker --set pulsar_version=4.0`` starts (and a bad version is refused)."""
    result = subprocess.run(
        [sys.executable, "-m", "pulsarlab.broker.cli", "broker", "--storage", "memory",
         "--port", "0", "--pulsar-port", "0", "--set", "pulsar_version=4.0", "--once"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "pulsarlab.broker.cli", "broker", "--storage", "memory",
         "--port", "0", "--pulsar-port", "0", "--set", "pulsar_version=5.1", "--once"],
        capture_output=True, text=True, timeout=60,
    )
    assert bad.returncode == 2 and "5.1" in bad.stderr
