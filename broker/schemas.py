"""Per-topic schemas, one registry in the core (``BrokerService.schemas``) that every face
and the admin API share: pulsar:// GET_SCHEMA, GET_OR_CREATE_SCHEMA and producers and
consumers that declare one, ``/admin/v2/schemas``, the ZeroMQ ADMIN command.

Each topic keeps its schema versions in order; a schema equal to a stored one gets that
version back, any other is added if the namespace's compatibility strategy accepts it
(:mod:`.schema_compat`). A version travels as
8 big-endian bytes, as Pulsar's broker writes it. Schemas of a partition live with the
partitioned topic, so every partition reports the same version. Deleting a topic's schema
adds a deleted version (Pulsar's tombstone): the topic then has no schema until one is
posted or registered again, and versions keep counting. With a metadata store the versions
are saved with the topic's metadata and survive a restart.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from typing import Any

from .errors import IncompatibleSchema
from .schema_compat import incompatibility
from .storage.base import MetadataStore
from .topic_name import TopicName

__all__ = ["SCHEMA_TYPES", "SchemaInfo", "SchemaRegistry"]

_VERSION = struct.Struct(">q")

# Pulsar's SchemaType names by the protocol's Schema.Type numbers.
SCHEMA_TYPES = {
    0: "NONE", 1: "STRING", 2: "JSON", 3: "PROTOBUF", 4: "AVRO", 5: "BOOLEAN", 6: "INT8",
    7: "INT16", 8: "INT32", 9: "INT64", 10: "FLOAT", 11: "DOUBLE", 12: "DATE", 13: "TIME",
    14: "TIMESTAMP", 15: "KEY_VALUE", 16: "INSTANT", 17: "LOCAL_DATE", 18: "LOCAL_TIME",
    19: "LOCAL_DATE_TIME", 20: "PROTOBUF_NATIVE",
}
_TYPE_NUMBERS = {name: number for number, name in SCHEMA_TYPES.items()} | {"BYTES": 0}


@dataclass(frozen=True, slots=True)
class SchemaInfo:
    """One schema version: Pulsar's type number, name, definition and properties."""

    type: int
    name: str
    data: bytes
    properties: tuple[tuple[str, str], ...] = ()
    timestamp_ms: int = 0
    deleted: bool = False

    def same_as(self, other: SchemaInfo) -> bool:
        return not self.deleted and self.type == other.type and self.data == other.data

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type, "name": self.name,
            "data": base64.b64encode(self.data).decode("ascii"),
            "properties": [list(kv) for kv in self.properties],
            "timestamp": self.timestamp_ms, "deleted": self.deleted,
        }

    @classmethod
    def from_json(cls, saved: dict[str, Any]) -> SchemaInfo:
        return cls(
            int(saved["type"]), str(saved["name"]), base64.b64decode(saved["data"]),
            tuple((str(k), str(v)) for k, v in saved.get("properties", [])),
            int(saved.get("timestamp", 0)), bool(saved.get("deleted", False)),
        )


def schema_type_number(name: str) -> int:
    """The protocol number of a ``SchemaType`` name; ``ValueError`` for an unknown one."""
    number = _TYPE_NUMBERS.get(name.upper())
    if number is None:
        raise ValueError(f"unknown schema type {name!r}")
    return number


class SchemaRegistry:
    """Schema versions per topic, saved through ``store`` if given."""

    def __init__(self, store: MetadataStore | None = None) -> None:
        self._store = store
        self._topics: dict[str, list[SchemaInfo]] = {}

    @staticmethod
    def _key(topic: str) -> str:
        return str(TopicName.get(topic).partitioned_topic_name)

    def versions(self, topic: str) -> list[SchemaInfo]:
        """Every version of the topic's schema, oldest first (deleted ones included)."""
        key = self._key(topic)
        versions = self._topics.get(key)
        if versions is None:
            saved = self._store.get_policies(f"{key}#schemas") if self._store else None
            versions = [SchemaInfo.from_json(v) for v in (saved or {}).get("versions", [])]
            self._topics[key] = versions
        return versions

    def _add(self, topic: str, schema: SchemaInfo) -> bytes:
        versions = self.versions(topic)
        versions.append(schema)
        if self._store is not None:
            self._store.put_policies(
                f"{self._key(topic)}#schemas", {"versions": [v.to_json() for v in versions]}
            )
        return _VERSION.pack(len(versions) - 1)

    def get_or_create(
        self, topic: str, schema: SchemaInfo, strategy: str = "ALWAYS_COMPATIBLE"
    ) -> bytes:
        """The version of ``schema`` on ``topic``, added if it is new and ``strategy``
        accepts it after the live versions (``IncompatibleSchema`` otherwise)."""
        versions = self.versions(topic)
        deleted_at = max((i for i, v in enumerate(versions) if v.deleted), default=-1)
        for index, known in enumerate(versions):
            if index > deleted_at and known.same_as(schema):
                return _VERSION.pack(index)
        reason = self.incompatibility(topic, schema, strategy)
        if reason is not None:
            raise IncompatibleSchema(f"Incompatible schema for {self._key(topic)}: {reason}")
        return self._add(topic, schema)

    def incompatibility(self, topic: str, schema: SchemaInfo, strategy: str) -> str | None:
        """Why ``strategy`` refuses ``schema`` after the topic's live versions, or ``None``."""
        versions = self.versions(topic)
        deleted_at = max((i for i, v in enumerate(versions) if v.deleted), default=-1)
        history = [(i, v.type, v.data) for i, v in enumerate(versions) if i > deleted_at]
        return incompatibility(strategy, history, (schema.type, schema.data))

    def delete(self, topic: str, now_ms: int = 0) -> bytes | None:
        """Delete the topic's schema (a deleted version); ``None`` if it has none."""
        if self.get(topic) is None:
            return None
        return self._add(topic, SchemaInfo(0, "", b"", (), now_ms, deleted=True))

    def get(self, topic: str, version: bytes | None = None) -> tuple[SchemaInfo, bytes] | None:
        """A version of the topic's schema (the latest without ``version``), or ``None``
        (no such version, or the schema is deleted)."""
        versions = self.versions(topic)
        if not versions:
            return None
        if version is None or len(version) != _VERSION.size:
            index = len(versions) - 1
        else:
            (index,) = _VERSION.unpack(version)
            if not 0 <= index < len(versions):
                return None
        if versions[index].deleted:
            return None
        return versions[index], _VERSION.pack(index)

    @staticmethod
    def version_number(version: bytes) -> int:
        return _VERSION.unpack(version)[0]

    @staticmethod
    def version_bytes(number: int) -> bytes:
        return _VERSION.pack(number)
