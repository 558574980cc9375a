"""The schema registry saved with the topics' metadata, and its admin operations
(Pulsar's ``SchemasResource`` JSON)."""

import pytest

from pulsarlab.broker.errors import InvalidArgument, TopicNotFound
from pulsarlab.broker.schema_admin import SchemaAdmin
from pulsarlab.broker.schemas import SchemaInfo, SchemaRegistry
from pulsarlab.broker.storage import DurableStorage, MemoryStorage

T = "persistent://public/default/orders"
JSON_DEF = '{"type":"record","name":"Order","fields":[{"name":"id","type":"int"}]}'


def admin(store=None, strategy: str = "ALWAYS_COMPATIBLE") -> SchemaAdmin:
    return SchemaAdmin(SchemaRegistry(store), lambda: 1234, lambda topic: strategy)


def test_post_get_versions_and_delete():
    a = admin(MemoryStorage().metadata)
    with pytest.raises(TopicNotFound, match="Schema not found"):
        a.get_schema(T)
    assert a.post_schema(T, {"type": "JSON", "schema": JSON_DEF}) == {"version": {"version": 0}}
    # The same schema again: the same version.
    assert a.post_schema(T, {"type": "JSON", "schema": JSON_DEF})["version"] == {"version": 0}
    assert a.post_schema(T, {"type": "STRING", "schema": "", "properties": {"a": "b"}}) == {
        "version": {"version": 1}
    }
    assert a.get_schema(T) == {"version": 1, "type": "STRING", "timestamp": 1234, "data": "",
                               "properties": {"a": "b"}}
    assert a.get_schema(T, 0)["data"] == JSON_DEF
    assert [v["version"] for v in a.get_all_versions(T)["getSchemaResponses"]] == [0, 1]
    assert a.delete_schema(T) == {"version": 2}
    with pytest.raises(TopicNotFound):
        a.get_schema(T)
    with pytest.raises(TopicNotFound):
        a.delete_schema(T)
    # Registering again after the delete starts a new version, even for an old schema.
    assert a.post_schema(T, {"type": "JSON", "schema": JSON_DEF})["version"] == {"version": 3}


def test_partitions_share_the_partitioned_topics_schema():
    a = admin()
    a.post_schema(T, {"type": "AVRO", "schema": JSON_DEF})
    assert a.get_schema(f"{T}-partition-1")["type"] == "AVRO"


@pytest.mark.parametrize("payload", [None, {"schema": "x"}, {"type": "NOPE"},
                                     {"type": "JSON", "schema": 5}])
def test_bad_payloads_are_clear_errors(payload):
    with pytest.raises(InvalidArgument):
        admin().post_schema(T, payload)


def test_schemas_survive_a_restart(tmp_path):
    storage = DurableStorage(tmp_path / "data")
    registry = SchemaRegistry(storage.metadata)
    version = registry.get_or_create(T, SchemaInfo(2, "orders", JSON_DEF.encode()))
    storage.close()
    storage = DurableStorage(tmp_path / "data")
    found = SchemaRegistry(storage.metadata).get(T)
    assert found is not None and found[1] == version and found[0].data == JSON_DEF.encode()
    storage.close()
