"""Batch payloads in the two layouts an entry may hold, and the message on its way out.

**Pulsar's layout** (what Pulsar's clients send and the broker stores as is): for each
message, in batch-index order, ``[size u32][SingleMessageMetadata][payload]`` (sizes
big-endian); compression, if any, applies to the whole payload. :func:`encode_pulsar_batch`
lays it out (the ``SingleMessageMetadata`` written by hand: a handful of varints, three
times cheaper than a protobuf object per message) and :func:`pulsar_batch_items` reads it.

**pulsarlab's first layout** (still readable; what ZeroMQ producers wrote)::

    msgpack list, one item per message, in batch-index order:
        [properties: map str->str | nil, partition_key: str | nil, ordering_key: bin | nil,
         event_time: int (ms, 0 = unset), sequence_id: int, null_value: bool, payload: bin]

Both readers return the same checked item tuples ``(properties (dict | None),
partition_key (str | None), ordering_key (bytes | None), event_time (int), sequence_id
(int), null_value (bool), payload (bytes))``: the consumer's hot path makes no object per
message beyond that tuple. Malformed input is a ``ValueError`` naming what is wrong.
"""

from __future__ import annotations

import struct
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import msgpack
from google.protobuf.message import DecodeError

from ..pulsar_protocol.PulsarApi_pb2 import SingleMessageMetadata
from .varint import ONE_BYTE, encode_varint, read_varint

__all__ = [
    "Item",
    "OutgoingMessage",
    "batch_items",
    "decode_batch",
    "decode_pulsar_batch",
    "encode_batch",
    "encode_items",
    "encode_pulsar_batch",
    "pulsar_batch_items",
]

_U32 = struct.Struct(">I")
_U64 = (1 << 64) - 1


@dataclass(slots=True)
class OutgoingMessage:
    """One message on its way out (the producer-side view); ``handle`` is opaque here."""

    payload: bytes
    properties: dict[str, str] = field(default_factory=dict)
    partition_key: str | None = None
    ordering_key: bytes | None = None
    event_time: int = 0
    sequence_id: int = 0
    null_value: bool = False
    deliver_at_time: int = 0
    handle: Any = None

    @property
    def size(self) -> int:
        return len(self.payload)

    @property
    def batch_key(self) -> bytes | str | None:
        """The key a KEY_BASED container groups by: ordering key, else partition key."""
        return self.ordering_key if self.ordering_key is not None else self.partition_key


def encode_batch(messages: list[OutgoingMessage]) -> bytes:
    """The batch payload for ``messages`` (see the module docstring)."""
    return msgpack.packb(
        [
            [
                m.properties or None,
                m.partition_key,
                m.ordering_key,
                m.event_time,
                m.sequence_id,
                m.null_value,
                m.payload,
            ]
            for m in messages
        ],
        use_bin_type=True,
    )


def encode_items(items: list[Item]) -> bytes:
    """The msgpack batch payload of ``items`` as :func:`batch_items` gives them (compaction
    rebuilds a batch from them)."""
    return msgpack.packb(items, use_bin_type=True)


_ITEM_SHAPE = ("each batch item is [properties, partition_key, ordering_key, event_time, "
               "sequence_id, null_value, payload]")


Item = tuple[dict[str, str] | None, str | None, bytes | None, int, int, bool, bytes]


def batch_items(payload: bytes, num_messages: int | None = None) -> list[Item]:
    """The items of a batch payload as checked tuples ``(properties (dict | None), partition_key
    (str | None), ordering_key (bytes | None), event_time (int), sequence_id (int),
    null_value (bool), payload (bytes))``; ``ValueError`` if it is malformed.

    The consumer's hot path: no object per message beyond msgpack's own tuple (which the
    garbage collector stops tracking when it holds no properties map).
    """
    try:
        items = msgpack.unpackb(payload, raw=False, use_list=False)
    except Exception as exc:  # msgpack raises several unrelated types on garbage
        raise ValueError(f"batch payload is not valid msgpack ({type(exc).__name__})") from None
    if type(items) is not tuple:
        raise ValueError("batch payload must be a list")
    if num_messages is not None and len(items) != num_messages:
        raise ValueError(f"batch holds {len(items)} messages, metadata says {num_messages}")
    out = list(items)
    for i, item in enumerate(out):
        if type(item) is not tuple or len(item) != 7:
            raise ValueError(_ITEM_SHAPE)
        props, pkey, okey, event_time, seq, null, data = item
        if ((props is not None and type(props) is not dict) or type(data) is not bytes
                or type(seq) is not int or type(event_time) is not int or type(null) is not bool
                or (pkey is not None and type(pkey) is not str)
                or (okey is not None and type(okey) is not bytes)):
            out[i] = _normalised(item)
    return out


