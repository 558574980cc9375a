"""Pulsar's ``MessageMetadata`` <-> the core's :class:`~pulsarlab.broker.entry.MessageMetadata`.

An entry published over pulsar:// keeps the client's serialized metadata (and its payload:
a single message, or a batch in Pulsar's layout, compressed or not) untouched; the core reads
only the outer fields it dispatches on (keys, publish and deliver-at times, batch size).
Entries published over ZeroMQ get Pulsar metadata built from the core's fields when a
pulsar:// consumer reads them, and their batches are re-laid in Pulsar's layout; entries
published over pulsar:// are re-laid the other way for ZeroMQ consumers. Both transports so
see the same message ids, keys, properties, event and publish times.
"""

from __future__ import annotations

import struct

from google.protobuf.message import DecodeError

from ..client.batch import OutgoingMessage, decode_batch, encode_batch
from ..client.compression import decompress
from ..entry import MessageMetadata, compacted_out_bitmap, compacted_out_indexes
from .PulsarApi_pb2 import CompressionType, KeyValue, SingleMessageMetadata
from .PulsarApi_pb2 import MessageMetadata as PulsarMetadata

__all__ = [
    "from_pulsar",
    "is_encrypted",
    "pulsar_entry_for_zmq",
    "raw_for_zmq",
    "raw_to_pulsar",
    "to_pulsar",
]

_U32 = struct.Struct(">I")
_CODECS = {value: name for name, value in CompressionType.items()}
_CODEC_NUMBERS = dict(CompressionType.items())
_INT32_MAX = (1 << 31) - 1
_U64 = (1 << 64) - 1


def is_encrypted(raw: bytes) -> bool:
    """Whether a serialized Pulsar ``MessageMetadata`` carries encryption keys (the
    producer encrypted the payload); ``False`` if it does not parse."""
    pm = PulsarMetadata()
    try:
        pm.ParseFromString(raw)
    except DecodeError:
        return False
    return len(pm.encryption_keys) > 0


def from_pulsar(raw: bytes) -> MessageMetadata:
    """The core metadata of a serialized Pulsar ``MessageMetadata`` (kept in the result).

    ``ValueError`` names what is wrong with metadata that does not parse or is out of range.
    """
    pm = PulsarMetadata()
    try:
        pm.ParseFromString(raw)
    except DecodeError as exc:
        raise ValueError(f"MessageMetadata does not parse: {exc}") from None
    md = MessageMetadata(
        producer_name=pm.producer_name,
        sequence_id=pm.sequence_id,
        publish_time=pm.publish_time,
        event_time=pm.event_time,
        compression=_CODECS.get(pm.compression, "NONE"),
        uncompressed_size=pm.uncompressed_size,
        pulsar_metadata=raw,
    )
    if pm.properties:
        md.properties = {kv.key: kv.value for kv in pm.properties}
    if pm.HasField("partition_key"):
        md.partition_key = pm.partition_key
        md.partition_key_b64_encoded = pm.partition_key_b64_encoded
    if pm.HasField("ordering_key"):
        md.ordering_key = pm.ordering_key
    if pm.HasField("num_messages_in_batch"):
        if pm.num_messages_in_batch < 1:
            raise ValueError(f"num_messages_in_batch is {pm.num_messages_in_batch}")
        md.num_messages_in_batch = pm.num_messages_in_batch
    if pm.deliver_at_time > 0:
        md.deliver_at_time = pm.deliver_at_time
    if pm.HasField("schema_version"):
        md.schema_version = pm.schema_version
    if pm.null_value:
        md.null_value = True
    if pm.HasField("uuid"):
        md.uuid = pm.uuid
    if pm.HasField("num_chunks_from_msg"):
        md.num_chunks_from_msg = pm.num_chunks_from_msg
        md.total_chunk_msg_size = pm.total_chunk_msg_size
        md.chunk_id = pm.chunk_id
    if pm.HasField("marker_type"):
        md.marker_type = pm.marker_type
    if pm.HasField("highest_sequence_id"):
        md.highest_sequence_id = pm.highest_sequence_id
    return md


