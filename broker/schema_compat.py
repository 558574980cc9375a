"""Schema compatibility strategies (Pulsar's ``SchemaCompatibilityStrategy`` and its Avro /
JSON checks), on Avro's schema-resolution rules.

A reader schema can read what a writer schema wrote when: the types match or the writer's
promotes to the reader's (int → long/float/double, long → float/double, float → double,
string ↔ bytes); named types (records, enums, fixed) need the same unqualified name or
a reader alias; for records, every reader field is in the writer (same name or an alias)
with a readable type, or has a default; enums: the writer's symbols are the reader's (or
the reader has a default); arrays, maps: their items/values; fixed: the same size; a writer
union must be readable branch by branch, a reader union needs one branch that reads the
writer. BACKWARD: the new schema reads the last one; FORWARD: the last reads the new; FULL:
both; ``_TRANSITIVE``: against every version, not only the last. Types other than AVRO and
JSON are compatible with themselves; a change of type is compatible only under
ALWAYS_COMPATIBLE.
"""

from __future__ import annotations

import json
from typing import Any

_AVRO_TYPES = (2, 4)  # JSON, AVRO: their definitions are Avro schemas
_PROMOTIONS = {
    "int": {"long", "float", "double"}, "long": {"float", "double"}, "float": {"double"},
    "string": {"bytes"}, "bytes": {"string"},
}
_NAMED = ("record", "error", "enum", "fixed")


def _collect(schema: Any, names: dict[str, Any]) -> None:
    """Register every named type of ``schema`` by its name and full name."""
    if isinstance(schema, list):
        for branch in schema:
            _collect(branch, names)
    elif isinstance(schema, dict):
        kind = schema.get("type")
        if kind in _NAMED and "name" in schema:
            name = schema["name"]
            names[name] = schema
            if schema.get("namespace"):
                names[f"{schema['namespace']}.{name}"] = schema
            for field in schema.get("fields", []):
                _collect(field.get("type"), names)
        elif kind == "array":
            _collect(schema.get("items"), names)
        elif kind == "map":
            _collect(schema.get("values"), names)
        elif isinstance(kind, dict | list):
            _collect(kind, names)


def _same_name(reader: dict[str, Any], writer: dict[str, Any]) -> bool:
    """Named types match by unqualified name, or a reader alias naming the writer."""
    name = str(writer.get("name", "")).rsplit(".", 1)[-1]
    aliases = {str(a).rsplit(".", 1)[-1] for a in reader.get("aliases", [])}
    return str(reader.get("name", "")).rsplit(".", 1)[-1] == name or name in aliases


def _norm(schema: Any, names: dict[str, Any]) -> Any:
    if isinstance(schema, str):
        return names.get(schema, schema)
    if isinstance(schema, dict) and schema.get("type") not in (*_NAMED, "array", "map"):
        return _norm(schema.get("type"), names)  # {"type": "int", "logicalType": ...}
    return schema


class _Resolver:
    def __init__(self, reader: Any, writer: Any) -> None:
        self.rnames: dict[str, Any] = {}
        self.wnames: dict[str, Any] = {}
        _collect(reader, self.rnames)
        _collect(writer, self.wnames)
        self.seen: set[tuple[int, int]] = set()

    def can_read(self, reader: Any, writer: Any) -> bool:
        r, w = _norm(reader, self.rnames), _norm(writer, self.wnames)
        if isinstance(w, list):
            return all(self.can_read(reader, branch) for branch in w)
        if isinstance(r, list):
            return any(self.can_read(branch, writer) for branch in r)
        if isinstance(r, str) or isinstance(w, str):
            return isinstance(r, str) and isinstance(w, str) and (
                r == w or r in _PROMOTIONS.get(w, ())
            )
        kind = r.get("type")
        if kind != w.get("type") and not {kind, w.get("type")} <= {"record", "error"}:
            return False
        if kind in _NAMED and not _same_name(r, w):
            return False
        if kind in ("record", "error"):
            key = (id(r), id(w))
            if key in self.seen:
                return True
            self.seen.add(key)
            written = {f["name"]: f for f in w.get("fields", [])}
            for field in r.get("fields", []):
                source = written.get(field["name"]) or next(
                    (written[a] for a in field.get("aliases", []) if a in written), None
                )
                if source is None:
                    if "default" not in field:
                        return False
                elif not self.can_read(field["type"], source["type"]):
                    return False
            return True
        if kind == "enum":
            return set(w.get("symbols", [])) <= set(r.get("symbols", [])) or "default" in r
        if kind == "array":
            return self.can_read(r.get("items"), w.get("items"))
        if kind == "map":
            return self.can_read(r.get("values"), w.get("values"))
        if kind == "fixed":
            return r.get("size") == w.get("size")
        return True


def can_read(reader: Any, writer: Any) -> bool:
    """Whether data written with the Avro schema ``writer`` can be read with ``reader``."""
    return _Resolver(reader, writer).can_read(reader, writer)


def incompatibility(
    strategy: str, history: list[tuple[int, int, bytes]], new: tuple[int, bytes]
) -> str | None:
    """Why ``new`` (type, definition) may not follow ``history`` ((version, type,
    definition), oldest first, deleted versions left out) under ``strategy``; ``None`` when
    it may."""
    if strategy == "ALWAYS_COMPATIBLE" or not history:
        return None
    if strategy == "ALWAYS_INCOMPATIBLE":
        return "the namespace's schema compatibility strategy is ALWAYS_INCOMPATIBLE"
    targets = history if strategy.endswith("_TRANSITIVE") else history[-1:]
    base = strategy.removesuffix("_TRANSITIVE")
    new_type, new_data = new
    for version, old_type, old_data in reversed(targets):
        if old_type != new_type:
            return (f"the schema type changed from {old_type} to {new_type} "
                    f"(version {version}); only ALWAYS_COMPATIBLE allows that")
        if new_type not in _AVRO_TYPES or old_data == new_data:
            continue
        try:
            old_schema, new_schema = json.loads(old_data), json.loads(new_data)
        except ValueError:
            return f"a schema definition is not valid JSON (version {version} or the new one)"
        if base in ("BACKWARD", "FULL") and not can_read(new_schema, old_schema):
            return f"{strategy}: the new schema cannot read data written with version {version}"
        if base in ("FORWARD", "FULL") and not can_read(old_schema, new_schema):
            return f"{strategy}: version {version} cannot read data written with the new schema"
    return None
