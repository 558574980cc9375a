"""Entry format: how one stored entry (a message or a batch) is laid out in the ledger.

An entry is what the client sent — Pulsar's ``MessageMetadata`` (protobuf, serialized as
on the wire) and the payload (a single message, or a batch in Pulsar's layout, compressed
or not) — behind a fixed 26-byte prefix of the fields the dispatcher needs on its hot path
(as Pulsar keeps ``BrokerEntryMetadata`` before the message)::

    u8  format version (2)      u8  flags (bit 0: batched, bit 1: null value,
                                           bit 2: a batch in Pulsar's layout)
    u32 number of messages      u32 sticky key hash (31-bit murmur3, computed at publish)
    i64 deliver-at time (ms, 0 = immediately)   i64 publish time (ms)
    u32 metadata length | Pulsar MessageMetadata (protobuf) | payload bytes

The broker never decodes the payload (batches and compression are the client's business,
as in Pulsar); it reads the prefix to count permits, pick a Key_Shared consumer and hold
back delayed messages, and hands a pulsar:// consumer the metadata and payload exactly as
stored (:func:`pulsar_parts`). Entries published with the core's :class:`MessageMetadata`
only (REST, the health check) get Pulsar metadata built
from it at publish, their batches re-laid in Pulsar's layout (:mod:`.format.metadata`).

**Version 1** (what pulsarlab wrote before, still read): the same prefix with version 1,
then the msgpack-encoded :class:`MessageMetadata` (holding, for pulsar:// publishes, the
client's serialized metadata as ``pulsar_metadata``); its batches are in Pulsar's layout
when bit 2 is set, else in pulsarlab's first layout. Such entries are converted when read
(:func:`decode_entry` gives the same :class:`MessageMetadata`; a pulsar:// consumer gets
them re-laid); nothing on disk is rewritten, so there is no migration to interrupt.
:func:`encode_legacy_entry` still writes that layout, for the tests that write old ledgers.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Collection
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

import msgpack

from .selectors.hashing import NONE_KEY, sticky_key, sticky_key_hash

FORMAT_VERSION = 2
LEGACY_FORMAT_VERSION = 1  # msgpack metadata (pulsarlab's first layout), read, not written
FLAG_BATCHED = 0x01
FLAG_NULL_VALUE = 0x02
FLAG_PULSAR_BATCH = 0x04  # a batch in Pulsar's layout (published over pulsar://)

_PREFIX = struct.Struct(">BBIIqqI")
PREFIX_SIZE = _PREFIX.size
_TAIL = struct.Struct(">qI")  # publish time and metadata length, the prefix's last fields
_TAIL_OFFSET = PREFIX_SIZE - _TAIL.size


@dataclass(slots=True)
class MessageMetadata:
    """Entry-level metadata, with the field names of Pulsar's ``MessageMetadata``."""

    producer_name: str = ""
    sequence_id: int = 0
    publish_time: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    partition_key: str | None = None
    partition_key_b64_encoded: bool = False
    ordering_key: bytes | None = None
    event_time: int = 0
    num_messages_in_batch: int | None = None
    compression: str = "NONE"
    uncompressed_size: int = 0
    deliver_at_time: int = 0
    schema_version: bytes | None = None
    null_value: bool = False
    uuid: str | None = None
    num_chunks_from_msg: int | None = None
    total_chunk_msg_size: int | None = None
    chunk_id: int | None = None
    marker_type: int | None = None
    # For a batch: the sequence id of its last message (``sequence_id`` is the first's).
    highest_sequence_id: int | None = None
    # The serialized Pulsar ``MessageMetadata`` of an entry published over pulsar:// (its
    # payload then has Pulsar's batch layout); pulsar:// consumers get it back unchanged.
    pulsar_metadata: bytes | None = None
    # A batch rebuilt by compaction: bit ``i`` (of byte ``i // 8``, least significant
    # first) set when message ``i`` was compacted out (Pulsar marks such a message with
    # ``SingleMessageMetadata.compacted_out`` and an empty payload; consumers skip it).
    compacted_out: bytes | None = None

    @property
    def num_messages(self) -> int:
        return self.num_messages_in_batch if self.num_messages_in_batch is not None else 1

    def sticky_key(self) -> bytes:
        """The Key_Shared sticky key: ordering key, else partition key, else ``NONE_KEY``."""
        return sticky_key(self.ordering_key, self.partition_key, self.partition_key_b64_encoded)

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set (defaults are left out, as protobuf does).

        Spelled out field by field: this runs for every message published, and a loop over
        ``fields()`` costs three times as much.
        """
        out: dict[str, Any] = {}
        # Where the default is "", 0 or {}, a set value is a true one.
        value = self.producer_name
        if value:
            out["producer_name"] = value
        value = self.sequence_id
        if value:
            out["sequence_id"] = value
        value = self.publish_time
        if value:
            out["publish_time"] = value
        value = self.properties
        if value:
            out["properties"] = value
        if self.partition_key is not None:
            out["partition_key"] = self.partition_key
        if self.partition_key_b64_encoded:
            out["partition_key_b64_encoded"] = self.partition_key_b64_encoded
        if self.ordering_key is not None:
            out["ordering_key"] = self.ordering_key
        value = self.event_time
        if value:
            out["event_time"] = value
        if self.num_messages_in_batch is not None:
            out["num_messages_in_batch"] = self.num_messages_in_batch
        value = self.compression
        if value is not None and value != "NONE":
            out["compression"] = value
        value = self.uncompressed_size
        if value:
            out["uncompressed_size"] = value
        value = self.deliver_at_time
        if value:
            out["deliver_at_time"] = value
        if self.schema_version is not None:
            out["schema_version"] = self.schema_version
        if self.null_value:
            out["null_value"] = self.null_value
        if self.uuid is not None:
            out["uuid"] = self.uuid
        if self.num_chunks_from_msg is not None:
            out["num_chunks_from_msg"] = self.num_chunks_from_msg
        if self.total_chunk_msg_size is not None:
            out["total_chunk_msg_size"] = self.total_chunk_msg_size
        if self.chunk_id is not None:
            out["chunk_id"] = self.chunk_id
        if self.marker_type is not None:
            out["marker_type"] = self.marker_type
        if self.highest_sequence_id is not None:
            out["highest_sequence_id"] = self.highest_sequence_id
        if self.pulsar_metadata is not None:
            out["pulsar_metadata"] = self.pulsar_metadata
        if self.compacted_out is not None:
            out["compacted_out"] = self.compacted_out
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MessageMetadata:
        """Build metadata from a wire/stored map; a wrong field, type or range is a
        ``ValueError`` naming it (the broker answers it as a bad request)."""
        if not isinstance(data, dict):
            raise ValueError(f"metadata must be a map, not {type(data).__name__}")
        for name, value in data.items():
            kind = _FIELD_TYPES.get(name)
            if kind is None:
                raise ValueError(f"unknown metadata field {name!r}")
            if type(value) is kind and kind is not dict:  # the common case, in few steps
                if kind is int:
                    low, high = _INT_LIMITS[name]
                    if not low <= value <= high:
                        raise ValueError(f"metadata field {name!r} is out of range: {value}")
                continue
            if value is None and name in _OPTIONAL:
                continue
            if kind is int:
                if not isinstance(value, int) or isinstance(value, bool):
                    raise ValueError(f"metadata field {name!r} must be an int")
                low, high = _INT_LIMITS[name]
                if not low <= value <= high:
                    raise ValueError(f"metadata field {name!r} is out of range: {value}")
            elif kind is dict:
                if not isinstance(value, dict) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in value.items()
                ):
                    raise ValueError(f"metadata field {name!r} must map strings to strings")
            elif not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
                raise ValueError(f"metadata field {name!r} must be {kind.__name__}")
        return cls(**data)


_FIELD_TYPES: dict[str, type] = {
    "producer_name": str, "sequence_id": int, "publish_time": int, "properties": dict,
    "partition_key": str, "partition_key_b64_encoded": bool, "ordering_key": bytes,
    "event_time": int, "num_messages_in_batch": int, "compression": str,
    "uncompressed_size": int, "deliver_at_time": int, "schema_version": bytes,
    "null_value": bool, "uuid": str, "num_chunks_from_msg": int,
    "total_chunk_msg_size": int, "chunk_id": int, "marker_type": int,
    "highest_sequence_id": int, "pulsar_metadata": bytes, "compacted_out": bytes,
}
_OPTIONAL = frozenset(
    {"partition_key", "ordering_key", "num_messages_in_batch", "schema_version", "uuid",
     "num_chunks_from_msg", "total_chunk_msg_size", "chunk_id", "marker_type",
     "highest_sequence_id", "pulsar_metadata", "compacted_out"}
)
# Ranges follow the protobuf types of Pulsar's ``MessageMetadata``: what Pulsar stores is
# stored (its uint64 fields reach 2^64 - 1; the ZeroMQ face also takes negative ids, as
# Java's signed longs), and what is stored always decodes again. The entry prefix holds
# publish and deliver-at times as i64 and the client's chunk and batch counts are int32.
_U32 = (0, (1 << 32) - 1)
_I32_COUNT = (0, (1 << 31) - 1)
_U64_OR_I64 = (-(1 << 63), (1 << 64) - 1)
_INT_RANGES = {
    "sequence_id": _U64_OR_I64,
    "event_time": _U64_OR_I64,
    "highest_sequence_id": _U64_OR_I64,
    "num_messages_in_batch": (1, (1 << 31) - 1),
    "uncompressed_size": _U32,
    "num_chunks_from_msg": _I32_COUNT,
    "total_chunk_msg_size": _I32_COUNT,
    "chunk_id": _I32_COUNT,
    "marker_type": (-(1 << 31), (1 << 31) - 1),
    "deliver_at_time": (0, (1 << 63) - 1),
    "publish_time": (0, (1 << 63) - 1),
}
_INT_LIMITS = {  # every int field's range (i64 unless _INT_RANGES narrows or widens it)
    name: _INT_RANGES.get(name, (-(1 << 63), (1 << 63) - 1))
    for name, kind in _FIELD_TYPES.items() if kind is int
}
_S64_LOW, _U64_HIGH = _U64_OR_I64
_I64_HIGH = (1 << 63) - 1
_U32_HIGH = (1 << 32) - 1
_I32_HIGH = (1 << 31) - 1
_INT_CHECKS = tuple((name, low, high) for name, (low, high) in _INT_LIMITS.items())


def check_ranges(metadata: MessageMetadata) -> None:
    """``ValueError`` naming the first int field out of its stored range: run on every
    SEND, whichever face it came over, so that whatever is stored decodes again.

    One chained test first (the common case, in about a microsecond); the loop only runs to
    name the field once something is out of range.
    """
    m = metadata
    if (
        _S64_LOW <= m.sequence_id <= _U64_HIGH and 0 <= m.publish_time <= _I64_HIGH
        and _S64_LOW <= m.event_time <= _U64_HIGH and 0 <= m.uncompressed_size <= _U32_HIGH
        and 0 <= m.deliver_at_time <= _I64_HIGH
        and (m.num_messages_in_batch is None or 1 <= m.num_messages_in_batch <= _I32_HIGH)
        and (m.num_chunks_from_msg is None or 0 <= m.num_chunks_from_msg <= _I32_HIGH)
        and (m.total_chunk_msg_size is None or 0 <= m.total_chunk_msg_size <= _I32_HIGH)
        and (m.chunk_id is None or 0 <= m.chunk_id <= _I32_HIGH)
        and (m.marker_type is None or -_I32_HIGH - 1 <= m.marker_type <= _I32_HIGH)
        and (m.highest_sequence_id is None
             or _S64_LOW <= m.highest_sequence_id <= _U64_HIGH)
    ):
        return
    for name, low, high in _INT_CHECKS:
        value = getattr(metadata, name)
        if value is not None and not low <= value <= high:
            raise ValueError(f"metadata field {name!r} is out of range: {value}")


_new_tuple = tuple.__new__
_DEFAULTS = tuple(
    (f.name, {} if f.name == "properties" else f.default) for f in fields(MessageMetadata)
)
_NONE_KEY_HASH = sticky_key_hash(NONE_KEY)


class EntryHeader(NamedTuple):
    """The hot-path fields of an entry, read without decoding its metadata (immutable; a
    tuple because one is made for every entry dispatched)."""

    num_messages: int
    sticky_key_hash: int
    deliver_at_time: int
    publish_time: int
    batched: bool


def encode_entry(metadata: MessageMetadata, payload: bytes) -> bytes:
    """Lay out one entry as stored: the client's serialized Pulsar metadata and payload
    when it sent them (``metadata.pulsar_metadata``), else Pulsar metadata built from
    ``metadata`` (a batch in pulsarlab's first layout re-laid in Pulsar's). The sticky key
    hash is computed here, once, at publish time."""
    raw = metadata.pulsar_metadata
    if raw is None:
        raw, payload = _for_storage()(metadata, payload)
    num = metadata.num_messages_in_batch
    if num is None and not metadata.null_value and metadata.ordering_key is None and (
        metadata.partition_key is None
    ):  # the usual message: _prefix() inlined (it runs for every one published)
        return b"".join((_PREFIX.pack(
            FORMAT_VERSION, 0, 1, _NONE_KEY_HASH, metadata.deliver_at_time,
            metadata.publish_time, len(raw),
        ), raw, payload))
    flags = (FLAG_BATCHED | FLAG_PULSAR_BATCH if num is not None else 0) | (
        FLAG_NULL_VALUE if metadata.null_value else 0
    )
    return b"".join((_prefix(FORMAT_VERSION, flags, metadata, len(raw)), raw, payload))


def encode_legacy_entry(metadata: MessageMetadata, payload: bytes) -> bytes:
    """Lay out one entry in version 1 (msgpack metadata; see the module docstring)."""
    meta = _pack(metadata.to_dict())
    num = metadata.num_messages_in_batch
    flags = (FLAG_BATCHED if num is not None else 0) | (
        FLAG_NULL_VALUE if metadata.null_value else 0
    )
    if num is not None and metadata.pulsar_metadata is not None:
        flags |= FLAG_PULSAR_BATCH
    return b"".join((_prefix(LEGACY_FORMAT_VERSION, flags, metadata, len(meta)), meta, payload))


def _prefix(version: int, flags: int, metadata: MessageMetadata, meta_len: int) -> bytes:
    if metadata.ordering_key is None and metadata.partition_key is None:
        key_hash = _NONE_KEY_HASH
    else:
        key_hash = sticky_key_hash(metadata.sticky_key())
    num = metadata.num_messages_in_batch
    return _PREFIX.pack(
        version,
        flags,
        1 if num is None else num,
        key_hash,
        metadata.deliver_at_time,
        metadata.publish_time,
        meta_len,
    )


def _for_storage() -> Any:
    """:func:`.format.metadata.for_storage` (imported on first use: that module imports
    this one)."""
    from .format.metadata import for_storage

    return for_storage


def _from_pulsar() -> Any:
    """:func:`.format.metadata.from_pulsar`, imported on first use (see :func:`_for_storage`)."""
    global _from_pulsar_fn
    if _from_pulsar_fn is None:
        from .format.metadata import from_pulsar

        _from_pulsar_fn = from_pulsar
    return _from_pulsar_fn


_from_pulsar_fn = None


_packers = threading.local()


def _pack(obj: Any) -> bytes:
    """``msgpack.packb`` with one packer per thread (making a packer costs more than packing
    a small map)."""
    try:
        pack = _packers.pack
    except AttributeError:
        pack = _packers.pack = msgpack.Packer(use_bin_type=True).pack
    return pack(obj)


def read_header(entry: bytes) -> EntryHeader:
    """The hot-path fields; ``ValueError`` if the entry is not in this format."""
    if len(entry) < PREFIX_SIZE:
        raise ValueError(f"entry of {len(entry)} bytes is shorter than its header")
    version, flags, num, hash_, deliver_at, publish_time, _ = _PREFIX.unpack_from(entry)
    if version != FORMAT_VERSION and version != LEGACY_FORMAT_VERSION:
        raise ValueError(f"unknown entry format version {version}")
    # tuple.__new__ directly: a NamedTuple's own __new__ takes three times as long.
    return _new_tuple(
        EntryHeader, (num, hash_, deliver_at, publish_time, (flags & FLAG_BATCHED) != 0)
    )


def decode_entry(entry: bytes) -> tuple[MessageMetadata, bytes]:
    """Metadata and payload of an entry; ``ValueError`` if it is damaged (an entry stored
    by :func:`encode_entry` from metadata that passed :func:`check_ranges` always decodes)."""
    if len(entry) < PREFIX_SIZE:
        raise ValueError(f"entry of {len(entry)} bytes is shorter than its header")
    version, publish_time, meta_len = entry[0], *_TAIL.unpack_from(entry, _TAIL_OFFSET)
    end = PREFIX_SIZE + meta_len
    if end > len(entry):
        raise ValueError("entry metadata runs past the end of the entry")
    if version == FORMAT_VERSION:
        metadata = _from_pulsar()(entry[PREFIX_SIZE:end])
        if not metadata.publish_time:  # the broker's time, when the client sent none
            metadata.publish_time = publish_time
        return metadata, entry[end:]
    if version != LEGACY_FORMAT_VERSION:
        raise ValueError(f"unknown entry format version {version}")
    try:
        meta = msgpack.unpackb(entry[PREFIX_SIZE:end], raw=False)
    except Exception as exc:  # msgpack raises several types on damaged input
        raise ValueError(f"entry metadata is not valid msgpack ({type(exc).__name__})") from None
    return MessageMetadata.from_dict(meta), entry[end:]


def pulsar_parts(entry: bytes) -> tuple[bytes, bytes] | None:
    """The serialized Pulsar metadata and the payload of an entry as stored, to send as
    they are; ``None`` for a version-1 entry (convert it with :func:`decode_entry` and
    :func:`.format.metadata.to_pulsar`); ``ValueError`` if it is damaged."""
    if len(entry) < PREFIX_SIZE:
        raise ValueError(f"entry of {len(entry)} bytes is shorter than its header")
    if entry[0] != FORMAT_VERSION:
        return None
    end = PREFIX_SIZE + _TAIL.unpack_from(entry, _TAIL_OFFSET)[1]
    if end > len(entry):
        raise ValueError("entry metadata runs past the end of the entry")
    return entry[PREFIX_SIZE:end], entry[end:]


def compacted_out_indexes(bitmap: bytes | None) -> set[int]:
    """The batch indexes set in a ``compacted_out`` bitmap."""
    if not bitmap:
        return set()
    mask = int.from_bytes(bitmap, "little")
    return {i for i in range(mask.bit_length()) if mask >> i & 1}


def compacted_out_bitmap(indexes: Collection[int], size: int) -> bytes:
    """The ``compacted_out`` bitmap of ``indexes`` in a batch of ``size`` messages."""
    mask = 0
    for i in indexes:
        mask |= 1 << i
    return mask.to_bytes((size + 7) // 8, "little")