def to_pulsar(
    md: MessageMetadata, payload: bytes, max_size: int | None = None
) -> tuple[bytes, bytes]:
    """Serialized Pulsar metadata and payload for an entry (as stored) of the core."""
    if md.pulsar_metadata is not None:
        return md.pulsar_metadata, payload
    # Ids a ZeroMQ producer sent as signed (Java's long) go out as Pulsar's uint64.
    pm = PulsarMetadata(
        producer_name=md.producer_name,
        sequence_id=md.sequence_id & _U64,
        publish_time=md.publish_time,
    )
    for key, value in md.properties.items():
        pm.properties.append(KeyValue(key=key, value=value))
    if md.partition_key is not None:
        pm.partition_key = md.partition_key
        if md.partition_key_b64_encoded:
            pm.partition_key_b64_encoded = True
    if md.ordering_key is not None:
        pm.ordering_key = md.ordering_key
    if md.event_time:
        pm.event_time = md.event_time & _U64
    if md.deliver_at_time:
        pm.deliver_at_time = md.deliver_at_time
    if md.schema_version is not None:
        pm.schema_version = md.schema_version
    if md.null_value:
        pm.null_value = True
    if md.uuid is not None:
        pm.uuid = md.uuid
    if md.num_chunks_from_msg is not None:
        pm.num_chunks_from_msg = min(md.num_chunks_from_msg, _INT32_MAX)
        pm.total_chunk_msg_size = min(md.total_chunk_msg_size or 0, _INT32_MAX)
        pm.chunk_id = min(md.chunk_id or 0, _INT32_MAX)
    if md.highest_sequence_id is not None:
        pm.highest_sequence_id = md.highest_sequence_id & _U64
    if md.num_messages_in_batch is None:
        if md.compression != "NONE":
            pm.compression = CompressionType.Value(md.compression)
            pm.uncompressed_size = md.uncompressed_size
        return pm.SerializeToString(), payload
    # A pulsarlab batch: re-laid as Pulsar's [size][SingleMessageMetadata][payload]...
    if md.compression != "NONE":  # bounded by its declared size and max_size
        payload = decompress(md.compression, payload, md.uncompressed_size, max_size)
    pm.num_messages_in_batch = md.num_messages_in_batch
    parts = []
    gone = compacted_out_indexes(md.compacted_out)
    for i, m in enumerate(decode_batch(payload, md.num_messages_in_batch)):
        if i in gone:  # an empty slot compaction left, as Pulsar's compactor writes it
            raw = SingleMessageMetadata(payload_size=0, compacted_out=True).SerializeToString()
            parts += (_U32.pack(len(raw)), raw)
            continue
        single = SingleMessageMetadata(
            payload_size=len(m.payload), sequence_id=m.sequence_id & _U64
        )
        for key, value in m.properties.items():
            single.properties.append(KeyValue(key=key, value=value))
        if m.partition_key is not None:
            single.partition_key = m.partition_key
        if m.ordering_key is not None:
            single.ordering_key = m.ordering_key
        if m.event_time:
            single.event_time = m.event_time & _U64
        if m.null_value:
            single.null_value = True
        raw = single.SerializeToString()
        parts += (_U32.pack(len(raw)), raw, m.payload)
    return pm.SerializeToString(), b"".join(parts)


