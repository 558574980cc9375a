"""A small message-browser widget over :func:`pulsarlab.browse.browse_messages`.

Filter boxes (key, text, JSON path), newest/oldest first, and previous/next page buttons over
a table of message id, key, value, properties, publish time and redelivery count. It reads
through the admin API only, like ``%pulsar browse`` (which opens it with ``--widget``).
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

import ipywidgets

from pulsarlab.browse import MessageFilter, browse_messages

__all__ = ["MessageBrowser"]

_COLUMNS = ("message_id", "key", "value", "properties", "publish_time", "redelivery_count")


class MessageBrowser:
    """Page through ``partitions`` of a topic with ``topics`` (an admin's ``topics``)."""

    def __init__(self, topics: Any, partitions: Sequence[str], *, subscription: str | None = None,
                 count: int = 20, decode: Any = None) -> None:
        """``decode``: a :class:`pulsarlab.schema_values.SchemaDecoder` for the values."""
        self.topics = topics
        self.decode = decode
        self.partitions = list(partitions)
        self.subscription = subscription
        self.count = count
        self.page = 0
        self.rows: list[dict[str, Any]] = []
        self.key = ipywidgets.Text(placeholder="key", layout={"width": "120px"})
        self.contains = ipywidgets.Text(placeholder="value contains", layout={"width": "160px"})
        self.json_path = ipywidgets.Text(placeholder="JSON path[=value]",
                                         layout={"width": "160px"})
        self.newest = ipywidgets.Checkbox(description="newest first", indent=False)
        self.previous = ipywidgets.Button(description="◀ previous", layout={"width": "110px"})
        self.next = ipywidgets.Button(description="next ▶", layout={"width": "110px"})
        self.status = ipywidgets.HTML()
        self.table = ipywidgets.HTML()
        for box in (self.key, self.contains, self.json_path):
            box.continuous_update = False  # filter on Enter (or leaving the box)
            box.observe(lambda _: self.go(0), names="value")
        self.newest.observe(lambda _: self.go(0), names="value")
        self.previous.on_click(lambda _: self.go(max(self.page - 1, 0)))
        self.next.on_click(lambda _: self.go(self.page + 1))
        controls = ipywidgets.HBox([self.key, self.contains, self.json_path, self.newest,
                                    self.previous, self.next])
        self.widget = ipywidgets.VBox([controls, self.status, self.table])
        self.go(0)

    def go(self, page: int) -> None:
        """Show ``page`` with the current filters (an error is shown, never raised)."""
        keep = MessageFilter(key=self.key.value or None, contains=self.contains.value or None,
                             json_path=self.json_path.value or None)
        try:
            rows, read = browse_messages(
                self.topics, self.partitions, subscription=self.subscription,
                start="latest" if self.newest.value else "earliest", count=self.count,
                page=page, keep=keep, decode=self.decode)
        except Exception as exc:  # a refusal of the admin API is shown in the widget
            self.status.value = f"<span style='color:#c62828'>{html.escape(str(exc))}</span>"
            return
        self.page, self.rows = page, rows
        self.previous.disabled = page == 0
        self.next.disabled = len(rows) < self.count
        self.status.value = html.escape(f"page {page}: {len(rows)} messages ({read} read)")
        self.table.value = self.table_html()

    def table_html(self) -> str:
        head = "".join(f"<th>{c}</th>" for c in _COLUMNS)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(_text(r.get(c)))}</td>" for c in _COLUMNS)
            + "</tr>" for r in self.rows)
        return f"<table><tr>{head}</tr>{body}</table>"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = dict(self.widget._repr_mimebundle_(**kwargs))
        bundle["text/html"] = self.table_html()
        bundle["text/plain"] = f"MessageBrowser(page {self.page}, {len(self.rows)} messages)"
        return bundle


def _text(value: Any) -> str:
    if value is None or value == {}:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)
