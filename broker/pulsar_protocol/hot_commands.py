"""The two commands the broker writes once per message, laid out by hand: SEND_RECEIPT
(one per message published) and MESSAGE (one per message delivered, ack set aside).

Building them through protobuf (a ``BaseCommand``, its nested command and
``MessageIdData``, then serializing) costs one to two µs each; this writes the same bytes
(fields in number order, as protobuf serializes them; a negative ``int32`` partition as its
ten-byte 64-bit varint) in about half of that. Tests pin them to protobuf's own output.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

import google_crc32c

from ..entry import FORMAT_VERSION, PREFIX_SIZE
from ..format.varint import ONE_BYTE, encode_varint
from .framing import MAGIC_CRC32C

__all__ = [
    "encode_message_command", "encode_message_frames", "encode_send_receipt",
    "encode_send_receipts",
]

_HEAD = struct.Struct(">II")
_CHECKSUM_HEAD = struct.Struct(">HI")
_U32 = struct.Struct(">I")
# A stored entry (version 2) ends with Pulsar's checksummed part as the client sent it:
# [metadata size u32][metadata][payload], the size being the prefix's last field.
_CHECKED_AT = PREFIX_SIZE - 4
_U64 = (1 << 64) - 1
# BaseCommand: type (field 1, varint) = SEND_RECEIPT (7), then send_receipt (field 7, bytes);
# type = MESSAGE (9), then message (field 9, bytes).
_COMMAND_PREFIX = b"\x08\x07\x3a"
_MESSAGE_PREFIX = b"\x08\x09\x4a"

# A non-partitioned topic's partition, -1 (set, as Pulsar sets it), once.
_NO_PARTITION = b"\x18" + b"\xff" * 9 + b"\x01"


def _message_id(ledger_id: int, entry_id: int, partition: int) -> bytes:
    """A serialized ``MessageIdData`` with its ledger, entry and partition."""
    return (
        b"\x08" + encode_varint(ledger_id & _U64) + b"\x10" + encode_varint(entry_id & _U64)
        + (_NO_PARTITION if partition == -1 else b"\x18" + encode_varint(partition & _U64))
    )


def encode_message_command(
    consumer_id: int, ledger_id: int, entry_id: int, partition: int, redelivery_count: int
) -> bytes:
    """The serialized ``BaseCommand`` of a MESSAGE without an ack set (its redelivery
    count always present, as the broker always sets it)."""
    message_id = _message_id(ledger_id, entry_id, partition)
    message = (
        b"\x08" + encode_varint(consumer_id & _U64) + b"\x12" + ONE_BYTE[len(message_id)]
        + message_id
        + b"\x18" + encode_varint(redelivery_count & 0xFFFFFFFF)
    )
    return _MESSAGE_PREFIX + ONE_BYTE[len(message)] + message


def encode_send_receipt(
    producer_id: int, sequence_id: int, ledger_id: int, entry_id: int, partition: int,
    highest_sequence_id: int | None = None,
) -> bytes:
    """The frame of ``CommandSendReceipt`` for one published message (ids as uint64)."""
    # One join of the pieces (every length here is below 128: one byte each); the
    # message id's length is counted from its pieces.
    ledger = encode_varint(ledger_id & _U64)
    entry = encode_varint(entry_id & _U64)
    where = _NO_PARTITION if partition == -1 else b"\x18" + encode_varint(partition & _U64)
    parts = [
        b"\x08", encode_varint(producer_id & _U64), b"\x10", encode_varint(sequence_id & _U64),
        b"\x1a",
        ONE_BYTE[2 + len(ledger) + len(entry) + len(where)], b"\x08", ledger, b"\x10", entry,
        where,
    ]
    if highest_sequence_id is not None:
        parts.append(b"\x20")
        parts.append(encode_varint(highest_sequence_id & _U64))
    receipt = b"".join(parts)
    size = len(receipt) + 4  # with the command's prefix and the receipt's length
    return b"".join((_HEAD.pack(size + 4, size), _COMMAND_PREFIX, ONE_BYTE[len(receipt)], receipt))


def encode_send_receipts(
    producer_id: int, partition: int, receipts: Sequence[tuple[int, int, int]]
) -> list[bytes]:
    """The SEND_RECEIPT frames of a run of one producer's messages (``(sequence_id,
    ledger_id, entry_id)`` each, none with a highest sequence id), the same bytes as
    :func:`encode_send_receipt` gives one by one: what the run shares (the producer id, the
    ledger, the partition) is laid out once."""
    producer = b"\x08" + encode_varint(producer_id & _U64) + b"\x10"
    where = _NO_PARTITION if partition == -1 else b"\x18" + encode_varint(partition & _U64)
    fixed = len(producer) + 2  # the producer, the message id's tag and length
    head, command, small, join = _HEAD.pack, _COMMAND_PREFIX, ONE_BYTE, b"".join
    out: list[bytes] = []
    append = out.append
    last_ledger = None
    ledger = b""
    for sequence_id, ledger_id, entry_id in receipts:
        if ledger_id != last_ledger:
            last_ledger = ledger_id
            ledger = b"\x08" + encode_varint(ledger_id & _U64) + b"\x10"
            ledger_size = len(ledger) + len(where)  # the message id but its entry
        sequence = small[sequence_id] if 0 <= sequence_id < 0x80 else encode_varint(
            sequence_id & _U64)
        entry = small[entry_id] if 0 <= entry_id < 0x80 else encode_varint(entry_id & _U64)
        message_id = ledger_size + len(entry)
        receipt = fixed + len(sequence) + message_id
        append(join((head(receipt + 8, receipt + 4), command, small[receipt], producer,
                     sequence, b"\x1a", small[message_id], ledger, entry, where)))
    return out


def encode_message_frames(
    consumer_id: int, entries: Sequence[Any], fallback: Callable[[Any], bytes]
) -> list[bytes]:
    """The MESSAGE frames of a delivery (``DeliveredEntry`` tuples), in order, each laid
    out in one go: the stored entry's ``[metadata size][metadata][payload]`` is already
    the checksummed part of Pulsar's frame, so it is sent as stored, behind the command
    and its CRC32C. An entry with an ack set, or not stored in Pulsar's layout (the first
    layout, or damaged), gets ``fallback(entry)``'s frame instead."""
    out: list[bytes] = []
    append = out.append
    join = b"".join
    head, checksum_head, crc = _HEAD.pack, _CHECKSUM_HEAD.pack, google_crc32c.value
    small = ONE_BYTE
    # consumer_id (field 1), then the message id's tag and length (field 2).
    consumer = b"\x08" + encode_varint(consumer_id & _U64) + b"\x12"
    # What surrounds the entry id is the same for a run of entries of one ledger: laid
    # out once per shape (ledger, partition, entry id length, redelivery count).
    # (No tuple for the shape: one allocated per message would feed the cyclic GC.)
    shape_ledger = shape_partition = shape_redelivery = None
    shape_length = 0
    before = after = b""
    size = 0
    for entry in entries:
        position, partition, redelivery_count, data, ack_set = entry
        if (
            ack_set is not None or len(data) < PREFIX_SIZE or data[0] != FORMAT_VERSION
            or PREFIX_SIZE + _U32.unpack_from(data, _CHECKED_AT)[0] > len(data)
        ):
            append(fallback(entry))
            continue
        ledger_id, entry_id = position
        if 0 <= entry_id < 0x200000:  # encode_varint() inline for the common entry ids
            if entry_id < 0x80:
                entry_bytes = small[entry_id]
            elif entry_id < 0x4000:
                entry_bytes = bytes(((entry_id & 0x7F) | 0x80, entry_id >> 7))
            else:
                entry_bytes = bytes(((entry_id & 0x7F) | 0x80, ((entry_id >> 7) & 0x7F) | 0x80,
                                     entry_id >> 14))
        else:
            entry_bytes = encode_varint(entry_id & _U64)
        if (
            ledger_id != shape_ledger or len(entry_bytes) != shape_length
            or partition != shape_partition or redelivery_count != shape_redelivery
        ):
            shape_ledger, shape_length = ledger_id, len(entry_bytes)
            shape_partition, shape_redelivery = partition, redelivery_count
            ledger = b"\x08" + encode_varint(ledger_id & _U64) + b"\x10"
            partition_bytes = (_NO_PARTITION if partition == -1
                               else b"\x18" + encode_varint(partition & _U64))
            redelivery = encode_varint(redelivery_count & 0xFFFFFFFF)
            id_size = len(ledger) + len(entry_bytes) + len(partition_bytes)
            message_size = len(consumer) + 1 + id_size + 1 + len(redelivery)
            after = partition_bytes + b"\x18" + redelivery
            before = join((_MESSAGE_PREFIX, small[message_size], consumer,
                           small[id_size], ledger))
            size = message_size + 4  # + MESSAGE's type and field tag, and its length byte
        checked = data[_CHECKED_AT:]
        append(join((
            head(size + 10 + len(checked), size), before, entry_bytes, after,
            checksum_head(MAGIC_CRC32C, crc(checked)), checked,
        )))
    return out
