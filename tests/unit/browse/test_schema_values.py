"""Browse values decoded by the topic's schema: Avro written by the official client, JSON,
STRING, the version a message carries, and the plain value where no schema reads it."""

from __future__ import annotations

import struct
import sys

import pytest
from pulsar.schema import AvroSchema, Integer, Record, String

from pulsarlab.browse import MessageFilter, browse_messages
from pulsarlab.extras import MissingDependency
from pulsarlab.schema_values import SchemaDecoder, schema_version_number

T = "persistent://public/default/orders"


class OrderV0(Record):
    _avro_namespace = "shop"
    name = String()
    qty = Integer()


class OrderV1(Record):
    _avro_namespace = "shop"
    name = String()
    qty = Integer()
    note = String()


def _response(schema: AvroSchema, version: int) -> dict:
    """The ``GetSchemaResponse`` Pulsar serves for the official client's Avro schema."""
    return {"version": version, "type": "AVRO", "timestamp": 0, "properties": {},
            "data": schema.schema_info().schema()}  # the Avro definition's JSON text


class Registry:
    """Answers schema lookups like the REST endpoint; counts them."""

    def __init__(self, versions: list[dict]):
        self.versions = versions
        self.asked: list[tuple[str, int | None]] = []

    def __call__(self, topic: str, version: int | None):
        self.asked.append((topic, version))
        if not self.versions:
            return None
        return self.versions[-1 if version is None else version]


V0, V1 = AvroSchema(OrderV0), AvroSchema(OrderV1)


def _version(n: int) -> bytes:
    return struct.pack(">q", n)


def test_avro_values_are_read_by_the_version_the_message_carries():
    registry = Registry([_response(V0, 0), _response(V1, 1)])
    decode = SchemaDecoder(registry)
    old = V0.encode(OrderV0(name="pen", qty=2))
    new = V1.encode(OrderV1(name="ink", qty=5, note="blue"))
    assert decode(T + "-partition-1", old, _version(0)) == {"name": "pen", "qty": 2}
    assert decode(T, new, _version(1)) == {"name": "ink", "qty": 5, "note": "blue"}
    assert decode(T, new) == {"name": "ink", "qty": 5, "note": "blue"}  # no version: latest
    decode(T, old, _version(0))
    assert registry.asked == [(T, 0), (T, 1), (T, None)]  # a partition asks for its topic


def test_json_string_none_and_unreadable_values():
    assert SchemaDecoder(lambda t, v: {"type": "JSON"})(T, b'{"a": [1]}') == {"a": [1]}
    assert SchemaDecoder(lambda t, v: {"type": "STRING"})(T, b"hi") == "hi"
    assert SchemaDecoder(lambda t, v: None)(T, b"\xff\x00") == b"\xff\x00"
    broken = SchemaDecoder(Registry([_response(V0, 0)]))
    assert broken(T, b"\x02") == "\x02"  # bytes the schema cannot read: shown as they are
    assert broken(T, None) is None
    assert schema_version_number(b"\x00" * 7 + b"\x03") == 3 and schema_version_number(2) == 2
    assert schema_version_number(b"xy") is None


def test_browse_shows_avro_records_and_filters_on_their_fields():
    payloads = [V0.encode(OrderV0(name=n, qty=q)) for n, q in (("pen", 2), ("cup", 7))]
    messages = [{"topic": T, "messageId": f"3:{i}:-1", "payload": p,
                 "metadata": {"publish_time": 1, "schema_version": _version(0)}}
                for i, p in enumerate(payloads)]

    class Topics:
        def examine_message(self, topic, initial_position, message_position):
            return messages[min(message_position, len(messages)) - 1]

    decode = SchemaDecoder(Registry([_response(V0, 0)]))
    rows, _ = browse_messages(Topics(), [T], decode=decode)
    assert [r["value"] for r in rows] == [{"name": "pen", "qty": 2}, {"name": "cup", "qty": 7}]
    rows, _ = browse_messages(Topics(), [T], decode=decode,
                              keep=MessageFilter(json_path="qty=7"))
    assert [r["value"]["name"] for r in rows] == ["cup"]


def test_without_fastavro_an_avro_topic_says_which_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "fastavro", None)
    decode = SchemaDecoder(Registry([_response(V0, 0)]))
    with pytest.raises(MissingDependency, match=r"pulsarlab\[ops\]"):
        decode(T, V0.encode(OrderV0(name="pen", qty=2)))
