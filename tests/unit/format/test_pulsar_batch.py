"""broker/format: Pulsar's batch layout written by hand must be the bytes protobuf writes,
read back item by item; malformed batches are a one-line ValueError."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsarlab.broker.entry import MessageMetadata
from pulsarlab.broker.format.batch import (
    OutgoingMessage,
    encode_pulsar_batch,
    pulsar_batch_items,
    single_message_metadata,
)
from pulsarlab.broker.format.metadata import from_pulsar, pulsar_metadata
from pulsarlab.broker.pulsar_protocol.PulsarApi_pb2 import KeyValue, SingleMessageMetadata

MESSAGES = [
    OutgoingMessage(b"plain", sequence_id=7),
    OutgoingMessage(b"", sequence_id=8, event_time=1_700_000_000_123, null_value=True),
    OutgoingMessage(b"x" * 300, properties={"a": "1", "\u00e9": "\u00fc"}, partition_key="pk",
                    ordering_key=b"\x00ok", sequence_id=(1 << 40) + 3),
    OutgoingMessage(b"neg", sequence_id=-1),  # a Java long -1 goes out as uint64
]


def protobuf_single(m: OutgoingMessage) -> bytes:
    single = SingleMessageMetadata(payload_size=len(m.payload),
                                   sequence_id=m.sequence_id & ((1 << 64) - 1))
    for key, value in m.properties.items():
        single.properties.append(KeyValue(key=key, value=value))
    if m.partition_key is not None:
        single.partition_key = m.partition_key
    if m.ordering_key is not None:
        single.ordering_key = m.ordering_key
    if m.event_time:
        single.event_time = m.event_time
    if m.null_value:
        single.null_value = True
    return single.SerializeToString()


@pytest.mark.parametrize("message", MESSAGES)
def test_hand_written_single_metadata_is_protobufs_bytes(message):
    assert single_message_metadata(message) == protobuf_single(message)


def test_a_batch_reads_back_as_its_items():
    payload = encode_pulsar_batch(MESSAGES)
    expected = b"".join(struct.pack(">I", len(protobuf_single(m))) + protobuf_single(m)
                        + m.payload for m in MESSAGES)
    assert payload == expected
    items = pulsar_batch_items(payload, len(MESSAGES))
    assert items[0] == (None, None, None, 0, 7, False, b"plain")
    assert items[1] == (None, None, None, 1_700_000_000_123, 8, True, b"")
    assert items[2] == ({"a": "1", "\u00e9": "\u00fc"}, "pk", b"\x00ok", 0, (1 << 40) + 3,
                        False, b"x" * 300)
    assert items[3][4] == (1 << 64) - 1


@pytest.mark.parametrize("size", [0, 1, 127, 128, 16383, 16384, (1 << 21) + 1])
def test_plain_messages_of_any_size_and_sequence_id_are_protobufs_bytes(size):
    """The producer's fast path (a cached head per size and sequence id length) writes
    what protobuf writes, however long each varint is (a uint64 id past 2**64 wraps)."""
    sequence_ids = [0, 127, 128, 16383, 16384, (1 << 21) - 1, 1 << 21, (1 << 64) - 1,
                    1 << 64, -5]
    messages = [OutgoingMessage(b"p" * size, sequence_id=s) for s in sequence_ids]
    expected = b"".join(struct.pack(">I", len(protobuf_single(m))) + protobuf_single(m)
                        + m.payload for m in messages)
    assert encode_pulsar_batch(messages) == expected
    assert encode_pulsar_batch(messages) == expected  # once the heads are cached
    items = pulsar_batch_items(expected, len(messages))  # read inline, every varint length
    assert [(item[4], len(item[6])) for item in items] == [
        (s & ((1 << 64) - 1), size) for s in sequence_ids]


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_a_sequence_id_cut_short_is_a_value_error(cut):
    """A plain message whose metadata says 4 bytes but whose sequence id's varint runs on
    (the inline read must not take bytes of the payload for it)."""
    broken = bytes((0, 0, 0, 2 + 1 + cut, 0x18, 1, 0x40)) + b"\xff" * cut + b"p"
    with pytest.raises(ValueError):
        pulsar_batch_items(broken, 1)


@pytest.mark.parametrize(("payload", "count", "error"), [
    (encode_pulsar_batch(MESSAGES[:1]), 2, "ends before its message 1"),
    (encode_pulsar_batch(MESSAGES[:1])[:-1], 1, "payload runs past"),
    (struct.pack(">I", 50) + b"\x18", 1, "metadata runs past"),
    (struct.pack(">I", 2) + b"\xff\xff", 1, "does not parse"),
    (bytes((0, 0, 0, 200, 0x18)) + b"\x80" * 4, 2, "metadata runs past"),
])
def test_a_malformed_batch_is_a_value_error(payload, count, error):
    with pytest.raises(ValueError, match=error):
        pulsar_batch_items(payload, count)


def test_entry_metadata_round_trips_through_pulsars_message_metadata():
    md = MessageMetadata(producer_name="p", sequence_id=3, publish_time=99,
                         properties={"k": "v"}, partition_key="pk", ordering_key=b"o",
                         event_time=5, num_messages_in_batch=4, compression="ZSTD",
                         uncompressed_size=123, deliver_at_time=1000, highest_sequence_id=6)
    back = from_pulsar(pulsar_metadata(md))
    for name in ("producer_name", "sequence_id", "publish_time", "properties", "partition_key",
                 "ordering_key", "event_time", "num_messages_in_batch", "compression",
                 "uncompressed_size", "deliver_at_time", "highest_sequence_id"):
        assert getattr(back, name) == getattr(md, name), name


def reference_items(payload: bytes, count: int) -> list[tuple] | str:
    """Pulsar's batch read the slow, obvious way (protobuf per message), or "error"."""
    items = []
    offset = 0
    for _ in range(count):
        if offset + 4 > len(payload):
            return "error"
        (size,) = struct.unpack_from(">I", payload, offset)
        start = offset + 4
        if start + size > len(payload):
            return "error"
        single = SingleMessageMetadata()
        try:
            single.ParseFromString(payload[start:start + size])
        except Exception:
            return "error"
        data_end = start + size + single.payload_size
        if data_end > len(payload):
            return "error"
        items.append(({kv.key: kv.value for kv in single.properties} or None,
                      single.partition_key if single.HasField("partition_key") else None,
                      single.ordering_key if single.HasField("ordering_key") else None,
                      single.event_time, single.sequence_id, single.null_value,
                      payload[start + size:data_end]))
        offset = data_end
    return items


