"""The official client's schemas (JSON, Avro) and token authentication over pulsar://."""

from __future__ import annotations

from collections.abc import Iterator

import pulsar
import pytest
from pulsar.schema import AvroSchema, Float, Integer, JsonSchema, Record, String

from pulsarlab import Broker

from .conftest import WAIT_MS, quiet_logger, unique


class Order(Record):
    order_id = String()
    quantity = Integer()
    price = Float()


@pytest.mark.parametrize("schema_type", [JsonSchema, AvroSchema])
def test_schema_records_round_trip(client: pulsar.Client, schema_type: type) -> None:
    topic = unique(f"off-{schema_type.__name__.lower()}")
    consumer = client.subscribe(topic, "s", schema=schema_type(Order))
    producer = client.create_producer(topic, schema=schema_type(Order))
    producer.send(Order(order_id="Order-3459134", quantity=3, price=9.5))
    msg = consumer.receive(timeout_millis=WAIT_MS)
    value = msg.value()
    assert (value.order_id, value.quantity, value.price) == ("Order-3459134", 3, 9.5)
    assert msg.schema_version()  # the broker assigned a version
    consumer.acknowledge(msg)


def _order_v2() -> type:
    """A FULL-compatible change of ``Order`` (the broker's default strategy, as Pulsar's):
    the same record name, one more field with a default."""

    class Order(Record):
        order_id = String()
        quantity = Integer()
        price = Float()
        note = String(required_default=True)

    return Order


def test_a_changed_schema_gets_a_new_version(client: pulsar.Client) -> None:
    OrderV2 = _order_v2()

    topic = unique("off-schema-versions")
    consumer = client.subscribe(topic, "s")
    first = client.create_producer(topic, schema=JsonSchema(Order))
    second = client.create_producer(topic, schema=JsonSchema(OrderV2))
    first.send(Order(order_id="a", quantity=1, price=1.0))
    second.send(OrderV2(order_id="b", quantity=2, price=2.0, note="n"))
    versions = [consumer.receive(timeout_millis=WAIT_MS).schema_version() for _ in range(2)]
    assert versions[0] != versions[1]


@pytest.fixture(scope="module")
def secured() -> Iterator[Broker]:
    with Broker(storage="memory", authentication_enabled=True) as b:
        yield b


def test_token_authentication(secured: Broker) -> None:
    token = secured.create_token("alice")
    good = pulsar.Client(
        secured.pulsar_url, authentication=pulsar.AuthenticationToken(token),
        operation_timeout_seconds=5, logger=quiet_logger(),
    )
    try:
        topic = unique("off-auth")
        consumer = good.subscribe(topic, "s")
        good.create_producer(topic).send(b"secret")
        assert consumer.receive(timeout_millis=WAIT_MS).data() == b"secret"
    finally:
        good.close()
    for auth in (None, pulsar.AuthenticationToken("not-a-token")):
        bad = pulsar.Client(
            secured.pulsar_url, authentication=auth, operation_timeout_seconds=3,
            logger=quiet_logger(),
        )
        try:
            with pytest.raises(pulsar.PulsarException):
                bad.create_producer(unique("off-auth"))
        finally:
            bad.close()
