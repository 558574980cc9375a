"""Per-topic schemas for pulsar:// clients (GET_SCHEMA, GET_OR_CREATE_SCHEMA, producers and
consumers that declare one).

Each topic keeps its schema versions in order; a schema equal to a stored one gets that
version back, any other is added (the ALWAYS_COMPATIBLE strategy). A version travels as
8 big-endian bytes, as Pulsar's broker writes it. Schemas of a partition live with the
partitioned topic, so every partition reports the same version. Kept in memory: a restart
starts with no schemas (clients register theirs again when they reconnect).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..topic_name import TopicName

__all__ = ["SchemaInfo", "SchemaRegistry"]

_VERSION = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class SchemaInfo:
    """One schema version: Pulsar's type number, name, definition and properties."""

    type: int
    name: str
    data: bytes
    properties: tuple[tuple[str, str], ...] = ()


class SchemaRegistry:
    """Schema versions per topic (ALWAYS_COMPATIBLE)."""

    def __init__(self) -> None:
        self._topics: dict[str, list[SchemaInfo]] = {}

    @staticmethod
    def _key(topic: str) -> str:
        return str(TopicName.get(topic).partitioned_topic_name)

    def get_or_create(self, topic: str, schema: SchemaInfo) -> bytes:
        """The version of ``schema`` on ``topic``, added if it is new."""
        versions = self._topics.setdefault(self._key(topic), [])
        for index, known in enumerate(versions):
            if known.type == schema.type and known.data == schema.data:
                return _VERSION.pack(index)
        versions.append(schema)
        return _VERSION.pack(len(versions) - 1)

    def get(self, topic: str, version: bytes | None = None) -> tuple[SchemaInfo, bytes] | None:
        """A version of the topic's schema (the latest without ``version``), or ``None``."""
        versions = self._topics.get(self._key(topic))
        if not versions:
            return None
        if version is None or len(version) != _VERSION.size:
            index = len(versions) - 1
        else:
            (index,) = _VERSION.unpack(version)
            if not 0 <= index < len(versions):
                return None
        return versions[index], _VERSION.pack(index)
