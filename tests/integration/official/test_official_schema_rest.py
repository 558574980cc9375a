"""Schemas the official client registers, read, posted and deleted over Pulsar's
``/admin/v2/schemas`` REST API."""

from __future__ import annotations

import json
import urllib.error

import pytest
from pulsar.schema import Integer, JsonSchema, Record, String

from .conftest import WAIT_MS, pulsar, rest, unique


class Order(Record):
    id = Integer()
    item = String()


def _rest(broker, method: str, topic: str, resource: str, body: object = None) -> object:
    path = topic.replace("persistent://", "/admin/v2/schemas/")
    return rest(broker, method, f"{path}/{resource}", body)


def test_a_registered_schema_is_served_over_rest(broker, client: pulsar.Client) -> None:
    topic = f"persistent://public/default/{unique('schema-rest')}"
    producer = client.create_producer(topic, schema=JsonSchema(Order))
    producer.send(Order(id=1, item="tea"))
    got = _rest(broker, "GET", topic, "schema")
    assert got["version"] == 0 and got["type"] == "JSON"
    assert json.loads(got["data"])["name"] == "Order"
    assert _rest(broker, "GET", topic, "schema/0") == got
    assert len(_rest(broker, "GET", topic, "schemas")["getSchemaResponses"]) == 1


def test_post_then_delete_over_rest(broker, client: pulsar.Client) -> None:
    topic = f"persistent://public/default/{unique('schema-rest')}"
    definition = JsonSchema(Order).schema_info().schema()
    answer = _rest(broker, "POST", topic, "schema", {"type": "JSON", "schema": definition,
                                                     "properties": {}})
    assert answer == {"version": {"version": 0}}
    # A producer with the same schema gets the posted version.
    producer = client.create_producer(topic, schema=JsonSchema(Order))
    consumer = client.subscribe(topic, unique("s"), schema=JsonSchema(Order),
                                initial_position=pulsar.InitialPosition.Earliest)
    producer.send(Order(id=2, item="jam"))
    msg = consumer.receive(WAIT_MS)
    assert msg.value().item == "jam"
    assert msg.schema_version() == "\x00" * 8  # version 0, as 8 big-endian bytes
    assert _rest(broker, "DELETE", topic, "schema") == {"version": 1}
    with pytest.raises(urllib.error.HTTPError) as info:
        _rest(broker, "GET", topic, "schema")
    assert info.value.code == 404


class Renamed(Record):
    id = Integer()
    colour = String()  # no default: older readers' data lacks it


def test_an_incompatible_schema_is_refused_under_the_default_full(
    broker, client: pulsar.Client
) -> None:
    topic = f"persistent://public/default/{unique('schema-full')}"
    client.create_producer(topic, schema=JsonSchema(Order)).close()
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=JsonSchema(Renamed))
    with pytest.raises(pulsar.IncompatibleSchema):
        client.subscribe(topic, unique("s"), schema=JsonSchema(Renamed))
    answer = _rest(broker, "POST", topic, "compatibility",
                   {"type": "JSON", "schema": JsonSchema(Renamed).schema_info().schema()})
    assert answer == {"compatibility": False, "schemaCompatibilityStrategy": "FULL"}
    assert len(_rest(broker, "GET", topic, "schemas")["getSchemaResponses"]) == 1


def test_namespace_strategy_over_rest(broker, client: pulsar.Client) -> None:
    namespace = f"public/{unique('schema-ns')}"
    rest(broker, "PUT", f"/admin/v2/namespaces/{namespace}")
    path = f"/admin/v2/namespaces/{namespace}/schemaCompatibilityStrategy"
    assert rest(broker, "GET", path) == "UNDEFINED"
    rest(broker, "PUT", path, "ALWAYS_COMPATIBLE")
    assert rest(broker, "GET", path) == "ALWAYS_COMPATIBLE"
    topic = f"persistent://{namespace}/{unique('t')}"
    client.create_producer(topic, schema=JsonSchema(Order)).close()
    client.create_producer(topic, schema=JsonSchema(Renamed)).close()
    assert len(_rest(broker, "GET", topic, "schemas")["getSchemaResponses"]) == 2
    with pytest.raises(urllib.error.HTTPError) as info:
        rest(broker, "PUT", path, "SOMETIMES")
    assert info.value.code == 412  # an invalid policy value, as the other policies answer


def test_schema_validation_enforced_refuses_a_producer_without_schema(
    broker, client: pulsar.Client
) -> None:
    namespace = f"public/{unique('schema-enforced')}"
    rest(broker, "PUT", f"/admin/v2/namespaces/{namespace}")
    path = f"/admin/v2/namespaces/{namespace}/schemaValidationEnforced"
    assert rest(broker, "GET", path) is False
    topic = f"persistent://{namespace}/{unique('t')}"
    client.create_producer(topic).close()  # no schema on the topic yet: accepted
    client.create_producer(topic, schema=JsonSchema(Order)).close()
    client.create_producer(topic).close()  # not enforced yet
    rest(broker, "POST", path, True)
    assert rest(broker, "GET", path) is True
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic)
    client.create_producer(topic, schema=JsonSchema(Order)).close()