def _normalised(item: tuple[Any, ...]) -> Item:
    """One item with its fields coerced to their types (``ValueError`` if impossible)."""
    props, pkey, okey, event_time, seq, null, data = item
    try:
        return (
            {str(k): str(v) for k, v in dict(props or {}).items()} or None,
            None if pkey is None else str(pkey),
            None if okey is None else bytes(okey),
            int(event_time or 0),
            int(seq),
            bool(null),
            bytes(data),
        )
    except (TypeError, ValueError):
        raise ValueError(_ITEM_SHAPE) from None


def decode_batch(payload: bytes, num_messages: int | None = None) -> list[OutgoingMessage]:
    """The messages of a batch payload; ``ValueError`` if it is malformed."""
    return [
        OutgoingMessage(payload=data, properties=props or {}, partition_key=pkey,
                        ordering_key=okey,
                        event_time=event_time, sequence_id=seq, null_value=null)
        for props, pkey, okey, event_time, seq, null, data in batch_items(payload, num_messages)
    ]


def _length_delimited(tag: int, data: bytes) -> bytes:
    return bytes((tag,)) + encode_varint(len(data)) + data


def single_message_metadata(m: OutgoingMessage) -> bytes:
    """The serialized ``SingleMessageMetadata`` of one batched message (fields in number
    order, as protobuf writes them, so the bytes equal ``SerializeToString``'s)."""
    parts = []
    if m.properties:
        for key, value in m.properties.items():
            kv = _length_delimited(0x0A, key.encode()) + _length_delimited(0x12, value.encode())
            parts.append(_length_delimited(0x0A, kv))
    if m.partition_key is not None:
        parts.append(_length_delimited(0x12, m.partition_key.encode()))
    parts.append(b"\x18" + encode_varint(len(m.payload)))
    if m.event_time:
        parts.append(b"\x28" + encode_varint(m.event_time & _U64))
    if m.ordering_key is not None:
        parts.append(_length_delimited(0x3A, m.ordering_key))
    parts.append(b"\x40" + encode_varint(m.sequence_id & _U64))
    if m.null_value:
        parts.append(b"\x48\x01")
    return b"".join(parts)


_HEADS: dict[tuple[int, int], bytes] = {}
_MAX_HEADS = 4096


def _head(size: int, sequence_length: int) -> bytes:
    """``[0 0 0 n] 0x18 size 0x40``: a plain message's size prefix and its
    ``SingleMessageMetadata`` up to the sequence id's varint (of ``sequence_length``
    bytes), kept for the next message of that size (a producer's sizes repeat)."""
    size_bytes = encode_varint(size)
    head = bytes((0, 0, 0, 2 + len(size_bytes) + sequence_length, 0x18)) + size_bytes + b"\x40"
    if len(_HEADS) < _MAX_HEADS:
        _HEADS[size, sequence_length] = head
    return head