def raw_to_pulsar(md: MessageMetadata, payload: bytes) -> tuple[bytes, bytes]:
    """Pulsar metadata for an entry :func:`to_pulsar` cannot re-lay (a ZeroMQ batch whose
    payload does not decode): the outer fields, the payload as stored. Pulsar's broker
    never opens a payload either; the official client then finds the batch corrupt and
    discards it with a validation-error ack, so it is not redelivered forever."""
    pm = PulsarMetadata(
        producer_name=md.producer_name, sequence_id=md.sequence_id & _U64,
        publish_time=md.publish_time,
    )
    if md.num_messages_in_batch is not None:
        pm.num_messages_in_batch = md.num_messages_in_batch
    codec = _CODEC_NUMBERS.get(md.compression)
    if codec:  # NONE is 0
        pm.compression = codec
        pm.uncompressed_size = md.uncompressed_size
    return pm.SerializeToString(), payload


def raw_for_zmq(md: MessageMetadata, payload: bytes) -> tuple[MessageMetadata, bytes]:
    """A pulsar://-published batch :func:`pulsar_entry_for_zmq` cannot re-lay (end-to-end
    encrypted, corrupt, or not in Pulsar's layout) as ONE message holding the batch's
    payload exactly as stored, the way Pulsar's client hands an undecryptable batch to an
    application that consumes it as is: the consumer receives it once, acknowledges (or
    dead-letters) it like any message, and the broker never retries the re-laying."""
    out = MessageMetadata(**{
        name: getattr(md, name) for name in MessageMetadata.__slots__
        if name not in ("pulsar_metadata", "compression", "uncompressed_size",
                        "num_messages_in_batch")
    })
    return out, payload


def pulsar_entry_for_zmq(
    md: MessageMetadata, payload: bytes, max_size: int | None = None
) -> tuple[MessageMetadata, bytes]:
    """A pulsar://-published batch re-laid in pulsarlab's batch layout (uncompressed), for a
    ZeroMQ consumer; other entries are returned as they are. ``ValueError`` (or a codec's
    or protobuf's own error) when the batch cannot be re-laid: see :func:`raw_for_zmq`."""
    if md.pulsar_metadata is None or md.num_messages_in_batch is None:
        return md, payload
    outer = PulsarMetadata()
    outer.ParseFromString(md.pulsar_metadata)  # parsed once already, at SEND
    if outer.encryption_keys:
        raise ValueError("the batch is end-to-end encrypted")
    if md.compression != "NONE":  # bounded by its declared size and max_size
        payload = decompress(md.compression, payload, md.uncompressed_size, max_size)
    messages = []
    gone = []
    offset = 0
    end = len(payload)
    view = memoryview(payload)
    for index in range(md.num_messages_in_batch):
        if offset + 4 > end:
            raise ValueError(f"the batch ends before its message {index}")
        (size,) = _U32.unpack_from(view, offset)
        if offset + 4 + size > end:
            raise ValueError(f"message {index}'s metadata runs past the end of the batch")
        single = SingleMessageMetadata()
        try:
            single.ParseFromString(view[offset + 4 : offset + 4 + size])
        except DecodeError as exc:
            raise ValueError(f"message {index}'s metadata does not parse: {exc}") from None
        offset += 4 + size
        if single.payload_size < 0 or offset + single.payload_size > end:
            raise ValueError(f"message {index}'s payload runs past the end of the batch")
        data = bytes(view[offset : offset + single.payload_size])
        offset += single.payload_size
        if single.compacted_out:
            gone.append(index)
        messages.append(
            OutgoingMessage(
                payload=data,
                properties={kv.key: kv.value for kv in single.properties},
                partition_key=single.partition_key if single.HasField("partition_key") else None,
                ordering_key=single.ordering_key if single.HasField("ordering_key") else None,
                event_time=single.event_time,
                sequence_id=single.sequence_id,
                null_value=single.null_value,
            )
        )
    out = MessageMetadata(**{
        name: getattr(md, name) for name in MessageMetadata.__slots__
        if name not in ("pulsar_metadata", "compression", "uncompressed_size")
    })
    if gone:
        out.compacted_out = compacted_out_bitmap(gone, md.num_messages_in_batch)
    return out, encode_batch(messages)

