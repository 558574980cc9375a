"""The admin side of the schema registry (Pulsar's ``SchemasResource``): get a topic's
schema (latest or one version), every version, post one, delete it, as Pulsar's
``GetSchemaResponse`` / ``PostSchemaResponse`` / ``DeleteSchemaResponse`` JSON.

A posted schema passes the namespace's compatibility strategy as a producer's does;
``compatibility`` answers whether one would, without adding it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import InvalidArgument, TopicNotFound
from .schemas import (
    SCHEMA_TYPES,
    SchemaInfo,
    SchemaRegistry,
    schema_type_number,
)
from .topic_name import TopicName


def _response(info: SchemaInfo, version: bytes) -> dict[str, Any]:
    return {
        "version": SchemaRegistry.version_number(version),
        "type": SCHEMA_TYPES.get(info.type, "NONE"),
        "timestamp": info.timestamp_ms,
        "data": info.data.decode("utf-8", errors="replace"),
        "properties": dict(info.properties),
    }


class SchemaAdmin:
    """``schemas.*`` admin operations over one :class:`SchemaRegistry`."""

    def __init__(
        self, registry: SchemaRegistry, now_ms: Callable[[], int],
        strategy_for: Callable[[str], str],
    ) -> None:
        self.registry = registry
        self._now_ms = now_ms
        self._strategy_for = strategy_for

    def get_schema(self, topic: str, version: int | None = None) -> dict[str, Any]:
        found = self.registry.get(
            topic, None if version is None else SchemaRegistry.version_bytes(version)
        )
        if found is None:
            raise TopicNotFound("Schema not found")
        return _response(*found)

    def get_all_versions(self, topic: str) -> dict[str, Any]:
        versions = self.registry.versions(topic)
        return {"getSchemaResponses": [
            _response(info, SchemaRegistry.version_bytes(i))
            for i, info in enumerate(versions) if not info.deleted
        ]}

    def post_schema(self, topic: str, payload: Any) -> dict[str, Any]:
        """``PostSchemaPayload``: ``{"type", "schema", "properties"}``."""
        info = self._schema(topic, payload)
        version = self.registry.get_or_create(topic, info, self._strategy_for(topic))
        return {"version": {"version": SchemaRegistry.version_number(version)}}

    def test_compatibility(self, topic: str, payload: Any) -> dict[str, Any]:
        """``IsCompatibilityResponse``: would the namespace's strategy accept the schema."""
        strategy = self._strategy_for(topic)
        reason = self.registry.incompatibility(topic, self._schema(topic, payload), strategy)
        return {"compatibility": reason is None, "schemaCompatibilityStrategy": strategy}

    def _schema(self, topic: str, payload: Any) -> SchemaInfo:
        if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
            raise InvalidArgument('the schema must be a JSON object with "type" and "schema"')
        try:
            number = schema_type_number(payload["type"])
        except ValueError as exc:
            raise InvalidArgument(str(exc)) from None
        definition = payload.get("schema") or ""
        properties = payload.get("properties") or {}
        if not isinstance(definition, str) or not isinstance(properties, dict):
            raise InvalidArgument('"schema" must be a string and "properties" an object')
        return SchemaInfo(
            number, TopicName.get(topic).local_name, definition.encode("utf-8"),
            tuple(sorted((str(k), str(v)) for k, v in properties.items())), self._now_ms(),
        )

    def delete_schema(self, topic: str) -> dict[str, Any]:
        version = self.registry.delete(topic, self._now_ms())
        if version is None:
            raise TopicNotFound("Schema not found")
        return {"version": SchemaRegistry.version_number(version)}
