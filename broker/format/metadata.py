"""Pulsar's ``MessageMetadata`` <-> the core's :class:`~pulsarlab.broker.entry.MessageMetadata`.

Shared by the broker (an entry published over pulsar:// keeps the client's serialized
metadata; entries written in pulsarlab's first layout get Pulsar metadata built from the
core's fields, their batches re-laid in Pulsar's layout) and the client (its SEND metadata,
the MESSAGE metadata it reads).
"""

from __future__ import annotations

from google.protobuf.message import DecodeError

from ..entry import MessageMetadata, compacted_out_indexes
from ..pulsar_protocol.PulsarApi_pb2 import CompressionType, KeyValue
from ..pulsar_protocol.PulsarApi_pb2 import MessageMetadata as PulsarMetadata
from .batch import decode_batch, encode_pulsar_batch
from .compression import compress, decompress

__all__ = [
    "for_storage",
    "from_pulsar",
    "is_encrypted",
    "pulsar_metadata",
    "raw_to_pulsar",
    "read_pulsar_metadata",
    "to_pulsar",
    "with_sequence_id",
]

_CODECS = {value: name for name, value in CompressionType.items()}
_CODEC_NUMBERS = dict(CompressionType.items())
_INT32_MAX = (1 << 31) - 1
_U64 = (1 << 64) - 1
_I64_MAX = (1 << 63) - 1


def is_encrypted(raw: bytes) -> bool:
    """Whether a serialized Pulsar ``MessageMetadata`` carries encryption keys (the
    producer encrypted the payload); ``False`` if it does not parse."""
    pm = PulsarMetadata()
    try:
        pm.ParseFromString(raw)
    except DecodeError:
        return False
    return len(pm.encryption_keys) > 0


def with_sequence_id(raw: bytes, sequence_id: int) -> bytes:
    """A serialized Pulsar ``MessageMetadata`` (that parses) with another sequence id."""
    pm = PulsarMetadata()
    pm.ParseFromString(raw)
    pm.sequence_id = sequence_id & _U64
    return pm.SerializeToString()


def from_pulsar(raw: bytes) -> MessageMetadata:
    """The core metadata of a serialized Pulsar ``MessageMetadata`` (kept in the result).

    ``ValueError`` names what is wrong with metadata that does not parse or is out of range.
    """
    return read_pulsar_metadata(raw)[0]


def read_pulsar_metadata(raw: bytes) -> tuple[MessageMetadata, bool]:
    """:func:`from_pulsar`, and whether the metadata is the usual kind (producer name,
    sequence id, publish time and uncompressed size only) whose every value is within the
    range the core stores (:func:`~pulsarlab.broker.entry.check_ranges` has nothing to
    find: its publish time is checked here, the rest are protobuf's own ranges)."""
    pm = PulsarMetadata()
    try:
        pm.ParseFromString(raw)
    except DecodeError as exc:
        raise ValueError(f"MessageMetadata does not parse: {exc}") from None
    # Positional, then only what is set: this runs for every SEND, and keywords for the
    # 22-field dataclass cost as much again as the parse.
    name, sequence_id, publish_time = pm.producer_name, pm.sequence_id, pm.publish_time
    md = MessageMetadata(name, sequence_id, publish_time)
    md.pulsar_metadata = raw
    size = pm.uncompressed_size
    md.uncompressed_size = size
    # Most messages carry only these four fields. Their shortest encoding has a known
    # length: when each of them is set (a value other than its default) and ``raw`` is
    # exactly that long, no other field can be set (nor any of them twice), and the checks
    # below are skipped. Anything else (more fields, a non-ASCII or long name, sequence id
    # 0, a longer encoding) takes them.
    if (
        name and sequence_id and publish_time
        and len(raw) == len(name) + 4 + (sequence_id.bit_length() + 6) // 7
        + (publish_time.bit_length() + 6) // 7
        + (1 + (size.bit_length() + 6) // 7 if size else 0)
    ):
        return md, publish_time <= _I64_MAX
    if pm.event_time:
        md.event_time = pm.event_time
    if pm.compression:
        md.compression = _CODECS.get(pm.compression, "NONE")
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
    return md, False


def to_pulsar(
    md: MessageMetadata, payload: bytes, max_size: int | None = None
) -> tuple[bytes, bytes]:
    """Serialized Pulsar metadata and payload for an entry (as stored) of the core."""
    if md.pulsar_metadata is not None:
        return md.pulsar_metadata, payload
    if md.num_messages_in_batch is None:
        return pulsar_metadata(md), payload
    pm = _outer(md)
    # A pulsarlab batch: re-laid as Pulsar's [size][SingleMessageMetadata][payload]...
    if md.compression != "NONE":  # bounded by its declared size and max_size
        payload = decompress(md.compression, payload, md.uncompressed_size, max_size)
    pm.num_messages_in_batch = md.num_messages_in_batch
    messages = decode_batch(payload, md.num_messages_in_batch)
    relaid = encode_pulsar_batch(messages, compacted_out_indexes(md.compacted_out))
    return pm.SerializeToString(), relaid


def for_storage(
    md: MessageMetadata, payload: bytes, max_size: int | None = None
) -> tuple[bytes, bytes]:
    """Serialized Pulsar metadata and payload to store for an entry published with the
    core's metadata only (REST, the health check, pulsarlab's first ZeroMQ wire): a batch
    in pulsarlab's first layout is re-laid in Pulsar's and compressed again with its codec.
    One whose payload does not decode is stored as sent, with the outer fields (Pulsar's
    broker never opens a payload either; a consumer finds the batch corrupt)."""
    if md.num_messages_in_batch is None:
        return pulsar_metadata(md), payload
    try:
        raw, relaid = to_pulsar(md, payload, max_size)
    except Exception:  # msgpack, the codecs and protobuf raise their own types
        return pulsar_metadata(md), payload
    if md.compression == "NONE":
        return raw, relaid
    pm = PulsarMetadata()
    pm.ParseFromString(raw)
    pm.compression = CompressionType.Value(md.compression)
    pm.uncompressed_size = len(relaid)
    return pm.SerializeToString(), compress(md.compression, relaid)


def pulsar_metadata(md: MessageMetadata) -> bytes:
    """Serialized Pulsar metadata of an entry whose payload is already in Pulsar's layout
    (what pulsarlab's client sends on Pulsar's protocol)."""
    pm = _outer(md)
    if md.num_messages_in_batch is not None:
        pm.num_messages_in_batch = md.num_messages_in_batch
    if md.compression != "NONE":
        pm.compression = CompressionType.Value(md.compression)
        pm.uncompressed_size = md.uncompressed_size
    return pm.SerializeToString()


def _outer(md: MessageMetadata) -> PulsarMetadata:
    """Every field but the batch size and the compression."""
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
    if md.marker_type is not None:
        pm.marker_type = md.marker_type
    return pm


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