def encode_pulsar_batch(messages: list[OutgoingMessage],
                        compacted_out: Collection[int] = ()) -> bytes:
    """The batch payload for ``messages`` in Pulsar's layout; the slots at the indexes in
    ``compacted_out`` are emptied as Pulsar's compactor leaves them (``compacted_out``
    set, no payload).

    The producer's hot path: a message with no properties, keys, event time or null value
    gets its size prefix and ``SingleMessageMetadata`` as a cached head for its size and
    the sequence id's varint; any other through :func:`single_message_metadata`."""
    parts: list[bytes] = []
    append = parts.append
    heads = _HEADS
    one_byte = ONE_BYTE
    for index, m in enumerate(messages):
        if compacted_out and index in compacted_out:
            append(_COMPACTED_OUT)
            continue
        data = m.payload
        sequence_id = m.sequence_id
        if (m.properties or m.partition_key is not None or m.ordering_key is not None
                or m.event_time or m.null_value or not 0 <= sequence_id <= _U64):
            meta = single_message_metadata(m)
            append(_U32.pack(len(meta)))
            append(meta)
        else:
            if sequence_id < 0x80:
                sequence = one_byte[sequence_id]
            elif sequence_id < 0x4000:
                sequence = bytes((sequence_id & 0x7F | 0x80, sequence_id >> 7))
            elif sequence_id < 0x200000:
                sequence = bytes((sequence_id & 0x7F | 0x80, sequence_id >> 7 & 0x7F | 0x80,
                                  sequence_id >> 14))
            else:
                sequence = encode_varint(sequence_id)
            key = (len(data), len(sequence))
            append(heads.get(key) or _head(*key))
            append(sequence)
        append(data)
    return b"".join(parts)


_EMPTIED = SingleMessageMetadata(payload_size=0, compacted_out=True).SerializeToString()
_COMPACTED_OUT = _U32.pack(len(_EMPTIED)) + _EMPTIED


def pulsar_batch_items(payload: bytes, num_messages: int,
                       compacted_out: list[int] | None = None) -> list[Item]:
    """The items of a batch payload in Pulsar's layout (see the module docstring); the
    indexes of slots compaction emptied (``compacted_out``) are appended to
    ``compacted_out`` when a list is given.

    The consumer's hot path: the common ``SingleMessageMetadata`` (payload size, maybe an
    event time, then the sequence id, in field order) is read inline; anything else goes
    through protobuf (:func:`_parsed_item`). A producer's usual batch (every message of
    one size, consecutive sequence ids, nothing else set) is read column-wise instead
    (:func:`_uniform_items`)."""
    if num_messages > 1:
        uniform = _uniform_items(payload, num_messages)
        if uniform is not None:
            return uniform
    out: list[Item] = []
    append = out.append
    offset = 0
    end = len(payload)
    from_bytes = int.from_bytes
    read = read_varint
    for index in range(num_messages):
        start = offset + 4
        if start > end:
            raise ValueError(f"the batch ends before its message {index}")
        offset = start + from_bytes(payload[offset:start], "big")
        if offset > end:
            raise ValueError(f"message {index}'s metadata runs past the end of the batch")
        # Inline: 0x18 payload_size [0x28 event_time] 0x40 sequence_id, each varint.
        if offset - start >= 4 and payload[start] == 0x18:
            size = payload[start + 1]
            i = start + 2
            if size >= 0x80:
                i, size = read(payload, start + 1, offset)
            event_time = 0
            if i < offset and payload[i] == 0x28:
                i, event_time = read(payload, i + 1, offset)
            if i + 1 < offset and payload[i] == 0x40:
                sequence_id = payload[i + 1]
                i += 2
                if sequence_id >= 0x80:  # two and three bytes inline (ids below 2**21)
                    second = payload[i] if i < offset else 0x80
                    if second < 0x80:
                        sequence_id = sequence_id & 0x7F | second << 7
                        i += 1
                    elif i + 1 < offset and payload[i + 1] < 0x80:
                        sequence_id = (sequence_id & 0x7F | (second & 0x7F) << 7
                                       | payload[i + 1] << 14)
                        i += 2
                    else:
                        i, sequence_id = read(payload, i - 1, offset)
                if i == offset:
                    data_end = offset + size
                    if data_end > end:
                        raise ValueError(
                            f"message {index}'s payload runs past the end of the batch")
                    append((None, None, None, event_time, sequence_id, False,
                            payload[offset:data_end]))
                    offset = data_end
                    continue
        item = _parsed_item(payload[start:offset], index)
        data_end = offset + item[6]
        if data_end > end:
            raise ValueError(f"message {index}'s payload runs past the end of the batch")
        if item[7] and compacted_out is not None:
            compacted_out.append(index)
        append((*item[:6], payload[offset:data_end]))
        offset = data_end
    return out


_CONTINUED = bytes(range(0x80, 0x100))  # a varint's low 7 bits with the "more" bit set


