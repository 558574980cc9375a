"""A message from Pulsar's peek / examine-message REST answer, as ``Admin`` returns it.

The answer's body is the payload and its ``X-Pulsar-*`` headers carry the metadata
(``broker/web/messages.py`` writes them, Pulsar's broker writes the same); this reads them
back into ``{"messageId", "topic", "metadata", "payload"}`` with ``MessageMetadata``'s field
names (``publish_time`` in epoch milliseconds, ``properties`` as a dict …).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

# header -> metadata field, for the integer-valued ones
_INTEGERS = {
    "X-Pulsar-sequence-id": "sequence_id",
    "X-Pulsar-num-batch-message": "num_messages_in_batch",
    "X-Pulsar-uncompressed-size": "uncompressed_size",
    "X-Pulsar-num-chunks-from-msg": "num_chunks_from_msg",
    "X-Pulsar-total-chunk-msg-size": "total_chunk_msg_size",
    "X-Pulsar-chunk-id": "chunk_id",
    "X-Pulsar-highest-sequence-id": "highest_sequence_id",
    "X-Pulsar-marker-type": "marker_type",
}
_TIMES = {
    "X-Pulsar-publish-time": "publish_time",
    "X-Pulsar-event-time": "event_time",
    "X-Pulsar-deliver-at-time": "deliver_at_time",
}
_BASE64 = {
    "X-Pulsar-Base64-ordering-key": "ordering_key",
    "X-Pulsar-Base64-schema-version-b64encoded": "schema_version",
}


def epoch_ms(text: str | None) -> int | None:
    """An ISO 8601 time (``2024-05-01T10:00:00.123Z``) as epoch milliseconds."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return round(moment.timestamp() * 1000)


def _integer(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def message_from_headers(topic: str, body: bytes, headers: Mapping[str, str]) -> dict[str, Any]:
    """One peeked or examined message: its id (``ledger:entry:partition``), topic, metadata
    (the fields the headers carry) and payload."""
    metadata: dict[str, Any] = {}
    producer = headers.get("X-Pulsar-producer-name")
    if producer:
        metadata["producer_name"] = producer
    for header, field in _INTEGERS.items():
        value = headers.get(header)
        number = _integer(value) if value is not None else None
        if number is not None:
            metadata[field] = number
    for header, field in _TIMES.items():
        ms = epoch_ms(headers.get(header))
        if ms is not None:
            metadata[field] = ms
    props = headers.get("X-Pulsar-PROPERTY")
    if props:
        with contextlib.suppress(ValueError):
            metadata["properties"] = json.loads(props)
    key = headers.get("X-Pulsar-partition-key")
    if key is not None:
        metadata["partition_key"] = key
        if headers.get("X-Pulsar-partition-key-b64-encoded") == "true":
            metadata["partition_key_b64_encoded"] = True
    for header, field in _BASE64.items():
        value = headers.get(header)
        if value:
            with contextlib.suppress(binascii.Error, ValueError):
                metadata[field] = base64.b64decode(value)
    codec = headers.get("X-Pulsar-compression")
    if codec:
        metadata["compression"] = codec
    if headers.get("X-Pulsar-null-value") == "true":
        metadata["null_value"] = True
    uuid = headers.get("X-Pulsar-uuid")
    if uuid is not None:
        metadata["uuid"] = uuid
    message_id = headers.get("X-Pulsar-Message-ID") or ""
    if message_id.count(":") == 1:  # ledger:entry; pulsar-admin prints it with the partition
        _, marker, index = topic.rpartition("-partition-")
        message_id = f"{message_id}:{index if marker and index.isdigit() else -1}"
    return {"messageId": message_id, "topic": topic, "metadata": metadata, "payload": body}
