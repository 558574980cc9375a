"""A stored message as Pulsar's peek / examine-message answer: raw payload, ``X-Pulsar-*``.

The body is the payload (uncompressed, as Pulsar's broker returns it); the metadata goes in
the headers Pulsar's admin clients read: ``X-Pulsar-Message-ID`` (``ledger:entry``),
``X-Pulsar-publish-time`` (ISO 8601, UTC), ``X-Pulsar-PROPERTY`` (the properties as JSON)
and one ``X-Pulsar-PROPERTY-<key>`` per property, and the rest of ``MessageMetadata``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
from datetime import UTC, datetime
from typing import Any

from tornado.httputil import HTTPHeaders

from ..format.compression import decompress
from .base import AdminResource

_HEADER_SAFE = re.compile(r"[\x21-\x7e][\x20-\x7e]*")


def _time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z"
    )


def message_headers(message: dict[str, Any], payload_size: int) -> dict[str, str]:
    """The ``X-Pulsar-*`` headers of one message (as admin_handler describes it)."""
    meta = message["metadata"]
    ledger, entry, _partition = message["messageId"].split(":")
    headers = {"X-Pulsar-Message-ID": f"{ledger}:{entry}"}
    props = meta.get("properties") or {}
    if props:
        headers["X-Pulsar-PROPERTY"] = json.dumps(props)
        for key, value in props.items():
            if _HEADER_SAFE.fullmatch(key) and _HEADER_SAFE.fullmatch(value):
                headers[f"X-Pulsar-PROPERTY-{key}"] = value
    if meta.get("publish_time"):
        headers["X-Pulsar-publish-time"] = _time(meta["publish_time"])
    if meta.get("event_time"):
        headers["X-Pulsar-event-time"] = _time(meta["event_time"])
    if meta.get("deliver_at_time"):
        headers["X-Pulsar-deliver-at-time"] = _time(meta["deliver_at_time"])
    if meta.get("num_messages_in_batch") is not None:
        headers["X-Pulsar-num-batch-message"] = str(meta["num_messages_in_batch"])
        headers["X-Pulsar-batch-size"] = str(payload_size)
    if meta.get("null_value"):
        headers["X-Pulsar-null-value"] = "true"
    headers["X-Pulsar-Is-Encrypted"] = "false"
    headers["X-Pulsar-producer-name"] = meta.get("producer_name", "")
    headers["X-Pulsar-sequence-id"] = str(meta.get("sequence_id", 0))
    key = meta.get("partition_key")
    if key is not None:
        if meta.get("partition_key_b64_encoded") or not _HEADER_SAFE.fullmatch(key):
            headers["X-Pulsar-partition-key-b64-encoded"] = "true"
            if not meta.get("partition_key_b64_encoded"):
                key = base64.b64encode(key.encode()).decode("ascii")
        headers["X-Pulsar-partition-key"] = key
    for field, header in (("ordering_key", "X-Pulsar-Base64-ordering-key"),
                          ("schema_version", "X-Pulsar-Base64-schema-version-b64encoded")):
        if meta.get(field) is not None:
            headers[header] = base64.b64encode(meta[field]).decode("ascii")
    if meta.get("compression", "NONE") != "NONE":
        headers["X-Pulsar-compression"] = meta["compression"]
        headers["X-Pulsar-uncompressed-size"] = str(meta.get("uncompressed_size", 0))
    for field, header in (("uuid", "X-Pulsar-uuid"),
                          ("num_chunks_from_msg", "X-Pulsar-num-chunks-from-msg"),
                          ("total_chunk_msg_size", "X-Pulsar-total-chunk-msg-size"),
                          ("chunk_id", "X-Pulsar-chunk-id"),
                          ("highest_sequence_id", "X-Pulsar-highest-sequence-id"),
                          ("marker_type", "X-Pulsar-marker-type")):
        if meta.get(field) is not None:
            headers[header] = str(meta[field])
    headers["X-Pulsar-txn-uncommitted"] = "false"
    return headers


class PulsarSpelledHeaders(HTTPHeaders):
    """Response headers sent with the spelling they were set with.

    Tornado writes header names capitalised (``X-Pulsar-Message-Id``); Pulsar's Java admin
    client finds the ``X-Pulsar-PROPERTY-<key>`` headers by a case-sensitive match, so the
    names keep Pulsar's spelling (and the property key's case) on the wire.
    """

    def __init__(self, *args: Any, **kwargs: str) -> None:
        self.spelling: dict[str, str] = {}
        super().__init__(*args, **kwargs)

    def __setitem__(self, name: str, value: str) -> None:
        super().__setitem__(name, value)
        self.spelling[name.lower()] = name

    def get_all(self) -> Any:
        for name, value in super().get_all():
            yield self.spelling.get(name.lower(), name), value


class MessageHandler(AdminResource):
    """Base of the resources that answer with one stored message."""

    def clear(self) -> None:
        super().clear()
        self._headers = PulsarSpelledHeaders(self._headers)


def write_message(handler: AdminResource, message: dict[str, Any]) -> None:
    """Answer ``handler``'s request with ``message`` (200, octet-stream)."""
    meta = message["metadata"]
    payload = message["payload"]
    codec = meta.get("compression", "NONE")
    if codec != "NONE":
        # A payload that does not decompress is sent as stored; the headers say its codec.
        # Inflating stops at the declared size, and a declared size over max_message_size
        # is not tried at all (a decompression bomb costs nothing here).
        with contextlib.suppress(ValueError):
            payload = decompress(codec, payload, meta.get("uncompressed_size", 0),
                                 max_size=handler.broker.settings.max_message_size)
    for name, value in message_headers(message, len(payload)).items():
        handler.set_header(name, value)
    handler.set_header("Content-Type", "application/octet-stream")
    handler.finish(bytes(payload))
