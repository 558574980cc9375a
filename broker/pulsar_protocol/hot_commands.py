"""The two commands the broker writes once per message, laid out by hand: SEND_RECEIPT
(one per message published) and MESSAGE (one per message delivered, ack set aside).

Building them through protobuf (a ``BaseCommand``, its nested command and
``MessageIdData``, then serializing) costs one to two µs each; this writes the same bytes
(fields in number order, as protobuf serializes them; a negative ``int32`` partition as its
ten-byte 64-bit varint) in about half of that. Tests pin them to protobuf's own output.
"""

from __future__ import annotations

import struct

__all__ = ["encode_message_command", "encode_send_receipt"]

_HEAD = struct.Struct(">II")
_U64 = (1 << 64) - 1
# BaseCommand: type (field 1, varint) = SEND_RECEIPT (7), then send_receipt (field 7, bytes);
# type = MESSAGE (9), then message (field 9, bytes).
_COMMAND_PREFIX = b"\x08\x07\x3a"
_MESSAGE_PREFIX = b"\x08\x09\x4a"
_SMALL = [bytes((value,)) for value in range(0x80)]

# A non-partitioned topic's partition, -1 (set, as Pulsar sets it), once.
_NO_PARTITION = b"\x18" + b"\xff" * 9 + b"\x01"


def _varint(value: int) -> bytes:
    """An unsigned protobuf varint (``value`` already in 0 .. 2**64 - 1)."""
    if value < 0x80:
        return _SMALL[value]
    if value < 0x4000:
        return bytes(((value & 0x7F) | 0x80, value >> 7))
    if value < 0x200000:
        return bytes(((value & 0x7F) | 0x80, ((value >> 7) & 0x7F) | 0x80, value >> 14))
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _message_id(ledger_id: int, entry_id: int, partition: int) -> bytes:
    """A serialized ``MessageIdData`` with its ledger, entry and partition."""
    return (
        b"\x08" + _varint(ledger_id & _U64) + b"\x10" + _varint(entry_id & _U64)
        + (_NO_PARTITION if partition == -1 else b"\x18" + _varint(partition & _U64))
    )


def encode_message_command(
    consumer_id: int, ledger_id: int, entry_id: int, partition: int, redelivery_count: int
) -> bytes:
    """The serialized ``BaseCommand`` of a MESSAGE without an ack set (its redelivery
    count always present, as the broker always sets it)."""
    message_id = _message_id(ledger_id, entry_id, partition)
    message = (
        b"\x08" + _varint(consumer_id & _U64) + b"\x12" + _SMALL[len(message_id)] + message_id
        + b"\x18" + _varint(redelivery_count & 0xFFFFFFFF)
    )
    return _MESSAGE_PREFIX + _SMALL[len(message)] + message


def encode_send_receipt(
    producer_id: int, sequence_id: int, ledger_id: int, entry_id: int, partition: int,
    highest_sequence_id: int | None = None,
) -> bytes:
    """The frame of ``CommandSendReceipt`` for one published message (ids as uint64)."""
    # One join of the pieces (every length here is below 128: one byte each); the
    # message id's length is counted from its pieces.
    ledger = _varint(ledger_id & _U64)
    entry = _varint(entry_id & _U64)
    where = _NO_PARTITION if partition == -1 else b"\x18" + _varint(partition & _U64)
    parts = [
        b"\x08", _varint(producer_id & _U64), b"\x10", _varint(sequence_id & _U64), b"\x1a",
        _SMALL[2 + len(ledger) + len(entry) + len(where)], b"\x08", ledger, b"\x10", entry,
        where,
    ]
    if highest_sequence_id is not None:
        parts.append(b"\x20")
        parts.append(_varint(highest_sequence_id & _U64))
    receipt = b"".join(parts)
    size = len(receipt) + 4  # with the command's prefix and the receipt's length
    return b"".join((_HEAD.pack(size + 4, size), _COMMAND_PREFIX, _SMALL[len(receipt)], receipt))
