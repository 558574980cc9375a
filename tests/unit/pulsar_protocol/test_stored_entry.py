"""The stored entry (issue 24): what the client sent — Pulsar's serialized metadata and the
payload — behind the hot-path prefix, dispatched as stored."""

from __future__ import annotations

import base64
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.broker.entry import (
    FLAG_BATCHED,
    FLAG_PULSAR_BATCH,
    FORMAT_VERSION,
    PREFIX_SIZE,
    MessageMetadata,
    decode_entry,
    encode_entry,
    pulsar_parts,
    read_header,
)
from pulsarlab.broker.format.batch import OutgoingMessage, encode_batch, pulsar_batch_items
from pulsarlab.broker.format.compression import compress, decompress
from pulsarlab.broker.format.metadata import from_pulsar
from pulsarlab.broker.pulsar_protocol import FrameDecoder
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.pulsar_protocol.framing import encode_payload_command
from pulsarlab.broker.selectors.hashing import sticky_key_hash

from .support import Harness, T, command, send_frame


def _client_metadata(**fields) -> bytes:
    md = api.MessageMetadata(producer_name="p", sequence_id=4, publish_time=77, **fields)
    return md.SerializeToString()


def test_a_pulsar_publish_is_stored_byte_for_byte_behind_the_prefix():
    raw = _client_metadata(partition_key="k", deliver_at_time=900,
                           properties=[api.KeyValue(key="a", value="b")])
    data = encode_entry(from_pulsar(raw), b"payload")
    assert data[0] == FORMAT_VERSION == 2
    assert data[PREFIX_SIZE:] == raw + b"payload"
    assert pulsar_parts(data) == (raw, b"payload")
    header = read_header(data)
    assert (header.num_messages, header.batched) == (1, False)
    assert header.sticky_key_hash == sticky_key_hash(b"k")
    assert (header.deliver_at_time, header.publish_time) == (900, 77)


def test_a_stored_entry_decodes_to_the_core_metadata_of_what_was_sent():
    raw = _client_metadata(ordering_key=b"o", event_time=5, num_messages_in_batch=3,
                           compression=api.ZSTD, uncompressed_size=10)
    md, payload = decode_entry(encode_entry(from_pulsar(raw), b"zz"))
    assert (md.producer_name, md.sequence_id, md.publish_time) == ("p", 4, 77)
    assert (md.ordering_key, md.event_time, md.num_messages_in_batch) == (b"o", 5, 3)
    assert (md.compression, md.uncompressed_size) == ("ZSTD", 10)
    assert md.pulsar_metadata == raw and payload == b"zz"
    assert read_header(encode_entry(md, payload))[1:] == read_header(
        encode_entry(from_pulsar(raw), b"zz"))[1:]


def test_core_metadata_is_stored_as_pulsar_metadata():
    """What REST, the health check and the first ZeroMQ wire publish (no client metadata)."""
    meta = MessageMetadata(producer_name="rest", sequence_id=9, publish_time=3,
                           properties={"x": "y"}, partition_key="pk", event_time=8,
                           compression="LZ4", uncompressed_size=4, null_value=True)
    payload = compress("LZ4", b"abcd")
    data = encode_entry(meta, payload)
    raw, stored = pulsar_parts(data)
    pm = api.MessageMetadata.FromString(raw)
    assert (pm.producer_name, pm.sequence_id, pm.publish_time) == ("rest", 9, 3)
    assert [(kv.key, kv.value) for kv in pm.properties] == [("x", "y")]
    assert (pm.partition_key, pm.event_time, pm.null_value) == ("pk", 8, True)
    assert (pm.compression, pm.uncompressed_size) == (api.LZ4, 4) and stored == payload
    decoded, _ = decode_entry(data)
    assert decoded.properties == {"x": "y"} and decoded.null_value


@pytest.mark.parametrize("codec", ["NONE", "ZLIB"])
def test_a_batch_in_pulsarlabs_first_layout_is_relaid_in_pulsars_once_at_publish(codec):
    messages = [OutgoingMessage(b"a", {"p": "1"}, partition_key="k1", sequence_id=1),
                OutgoingMessage(b"bc", ordering_key=b"o", event_time=6, sequence_id=2)]
    body = encode_batch(messages)
    meta = MessageMetadata(producer_name="z", sequence_id=1, num_messages_in_batch=2,
                           compression=codec, uncompressed_size=len(body) if codec != "NONE"
                           else 0)
    data = encode_entry(meta, body if codec == "NONE" else compress(codec, body))
    assert data[1] & (FLAG_BATCHED | FLAG_PULSAR_BATCH) == FLAG_BATCHED | FLAG_PULSAR_BATCH
    raw, payload = pulsar_parts(data)
    pm = api.MessageMetadata.FromString(raw)
    assert pm.num_messages_in_batch == 2 and pm.compression == api.CompressionType.Value(codec)
    if codec != "NONE":  # compressed again with the batch's codec
        payload = decompress(codec, payload, pm.uncompressed_size)
    items = pulsar_batch_items(payload, 2)
    assert [(i[0], i[1], i[2], i[3], i[6]) for i in items] == [
        ({"p": "1"}, "k1", None, 0, b"a"), (None, None, b"o", 6, b"bc")]


def test_a_batch_whose_payload_does_not_decode_is_stored_as_sent():
    meta = MessageMetadata(producer_name="z", properties={"a": "b"}, num_messages_in_batch=3)
    raw, payload = pulsar_parts(encode_entry(meta, b"\x93not a batch"))
    pm = api.MessageMetadata.FromString(raw)
    assert pm.num_messages_in_batch == 3 and payload == b"\x93not a batch"
    assert [(kv.key, kv.value) for kv in pm.properties] == [("a", "b")]