def _uniform_items(payload: bytes, n: int) -> list[Item] | None:
    """The items of a batch whose ``n`` messages are laid out alike, else None.

    Alike: each is ``[0 0 0 m] 0x18 size 0x40 sequence_id`` (``m`` and ``size`` the same
    for all, the sequence id a varint of the same length) and the ids are consecutive, so
    message ``i`` starts at ``i * stride`` and the whole batch is ``n * stride`` bytes.
    Every header byte is checked a column at a time: the byte at one offset of every
    message (one strided slice) against what it must be (the same byte, or the ids'
    varint bytes for ``first_id .. first_id + n - 1``). The items are then built without
    a loop of Python statements: payloads are slices at fixed steps, ids a range."""
    end = len(payload)
    if end < 8 or payload[4] != 0x18 or payload[:3] != b"\0\0\0":
        return None
    head_end = 4 + payload[3]
    if head_end > end:
        return None
    i, size = read_varint(payload, 5, head_end)
    if i >= head_end or payload[i] != 0x40:
        return None
    stride = head_end + size
    if stride * n != end:
        return None
    first = i + 1  # the sequence id's varint: payload[first:head_end]
    length = head_end - first
    if length > 9:
        return None
    j, first_id = read_varint(payload, first, head_end)
    last_id = first_id + n - 1
    if j != head_end or last_id >> 7 * length:
        return None
    for offset in range(first):  # size prefix, payload size and tags: equal in every message
        if payload[offset::stride] != payload[offset:offset + 1] * n:
            return None
    for k in range(length):  # the ids' varint bytes, one column each
        shift = 7 * k
        if k + 1 < length:
            if shift == 0:
                low = first_id & 0x7F
                column = (_CONTINUED * (n // 0x80 + 2))[low:low + n]
            else:
                column = _id_column(first_id, last_id, shift, 0x80)
        elif shift == 0:  # one byte: the ids themselves (below 0x80)
            column = bytes(range(first_id, last_id + 1))
        else:
            column = _id_column(first_id, last_id, shift, 0)
        if payload[first + k::stride] != column:
            return None
    return [(None, None, None, 0, sequence_id, False, payload[start:start + size])
            for sequence_id, start in zip(range(first_id, last_id + 1),
                                          range(head_end, end + 1, stride), strict=True)]


def _id_column(first_id: int, last_id: int, shift: int, more: int) -> bytes:
    """Byte ``shift // 7`` of the varints of ``first_id .. last_id`` (7 bits each, with
    ``more`` set): a run of equal bytes per ``1 << shift`` ids."""
    runs = []
    at = first_id
    while at <= last_id:
        value = at >> shift
        upto = min(last_id + 1, (value + 1) << shift)
        runs.append(bytes(((value & 0x7F) | more,)) * (upto - at))
        at = upto
    return b"".join(runs)


_SINGLE = SingleMessageMetadata()


def _parsed_item(raw: bytes, index: int) -> tuple[Any, ...]:
    """The item fields (then the payload's size and whether compaction emptied the slot)
    of any ``SingleMessageMetadata``."""
    single = _SINGLE
    try:
        single.ParseFromString(raw)
    except DecodeError as exc:
        raise ValueError(f"message {index}'s metadata does not parse: {exc}") from None
    if single.payload_size < 0:
        raise ValueError(f"message {index}'s payload runs past the end of the batch")
    props = single.properties
    return (
        {kv.key: kv.value for kv in props} if props else None,
        single.partition_key if single.HasField("partition_key") else None,
        single.ordering_key if single.HasField("ordering_key") else None,
        single.event_time,
        single.sequence_id,
        single.null_value,
        single.payload_size,
        single.compacted_out,
    )


def decode_pulsar_batch(payload: bytes, num_messages: int,
                        compacted_out: list[int] | None = None) -> list[OutgoingMessage]:
    """The messages of a batch payload in Pulsar's layout; ``ValueError`` if malformed
    (``compacted_out`` as :func:`pulsar_batch_items`)."""
    return [
        OutgoingMessage(payload=data, properties=props or {}, partition_key=pkey,
                        ordering_key=okey, event_time=event_time, sequence_id=seq,
                        null_value=null)
        for props, pkey, okey, event_time, seq, null, data
        in pulsar_batch_items(payload, num_messages, compacted_out)
    ]
