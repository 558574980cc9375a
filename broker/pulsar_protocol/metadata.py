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

from ..entry import MessageMetadata, compacted_out_bitmap
from ..format.batch import decode_pulsar_batch, encode_batch
from ..format.compression import decompress
from ..format.metadata import from_pulsar, is_encrypted, raw_to_pulsar, to_pulsar
from .PulsarApi_pb2 import MessageMetadata as PulsarMetadata

__all__ = [
    "from_pulsar",
    "is_encrypted",
    "pulsar_entry_for_zmq",
    "raw_for_zmq",
    "raw_to_pulsar",
    "to_pulsar",
]



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
    gone: list[int] = []  # slots compaction emptied: the ZeroMQ layout keeps a bitmap
    messages = decode_pulsar_batch(payload, md.num_messages_in_batch, gone)
    out = MessageMetadata(**{
        name: getattr(md, name) for name in MessageMetadata.__slots__
        if name not in ("pulsar_metadata", "compression", "uncompressed_size")
    })
    if gone:
        out.compacted_out = compacted_out_bitmap(gone, md.num_messages_in_batch)
    return out, encode_batch(messages)