def test_damaged_entries_are_value_errors():
    good = encode_entry(from_pulsar(_client_metadata()), b"x")
    too_long = good[:PREFIX_SIZE - 4] + (1000).to_bytes(4, "big") + good[PREFIX_SIZE:]
    for bad in (good[:10], too_long):
        with pytest.raises(ValueError):
            pulsar_parts(bad)
        with pytest.raises(ValueError):
            decode_entry(bad)
    with pytest.raises(ValueError, match="version 9"):
        read_header(b"\x09" + good[1:])
    with pytest.raises(ValueError, match="version 9"):
        decode_entry(b"\x09" + good[1:])
    garbage = good[:PREFIX_SIZE - 4] + (3).to_bytes(4, "big") + b"\xff\xff\xff"
    with pytest.raises(ValueError, match="does not parse"):
        decode_entry(garbage)


def test_a_publish_time_the_client_left_out_is_the_brokers():
    h = Harness()
    s = h.session()
    h.connect(s)
    h.run(s, command(T.PRODUCER, "producer", topic="t", producer_id=1, request_id=1))
    md = api.MessageMetadata(producer_name="p", sequence_id=0, publish_time=0)
    h.clock.advance(1234)
    h.run(s, encode_payload_command(
        T(type=T.SEND, send=api.CommandSend(producer_id=1, sequence_id=0)),
        md.SerializeToString(), b"x"))
    [(_, data)] = h.service.get_topic("t").ledger.read_entries((0, 0), 10)
    assert read_header(data).publish_time == h.clock.now_ms()
    assert decode_entry(data)[0].publish_time == h.clock.now_ms()


def test_a_pulsar_consumer_gets_the_metadata_the_producer_sent_byte_for_byte():
    h = Harness()
    s = h.session()
    h.connect(s)
    h.run(s, command(T.PRODUCER, "producer", topic="t", producer_id=1, request_id=1))
    h.run(s, command(T.SUBSCRIBE, "subscribe", topic="t", subscription="s", consumer_id=2,
                     request_id=2, subType=api.CommandSubscribe.Shared))
    h.run(s, command(T.FLOW, "flow", consumer_id=2, messagePermits=10))
    sent = send_frame(1, 0, b"hello", partition_key="k", event_time=42,
                      properties=[api.KeyValue(key="a", value="b")])
    [sent_frame] = FrameDecoder(1 << 20).feed(sent)
    s.receive_data(sent)
    h.service.commit()
    for action in h.service.take_actions():
        action.conn.handle_action(action)
    [message] = [f for f in h.frames(s) if f.command.type == T.MESSAGE]
    assert message.metadata == sent_frame.metadata and message.payload == b"hello"


_TEXT = st.text(max_size=8)
_U63 = st.integers(0, (1 << 63) - 1)


@settings(max_examples=200, deadline=None)
@given(
    producer_name=_TEXT, sequence_id=st.integers(0, (1 << 64) - 1), publish_time=_U63,
    properties=st.dictionaries(_TEXT, _TEXT, max_size=3),
    partition_key=st.none() | _TEXT, ordering_key=st.none() | st.binary(max_size=8),
    event_time=st.integers(0, (1 << 64) - 1), deliver_at_time=_U63,
    schema_version=st.none() | st.binary(max_size=4), null_value=st.booleans(),
    uuid=st.none() | _TEXT, marker_type=st.none() | st.integers(-(1 << 31), (1 << 31) - 1),
    highest_sequence_id=st.none() | st.integers(0, (1 << 64) - 1),
    b64=st.booleans(), chunks=st.none() | st.tuples(*[st.integers(0, (1 << 31) - 1)] * 3),
    payload=st.binary(max_size=16),
)
def test_core_metadata_survives_the_stored_layout(payload, b64, chunks, **fields):
    """Whatever the core publishes without client metadata decodes to the same fields."""
    meta = MessageMetadata(**fields)
    if b64 and meta.partition_key is not None:  # a key the producer sent base64-encoded
        meta.partition_key = base64.b64encode(meta.partition_key.encode()).decode()
        meta.partition_key_b64_encoded = True
    if chunks is not None:
        meta.num_chunks_from_msg, meta.total_chunk_msg_size, meta.chunk_id = chunks
    decoded, out = decode_entry(encode_entry(meta, payload))
    assert replace(decoded, pulsar_metadata=None) == meta and out == payload


def test_a_send_whose_metadata_disagrees_on_the_sequence_id_is_stored_with_the_commands():
    h = Harness()
    s = h.session()
    h.connect(s)
    h.run(s, command(T.PRODUCER, "producer", topic="t", producer_id=1, request_id=1))
    md = api.MessageMetadata(producer_name="p", sequence_id=5, publish_time=1,
                             partition_key="k")
    h.run(s, encode_payload_command(
        T(type=T.SEND, send=api.CommandSend(producer_id=1, sequence_id=6)),
        md.SerializeToString(), b"x"))
    [(_, data)] = h.service.get_topic("t").ledger.read_entries((0, 0), 10)
    raw, _ = pulsar_parts(data)
    stored = api.MessageMetadata.FromString(raw)
    assert (stored.sequence_id, stored.partition_key) == (6, "k")
    assert decode_entry(data)[0].sequence_id == 6
