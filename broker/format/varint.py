"""Protobuf's base-128 varints, written and read by hand on the hot paths (batches,
SEND receipts, the usual SEND command and metadata), where building a protobuf message
would cost more than the whole of the work around it."""

from __future__ import annotations

__all__ = ["ONE_BYTE", "encode_varint", "read_varint"]

ONE_BYTE = [bytes((i,)) for i in range(0x80)]  # the varint of each value below 128


def encode_varint(value: int) -> bytes:
    """The varint of a non-negative int (already in 0 .. 2**64 - 1); the short ones
    without a loop."""
    if value < 0x80:
        return ONE_BYTE[value]
    if value < 0x4000:
        return bytes((value & 0x7F | 0x80, value >> 7))
    if value < 0x200000:
        return bytes((value & 0x7F | 0x80, value >> 7 & 0x7F | 0x80, value >> 14))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(buf: bytes, i: int, end: int) -> tuple[int, int]:
    """(offset after, value) of the varint at ``i``; a truncated one ends past ``end``
    (the caller gives up on it)."""
    if i < end:
        byte = buf[i]
        if byte < 0x80:
            return i + 1, byte
    value = 0
    shift = 0
    while i < end:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return i, value
        shift += 7
    return end + 1, 0
