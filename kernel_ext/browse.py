"""A read-only message browser: page through a topic's stored messages and filter them.

Messages are read with the admin API only (``examine-message`` from the earliest or the
latest message, or ``peek`` at a subscription's next messages, which also gives redelivery
counts), so browsing never creates a subscription or moves a cursor: it is safe on a cluster
connected read-only. Filters: key, properties, publish-time bounds, a substring of the value
and a JSON path (``a.b.0`` or ``a.b=VALUE``) of a JSON value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .results import admin_message_row

__all__ = ["MessageFilter", "browse_messages", "parse_time", "readable_time"]

_MISSING = object()
Decode = Callable[[str, "bytes | None", Any], Any]
"""``(partition, payload, schema version)`` → the value a row shows."""


def parse_time(text: str) -> int:
    """Milliseconds since the epoch, or an ISO 8601 date/time (UTC unless it says)."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not a time: {text!r} (give ms since the epoch or an ISO date, "
                         "e.g. 2024-06-11T09:12:40)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


def readable_time(ms: Any) -> str | None:
    """``2024-06-11T09:12:40.518Z`` (Pulsar's date format) for epoch milliseconds."""
    if not isinstance(ms, int) or ms <= 0:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def _json_path(value: Any, path: str) -> Any:
    for part in path.split(".") if path else ():
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.lstrip("-").isdigit() and -len(value) <= int(
                part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def _decode_json(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


@dataclass
class MessageFilter:
    """Which messages to keep; an unset field keeps every message."""

    key: str | None = None
    properties: Sequence[tuple[str, str]] = field(default_factory=tuple)
    since_ms: int | None = None
    until_ms: int | None = None
    contains: str | None = None
    json_path: str | None = None  # "a.b" (present) or "a.b=VALUE" (equal)

    def __call__(self, row: Mapping[str, Any]) -> bool:
        if self.key is not None and row.get("key") != self.key:
            return False
        props = row.get("properties") or {}
        if any(props.get(k) != v for k, v in self.properties):
            return False
        published = row.get("publish_time") or 0
        if self.since_ms is not None and published < self.since_ms:
            return False
        if self.until_ms is not None and published > self.until_ms:
            return False
        value = row.get("value")
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        if self.contains is not None and self.contains not in text:
            return False
        if self.json_path is not None:
            path, eq, expected = self.json_path.partition("=")
            found = _json_path(value, path.strip())
            if found is _MISSING:
                return False
            if eq and str(found) != expected and found != _decode_json(expected):
                try:
                    return found == json.loads(expected)
                except ValueError:
                    return False
        return True


def _row(part: str, m: Mapping[str, Any], decode: Decode | None) -> dict[str, Any]:
    row = admin_message_row(part, m)
    if decode is not None:
        row["value"] = decode(part, m.get("payload"), (m.get("metadata") or {}).get(
            "schema_version"))
    return row


def _rows(topics: Any, part: str, subscription: str | None, start: str,
          scan: int, decode: Decode | None) -> Iterator[dict[str, Any]]:
    """Up to ``scan`` messages of one partition, in browse order."""
    if subscription is not None:
        for m in topics.peek_messages(part, subscription, scan):
            yield _row(part, m, decode)
        return
    seen = None
    for n in range(1, scan + 1):
        try:
            m = topics.examine_message(part, start, n)
        except Exception:
            if n == 1:
                raise
            return  # past the end of the topic
        if m.get("messageId") == seen:
            return  # examine stops at the last message: the same one again means the end
        seen = m.get("messageId")
        yield _row(part, m, decode)


def browse_messages(
    topics: Any,
    partitions: Sequence[str],
    *,
    subscription: str | None = None,
    start: str = "earliest",
    count: int = 20,
    page: int = 0,
    scan: int = 1000,
    keep: Callable[[Mapping[str, Any]], bool] | None = None,
    decode: Decode | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """Page ``page`` (``count`` a page) of the messages that ``keep`` accepts, reading at most
    ``scan`` messages a partition; returns the rows and how many messages were read.
    ``decode`` (a :class:`~.schema_values.SchemaDecoder`) reads each value by its schema."""
    if start not in ("earliest", "latest"):
        raise ValueError(f"start must be 'earliest' or 'latest', not {start!r}")
    keep = keep or MessageFilter()
    skip, out, read = page * count, [], 0
    for part in partitions:
        for row in _rows(topics, part, subscription, start, scan, decode):
            read += 1
            row["value"] = _decode_json(row.get("value"))
            if not keep(row):
                continue
            if skip:
                skip -= 1
                continue
            out.append(row)
            if len(out) >= count:
                return _readable(out), read
    return _readable(out), read


def _readable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for row in rows:
        row["publish_time"] = readable_time(row.get("publish_time"))
        row["event_time"] = readable_time(row.get("event_time"))
    return rows