def read_or_error(payload: bytes, count: int) -> list[tuple] | str:
    try:
        return pulsar_batch_items(payload, count)
    except ValueError:
        return "error"


@settings(max_examples=400, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(first_id=st.one_of(st.integers(0, 300), st.integers(16_000, 17_000),
                          st.integers((1 << 21) - 300, (1 << 21) + 300),
                          st.integers(0, (1 << 64) - 1)),
       count=st.integers(2, 300), size=st.sampled_from([0, 1, 100, 127, 128, 20_000]),
       flips=st.lists(st.tuples(st.integers(0, 1 << 30), st.integers(1, 255)), max_size=2),
       cut=st.sampled_from([0, 0, 0, 1, 7]))
def test_a_producers_plain_batch_reads_as_protobuf_reads_it(first_id, count, size, flips,
                                                            cut):
    """A batch as a producer sends it (one payload size, consecutive sequence ids) is read
    column-wise; that read, and the same bytes corrupted (a changed byte, a cut tail), give
    what protobuf gives, or both a ValueError."""
    messages = [OutgoingMessage(bytes([i % 251]) * size, sequence_id=first_id + i)
                for i in range(count)]
    payload = bytearray(encode_pulsar_batch(messages))
    for at, xor in flips:
        payload[at % len(payload)] ^= xor
    payload = bytes(payload[:len(payload) - cut])
    assert read_or_error(payload, count) == reference_items(payload, count)


@pytest.mark.parametrize("ids", [[5, 6, 8], [9, 8, 7], [127, 128, 129], [3, 3, 3]])
def test_ids_that_do_not_follow_each_other_read_one_by_one(ids):
    messages = [OutgoingMessage(b"abc", sequence_id=s) for s in ids]
    assert [item[4] for item in pulsar_batch_items(encode_pulsar_batch(messages), 3)] == ids
