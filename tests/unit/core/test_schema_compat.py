"""Schema compatibility strategies on Avro's resolution rules (``schema_compat``)."""

import json

import pytest

from pulsarlab.broker.errors import IncompatibleSchema
from pulsarlab.broker.schema_compat import can_read, incompatibility
from pulsarlab.broker.schemas import SchemaInfo, SchemaRegistry

JSON, AVRO, STRING = 2, 4, 1


def record(*fields, name="Order"):
    return {"type": "record", "name": name, "fields": list(fields)}


ID = {"name": "id", "type": "int"}
NOTE = {"name": "note", "type": ["null", "string"]}
NOTE_DEFAULT = {"name": "note", "type": ["null", "string"], "default": None}


def enc(schema) -> bytes:
    return json.dumps(schema).encode()


@pytest.mark.parametrize(("reader", "writer", "ok"), [
    (record(ID), record(ID), True),
    (record(ID, NOTE_DEFAULT), record(ID), True),  # added with a default
    (record(ID, NOTE), record(ID), False),  # added without one
    (record(ID), record(ID, NOTE), True),  # writer's extra field is skipped
    (record({"name": "id", "type": "long"}), record(ID), True),  # int promotes to long
    (record(ID), record({"name": "id", "type": "long"}), False),
    (record(ID, name="Other"), record(ID), False),  # named types match by name
    ({"type": "enum", "name": "E", "symbols": ["A", "B"]},
     {"type": "enum", "name": "E", "symbols": ["A"]}, True),
    ({"type": "enum", "name": "E", "symbols": ["A"]},
     {"type": "enum", "name": "E", "symbols": ["A", "B"]}, False),
    ({"type": "array", "items": "double"}, {"type": "array", "items": "float"}, True),
    (["null", "string"], "string", True),
    ("string", ["null", "string"], False),  # the writer's null branch is unreadable
])
def test_avro_resolution(reader, writer, ok):
    assert can_read(reader, writer) is ok


def test_strategies_against_the_last_version_or_all():
    v0, v1 = record(ID, NOTE_DEFAULT), record(ID)
    history = [(0, JSON, enc(v0)), (1, JSON, enc(v1))]
    new = (JSON, enc(record(ID, NOTE)))  # readable by v1's readers, not v0-compatible back
    assert incompatibility("FORWARD", history, new) is None
    assert incompatibility("BACKWARD", history, new) is not None  # note has no default
    assert incompatibility("ALWAYS_COMPATIBLE", history, new) is None
    assert "ALWAYS_INCOMPATIBLE" in incompatibility("ALWAYS_INCOMPATIBLE", history, new)
    # Transitive: v0 (note with default) reads the new schema's data too; v1 ignores note.
    assert incompatibility("FORWARD_TRANSITIVE", history, new) is None
    narrow = (JSON, enc(record({"name": "id", "type": "long"})))
    assert incompatibility("FORWARD", history, narrow) is not None  # long cannot be int
    assert "type changed" in incompatibility("FULL", history, (AVRO, enc(v1)))
    assert incompatibility("FULL", [(0, STRING, b"")], (STRING, b"x")) is None


def test_the_registry_refuses_and_stores_nothing():
    registry = SchemaRegistry()
    t = "persistent://public/default/t"
    registry.get_or_create(t, SchemaInfo(JSON, "t", enc(record(ID))), "FULL")
    with pytest.raises(IncompatibleSchema, match=r"Incompatible schema for .*FULL"):
        registry.get_or_create(t, SchemaInfo(JSON, "t", enc(record(ID, NOTE))), "FULL")
    assert len(registry.versions(t)) == 1
    version = registry.get_or_create(t, SchemaInfo(JSON, "t", enc(record(ID, NOTE_DEFAULT))),
                                     "FULL")
    assert SchemaRegistry.version_number(version) == 1
    # After a delete any schema starts again.
    registry.delete(t)
    registry.get_or_create(t, SchemaInfo(AVRO, "t", enc(record(ID, name="X"))), "FULL")
