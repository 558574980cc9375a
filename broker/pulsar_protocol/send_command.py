"""The SEND command of the usual shape, read by hand.

A client's SEND carries a ``BaseCommand`` of a few bytes: its type, then ``CommandSend``
with the producer id, the sequence id and, from most clients, the number of messages (and
the highest sequence id of a batch with explicit ids). Parsing it through protobuf (a new
``BaseCommand``, the parse, a wrapper for ``send``) costs more than the rest of reading
the frame. :func:`read_send_command` reads exactly that shape: those fields, each once, in
field-number order (as every protobuf serializer writes them), values that fit their types,
nothing else. Anything else (another field, a repeated one, an oversized varint, a length
that does not add up) gives ``None``, and the caller parses with protobuf, whose answer
(or error) stands. Tests compare both on any ``CommandSend``.
"""

from __future__ import annotations

from . import PulsarApi_pb2 as api

__all__ = ["SEND_PREFIX", "SendCommand", "read_send_command"]

# BaseCommand: type (field 1, varint) = SEND (6), then send (field 6, length-delimited).
SEND_PREFIX = b"\x08\x06\x32"
_TYPE_SEND = api.BaseCommand.SEND
_I32_LIMIT = 1 << 31


class SendCommand:
    """A SEND's ``BaseCommand`` and its ``CommandSend`` in one (``command.send`` is the
    command itself), with the fields the broker reads; an unset one reads as protobuf's
    default, and ``HasField`` tells which were set."""

    __slots__ = ("_set", "highest_sequence_id", "num_messages", "producer_id", "sequence_id")

    type = _TYPE_SEND
    txnid_least_bits = 0
    txnid_most_bits = 0
    is_chunk = False
    marker = False

    def __init__(self, producer_id: int, sequence_id: int, num_messages: int | None = None,
                 highest_sequence_id: int | None = None) -> None:
        self.producer_id = producer_id
        self.sequence_id = sequence_id
        self.num_messages = 1 if num_messages is None else num_messages
        self.highest_sequence_id = 0 if highest_sequence_id is None else highest_sequence_id
        self._set = (num_messages is not None, highest_sequence_id is not None)

    @property
    def send(self) -> SendCommand:
        return self

    def HasField(self, name: str) -> bool:
        if name in ("send", "producer_id", "sequence_id"):
            return True
        if name == "num_messages":
            return self._set[0]
        if name == "highest_sequence_id":
            return self._set[1]
        return False

    def __repr__(self) -> str:
        return (f"SendCommand(producer_id={self.producer_id}, "
                f"sequence_id={self.sequence_id}, num_messages={self.num_messages})")


def read_send_command(data: bytes, start: int, end: int) -> SendCommand | None:
    """The ``BaseCommand`` in ``data[start:end]`` if it is a SEND of the usual shape (it
    starts with :data:`SEND_PREFIX`), else ``None``."""
    length = data[start + 3]
    pos = start + 4
    if length >= 0x80 or pos + length != end or end - pos < 4 or data[pos] != 0x08:
        return None
    # producer_id (uint64)
    value = data[pos + 1]
    if value < 0x80:
        producer_id, pos = value, pos + 2
    else:
        read = _varint(data, pos + 1, end)
        if read is None:
            return None
        producer_id, pos = read
    if pos >= end or data[pos] != 0x10:
        return None
    # sequence_id (uint64)
    read = _varint(data, pos + 1, end)
    if read is None:
        return None
    sequence_id, pos = read
    num_messages = highest = None
    if pos < end and data[pos] == 0x18:  # num_messages (int32)
        read = _varint(data, pos + 1, end)
        if read is None or read[0] >= _I32_LIMIT:
            return None
        num_messages, pos = read
    if pos < end and data[pos] == 0x30:  # highest_sequence_id (uint64)
        read = _varint(data, pos + 1, end)
        if read is None:
            return None
        highest, pos = read
    if pos != end:
        return None
    return SendCommand(producer_id, sequence_id, num_messages, highest)


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int] | None:
    """The varint at ``pos`` and where it ends; ``None`` past ``end`` or beyond nine bytes
    (so every value read is below 2**63: no 64-bit wrap to reason about)."""
    value = shift = 0
    limit = min(end, pos + 9)
    while pos < limit:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    return None
