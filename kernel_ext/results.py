"""What the ``%pulsar`` magics return: plain lists and dicts that display themselves well.

Each result *is* the plain object (``isinstance(stats, dict)``, ``msgs[0]["value"]``), so it
can be kept and used in code; when it is a cell's last value IPython shows it once, as pretty
text (indented JSON for stats) or, for messages, an HTML table.
"""

from __future__ import annotations

import datetime
import html
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["JSONDict", "Lines", "MessageList", "SentMessages", "decode_value", "message_row"]


def decode_value(data: bytes | None) -> str | bytes | None:
    """A payload as text when it is UTF-8, else the bytes themselves."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


class JSONDict(dict):
    """A dict (stats, status) shown as indented JSON."""

    title: str | None = None

    def __init__(self, data: Mapping[str, Any] | None = None, title: str | None = None) -> None:
        super().__init__(data or {})
        self.title = title

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        text = json.dumps(self, indent=2, default=str)
        p.text(f"{self.title}\n{text}" if self.title else text)


class Lines(list):
    """A list of names (topics, subscriptions) shown one per line."""

    def __init__(self, items: Iterable[Any] = (), title: str = "", empty: str = "(none)") -> None:
        super().__init__(items)
        self.title = title
        self.empty = empty

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        lines = [self.title] if self.title else []
        lines += [f"  {item}" for item in self] if self else [f"  {self.empty}"]
        p.text("\n".join(lines))


class SentMessages(list):
    """The message ids of a ``produce``, shown as one summary line."""

    def __init__(self, ids: Iterable[Any], topic: str) -> None:
        super().__init__(ids)
        self.topic = topic

    def summary(self) -> str:
        if not self:
            return f"sent no message to {self.topic}"
        noun = "message" if len(self) == 1 else "messages"
        span = f"id {self[0]}" if len(self) == 1 else f"ids {self[0]} … {self[-1]}"
        return f"sent {len(self)} {noun} to {self.topic} ({span})"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.summary())


_COLUMNS = ("message_id", "key", "value", "properties", "publish_time", "redelivery_count")


def message_row(
    *,
    topic: str,
    message_id: str,
    key: str | None,
    data: bytes | None,
    properties: Mapping[str, str] | None = None,
    publish_time: int | None = None,
    event_time: int | None = None,
    redelivery_count: int | None = None,
    producer_name: str | None = None,
) -> dict[str, Any]:
    """One message as the dict a ``consume``/``peek`` result holds."""
    return {
        "topic": topic,
        "message_id": message_id,
        "key": key or None,
        "value": decode_value(data),
        "properties": dict(properties or {}),
        "publish_time": publish_time,
        "event_time": event_time or None,
        "redelivery_count": redelivery_count,
        "producer_name": producer_name,
    }


def _admin_id(text: Any) -> str:
    """The admin API's ``ledger:entry:partition[:batch]`` as ``str(MessageId)`` prints ids."""
    parts = str(text).split(":")
    if len(parts) in (3, 4) and all(re.fullmatch(r"-?\d+", p) for p in parts):
        return "(" + ",".join(parts + ["-1"] * (4 - len(parts))) + ")"
    return str(text)


def admin_message_row(topic: str, m: Mapping[str, Any]) -> dict[str, Any]:
    """One message from the admin API's peek or examine-message, as a result row."""
    meta = m.get("metadata", {})
    return message_row(
        topic=m.get("topic", topic), message_id=_admin_id(m.get("messageId")),
        key=meta.get("partition_key"), data=m.get("payload"),
        properties=meta.get("properties"), publish_time=meta.get("publish_time"),
        event_time=meta.get("event_time"), redelivery_count=m.get("redeliveryCount"),
        producer_name=meta.get("producer_name"),
    )


def _cell(value: Any, width: int = 60) -> str:
    text = "" if value is None else (value if isinstance(value, str) else repr(value))
    if isinstance(value, dict) and not value:
        text = ""
    return text if len(text) <= width else text[: width - 1] + "…"


def _shown(column: str, value: Any, width: int = 60) -> str:
    """A table cell: a publish time reads as a UTC time, with the epoch milliseconds the
    message carries (the row itself keeps the number, as the client returns it)."""
    if column == "publish_time" and isinstance(value, int) and value > 0:
        moment = datetime.datetime.fromtimestamp(value / 1000, tz=datetime.UTC)
        return f"{moment:%Y-%m-%d %H:%M:%S}.{value % 1000:03d} UTC ({value})"
    return _cell(value, width)


class MessageList(list):
    """Messages (dicts) from ``consume`` or ``peek``, shown as a table."""

    def __init__(self, rows: Iterable[dict[str, Any]], title: str) -> None:
        super().__init__(rows)
        self.title = title

    def to_pandas(self) -> Any:
        """The messages as a ``pandas.DataFrame`` (needs pandas)."""
        import pandas

        return pandas.DataFrame(list(self))

    def _header(self) -> str:
        noun = "message" if len(self) == 1 else "messages"
        return f"{len(self)} {noun} {self.title}"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        if not self:
            p.text(self._header())
            return
        rows = [list(_COLUMNS)] + [[_shown(c, m.get(c)) for c in _COLUMNS] for m in self]
        widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]
        lines = [self._header()]
        lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
                  for r in rows]
        p.text("\n".join(lines))

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{c}</th>" for c in _COLUMNS)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(_shown(c, m.get(c), 200))}</td>" for c in _COLUMNS)
            + "</tr>"
            for m in self
        )
        return (
            f"<p>{html.escape(self._header())}</p>"
            + (f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
               if self else "")
        )
