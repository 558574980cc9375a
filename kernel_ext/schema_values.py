"""A stored message's value decoded by its topic's schema (what ``%pulsar browse`` shows).

The schema comes from the admin API (``GET /admin/v2/schemas/{tenant}/{ns}/{topic}/schema``
and ``.../schema/{version}``, the ``GetSchemaResponse`` Pulsar serves: ``type``, ``data``,
``version``). A message that carries a schema version (8 bytes, big-endian, as Pulsar
writes it) is decoded by that version; one without, by the latest. ``AVRO`` values are
read with fastavro (the ``ops`` extra), ``JSON`` values parsed, ``STRING`` values as UTF-8;
any other type, a topic without a schema, or bytes the schema cannot read fall back to the
plain value (text when it is UTF-8, else the bytes).
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable, Mapping
from typing import Any

from .extras import require
from .results import decode_value

__all__ = ["SchemaDecoder", "admin_lookup", "schema_version_number"]

SchemaLookup = Callable[[str, int | None], Mapping[str, Any] | None]
"""``(topic, version or None for the latest)`` → a ``GetSchemaResponse`` dict, or None."""


def schema_version_number(version: Any) -> int | None:
    """A message's schema version as a number (8 big-endian bytes, or already a number)."""
    if isinstance(version, int):
        return version
    if isinstance(version, bytes | bytearray) and len(version) == 8:
        return struct.unpack(">q", bytes(version))[0]
    return None


class SchemaDecoder:
    """Decodes payloads of topics by their schemas, asking ``lookup`` once per version."""

    def __init__(self, lookup: SchemaLookup) -> None:
        self._lookup = lookup
        self._schemas: dict[tuple[str, int | None], Any] = {}

    def _schema(self, topic: str, version: int | None) -> tuple[str, Any] | None:
        key = (topic, version)
        if key not in self._schemas:
            info = self._lookup(topic, version)
            self._schemas[key] = None if info is None else _prepared(info)
        return self._schemas[key]

    def __call__(self, topic: str, payload: bytes | None, schema_version: Any = None) -> Any:
        """``payload`` of ``topic`` (a partition reads by its topic's schema) decoded."""
        if payload is None:
            return None
        base, marker, index = topic.rpartition("-partition-")
        topic = base if marker and index.isdigit() else topic
        schema = self._schema(topic, schema_version_number(schema_version))
        if schema is None:
            return decode_value(payload)
        kind, parsed = schema
        try:
            if kind == "AVRO":
                fastavro = require("fastavro", "decoding an Avro value")
                return fastavro.schemaless_reader(io.BytesIO(payload), parsed)
            if kind == "JSON":
                return json.loads(payload)
        except (ValueError, EOFError, IndexError, KeyError, TypeError):
            return decode_value(payload)  # not what the schema says: show what is there
        return decode_value(payload)


def _prepared(info: Mapping[str, Any]) -> tuple[str, Any]:
    kind = str(info.get("type") or "NONE").upper()
    if kind != "AVRO":
        return kind, None
    fastavro = require("fastavro", "decoding an Avro value")
    return kind, fastavro.parse_schema(json.loads(info.get("data") or "{}"))


def admin_lookup(admin: Any) -> SchemaLookup:
    """Schema lookups through ``admin.schemas`` (pulsarlab's admin or a cluster's REST
    admin); a topic without a schema (404, "Schema not found") gives None."""

    def lookup(topic: str, version: int | None) -> Mapping[str, Any] | None:
        try:
            return admin.schemas.get_schema(topic, version)
        except Exception as exc:  # each admin raises its own not-found error
            if getattr(exc, "status", None) == 404 or "not found" in str(exc).lower():
                return None
            raise

    return lookup
