"""The official ``pulsar-client`` against a broker behaving as Pulsar 4.0 (PIP-379)."""

from __future__ import annotations

from collections.abc import Iterator

import pulsar
import pytest

from pulsarlab import Broker
from pulsarlab.broker.selectors.pip379 import ConsistentHashingStickyKeyConsumerSelector40
from pulsarlab.widgets.keys import Probe

from .conftest import QUIET_MS, WAIT_MS, quiet_logger, unique


@pytest.fixture(scope="module")
def broker_40() -> Iterator[Broker]:
    with Broker(storage="memory", pulsar_version="4.0") as b:
        yield b


def test_a_moved_key_waits_for_the_old_owners_ack(broker_40: Broker) -> None:
    """Draining hashes as the official client sees them: c2 gets the moved key's next
    message only after c1 acknowledged the one it holds."""
    ring = ConsistentHashingStickyKeyConsumerSelector40()
    ring.add_consumer(Probe("c1"))
    ring.add_consumer(Probe("c2"))
    key = next(
        k for k in (f"key-{i}" for i in range(1000))
        if ring.select_for_key(k.encode()).consumer_name == "c2"
    )
    client = pulsar.Client(broker_40.pulsar_url, operation_timeout_seconds=10,
                           logger=quiet_logger())
    try:
        topic = unique("off-ks40")
        c1 = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.KeyShared,
                              consumer_name="c1")
        producer = client.create_producer(topic, batching_enabled=False)
        producer.send(b"first", partition_key=key)
        first = c1.receive(timeout_millis=WAIT_MS)
        c2 = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.KeyShared,
                              consumer_name="c2")
        producer.send(b"second", partition_key=key)
        with pytest.raises(pulsar.Timeout):
            c2.receive(timeout_millis=QUIET_MS)
        c1.acknowledge(first)
        assert c2.receive(timeout_millis=WAIT_MS).data() == b"second"
    finally:
        client.close()
