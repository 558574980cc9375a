"""The messages of a stored batch, and the batch rebuilt with only some of them (Pulsar's
``RawBatchConverter``, which compaction uses).

Compaction looks inside a batch entry: each message's key, payload size and whether an
earlier compaction already took it out. Rebuilding keeps the entry's position, its batch
size and every surviving message's batch index (so message ids do not change); a message
that is left out keeps its slot, emptied and marked *compacted out*:

- in Pulsar's layout (every batch stored since issue 24, and a pulsar:// batch of the
  first entry layout): ``SingleMessageMetadata`` with only ``compacted_out = true`` and an
  empty payload, as ``RawBatchConverter.rebatchMessage`` writes it; the outer metadata gets
  the new ``uncompressed_size`` and the payload is compressed again with the batch's codec;
- in pulsarlab's first layout (a ZeroMQ batch stored before issue 24): an empty item and
  bit ``i`` of the metadata's ``compacted_out`` bitmap, which :func:`~.entry.encode_entry`
  turns into Pulsar's layout as it writes the rebuilt entry.

A batch that cannot be opened (end-to-end encrypted, corrupt) is a ``ValueError`` saying
why; compaction then keeps it whole, as Pulsar does.
"""

from __future__ import annotations

import struct
from collections.abc import Collection
from typing import NamedTuple

from .entry import (
    MessageMetadata,
    compacted_out_bitmap,
    compacted_out_indexes,
    decode_entry,
    encode_entry,
)
from .format.batch import batch_items, encode_items
from .format.compression import compress, decompress
from .pulsar_protocol.PulsarApi_pb2 import MessageMetadata as PulsarMetadata
from .pulsar_protocol.PulsarApi_pb2 import SingleMessageMetadata

__all__ = ["BatchMessage", "read_batch", "rebatch"]

_U32 = struct.Struct(">I")
_EMPTY_ITEM = (None, None, None, 0, 0, False, b"")


class BatchMessage(NamedTuple):
    """What compaction needs of one message of a batch."""

    key: str | None
    """Its partition key (``None``: it has none)."""
    size: int
    """Its payload size: 0 is a tombstone (a null value or an empty payload)."""
    compacted_out: bool
    """An earlier compaction left it out."""


def read_batch(data: bytes) -> list[BatchMessage]:
    """The messages of the batch entry ``data`` in batch-index order; ``ValueError`` saying
    why the batch cannot be opened (encrypted, corrupt, a codec error)."""
    try:
        metadata, payload = decode_entry(data)
        if metadata.num_messages_in_batch is None:
            raise ValueError("the entry is not a batch")
        if metadata.pulsar_metadata is not None:
            return [message for message, _ in _pulsar_messages(metadata, payload)]
        out = _zmq_items(metadata, payload)
    except ValueError:
        raise
    except Exception as exc:  # protobuf and the codecs raise their own types on bad input
        raise ValueError(f"{type(exc).__name__}: {exc}") from None
    gone = compacted_out_indexes(metadata.compacted_out)
    return [
        BatchMessage(pkey, 0 if null else len(body), i in gone)
        for i, (_, pkey, _, _, _, null, body) in enumerate(out)
    ]


def rebatch(data: bytes, keep: Collection[int]) -> bytes:
    """The batch entry ``data`` with only the messages at batch indexes ``keep``; the
    others are compacted out (see the module docstring). ``data`` must be a batch
    :func:`read_batch` opens."""
    metadata, payload = decode_entry(data)
    n = metadata.num_messages_in_batch
    assert n is not None
    if metadata.pulsar_metadata is not None:
        parts = []
        empty = SingleMessageMetadata(payload_size=0, compacted_out=True).SerializeToString()
        for i, (_, raw) in enumerate(_pulsar_messages(metadata, payload)):
            parts += (raw,) if i in keep else (_U32.pack(len(empty)), empty)
        body = b"".join(parts)
        outer = PulsarMetadata()
        outer.ParseFromString(metadata.pulsar_metadata)
        outer.uncompressed_size = len(body)
        metadata.pulsar_metadata = outer.SerializeToString()
    else:
        items = _zmq_items(metadata, payload)
        body = encode_items([item if i in keep else _EMPTY_ITEM for i, item in enumerate(items)])
        metadata.compacted_out = compacted_out_bitmap(set(range(n)) - set(keep), n)
    if metadata.compression != "NONE":
        metadata.uncompressed_size = len(body)
        body = compress(metadata.compression, body)
    elif metadata.pulsar_metadata is not None:
        metadata.uncompressed_size = len(body)
    return encode_entry(metadata, body)


def _uncompressed(metadata: MessageMetadata, payload: bytes) -> bytes:
    if metadata.compression == "NONE":
        return payload
    return decompress(metadata.compression, payload, metadata.uncompressed_size)


def _zmq_items(metadata: MessageMetadata, payload: bytes) -> list[tuple]:
    return batch_items(_uncompressed(metadata, payload), metadata.num_messages_in_batch)


def _pulsar_messages(
    metadata: MessageMetadata, payload: bytes
) -> list[tuple[BatchMessage, bytes]]:
    """Each message of a batch in Pulsar's layout, with its bytes as laid out (size,
    ``SingleMessageMetadata``, payload); ``ValueError`` if it does not parse."""
    assert metadata.pulsar_metadata is not None
    outer = PulsarMetadata()
    outer.ParseFromString(metadata.pulsar_metadata)
    if outer.encryption_keys:
        raise ValueError("the batch is end-to-end encrypted")
    body = _uncompressed(metadata, payload)
    out = []
    offset, end = 0, len(body)
    for index in range(metadata.num_messages_in_batch or 0):
        if offset + 4 > end:
            raise ValueError(f"the batch ends before its message {index}")
        (size,) = _U32.unpack_from(body, offset)
        start = offset
        offset += 4
        if offset + size > end:
            raise ValueError(f"message {index}'s metadata runs past the end of the batch")
        single = SingleMessageMetadata()
        single.ParseFromString(body[offset:offset + size])
        offset += size
        if single.payload_size < 0 or offset + single.payload_size > end:
            raise ValueError(f"message {index}'s payload runs past the end of the batch")
        offset += single.payload_size
        key = single.partition_key if single.HasField("partition_key") else None
        out.append((BatchMessage(key, single.payload_size, single.compacted_out),
                    body[start:offset]))
    return out
