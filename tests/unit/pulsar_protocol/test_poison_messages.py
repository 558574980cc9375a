"""Messages that once stopped the broker (issue 23), driven with bytes through a session.

What Pulsar stores is stored (its uint64 fields up to 2^64 - 1) and delivered; what no
Pulsar broker would accept gets SEND_ERROR and stores nothing; an entry that cannot be laid
out for a consumer goes to it raw, with one log line, and the broker goes on. Every
transport (pulsar://, ZeroMQ) serves the same session, so one face is driven here.
"""

from __future__ import annotations

import logging

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsarlab.broker.entry import MessageMetadata, encode_entry
from pulsarlab.broker.pulsar_protocol import FrameDecoder
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.pulsar_protocol.framing import encode_payload_command
from pulsarlab.broker.transports import hand_out

from .support import Harness, T, command, send_frame

U64_MAX = (1 << 64) - 1


class Both(Harness):
    """One core with a connected session (what either transport serves)."""

    def __init__(self, **settings) -> None:
        super().__init__(**settings)
        self.s = self.session()
        self.connect(self.s)

    def flush(self) -> list:
        """Commit and hand every action out; what the session wrote, as frames."""
        self.service.commit()
        hand_out(self.service.take_actions())
        return self.frames(self.s)

    def send_raw(self, data: bytes) -> list:
        self.s.receive_data(data)
        return self.flush()

    def open(self, topic: str = "t") -> None:
        """A producer (1) and a consumer (5), from the earliest message."""
        self.send_raw(command(T.PRODUCER, "producer", topic=topic, producer_id=1,
                              request_id=1, producer_name="p"))
        self.send_raw(command(T.SUBSCRIBE, "subscribe", topic=topic, subscription="pulsar",
                              subType=api.CommandSubscribe.Shared, consumer_id=5,
                              request_id=2, initialPosition=api.CommandSubscribe.Earliest))
        self.send_raw(command(T.FLOW, "flow", consumer_id=5, messagePermits=1000))


def _send_with(seq: int, payload: bytes, **metadata) -> bytes:
    md = api.MessageMetadata(producer_name="p", sequence_id=seq, publish_time=1)
    for name, value in metadata.items():
        if name == "properties":
            md.properties.extend(value)
        else:
            setattr(md, name, value)
    cmd = T(type=T.SEND, send=api.CommandSend(producer_id=1, sequence_id=seq))
    return encode_payload_command(cmd, md.SerializeToString(), payload)


# -- 1: uint64 fields are stored and delivered, invalid ones refused ------------------------


def test_uint64_fields_at_their_maximum_are_stored_and_delivered() -> None:
    h = Both(broker_deduplication_enabled=True)
    h.open()
    frames = h.send_raw(_send_with(U64_MAX, b"x", event_time=U64_MAX,
                                   highest_sequence_id=U64_MAX))
    kinds = [f.command.type for f in frames]
    assert kinds == [T.SEND_RECEIPT, T.MESSAGE]
    assert frames[0].command.send_receipt.sequence_id == U64_MAX
    delivered = api.MessageMetadata.FromString(frames[1].metadata)
    assert (delivered.event_time, delivered.sequence_id, delivered.highest_sequence_id) == (
        U64_MAX, U64_MAX, U64_MAX)
    assert frames[1].payload == b"x"
    # The producer reopened: last_sequence_id is int64 on the wire (Java's long), so the
    # uint64 maximum reads back as -1 rather than failing the PRODUCER command.
    h.send_raw(command(T.CLOSE_PRODUCER, "close_producer", producer_id=1, request_id=8))
    (reply,) = h.send_raw(command(T.PRODUCER, "producer", topic="t", producer_id=2,
                                  request_id=9, producer_name="p"))
    assert reply.command.type == T.PRODUCER_SUCCESS
    assert reply.command.producer_success.last_sequence_id == -1


@pytest.mark.parametrize("field, value", [
    ("chunk_id", -1),
    ("total_chunk_msg_size", -1),
    ("num_chunks_from_msg", -5),
    ("publish_time", 1 << 63),
    ("publish_time", U64_MAX),
    ("num_messages_in_batch", 0),
])
def test_values_no_pulsar_broker_accepts_get_send_error_and_store_nothing(field, value) -> None:
    h = Both()
    h.open()
    md = {field: value}
    if field.startswith(("chunk", "total_chunk", "num_chunks")):
        md.update(uuid="u", num_chunks_from_msg=2, chunk_id=0, total_chunk_msg_size=2)
        md[field] = value
    (frame,) = h.send_raw(_send_with(3, b"x", **md))
    assert frame.command.type == T.SEND_ERROR, frame.command
    assert frame.command.send_error.sequence_id == 3
    assert field in frame.command.send_error.message
    assert h.service.get_topic("t").ledger.number_of_entries == 0
    # The connection goes on: the next good send is stored and delivered.
    assert [f.command.type for f in h.send_raw(send_frame(1, 4, b"ok"))] == [
        T.SEND_RECEIPT, T.MESSAGE]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sequence_id=st.integers(0, U64_MAX), event_time=st.integers(0, U64_MAX),
    highest=st.integers(0, U64_MAX), publish_time=st.integers(0, U64_MAX),
    deliver_at=st.integers(-(1 << 63), (1 << 63) - 1),
    chunk=st.tuples(st.integers(-(1 << 31), (1 << 31) - 1),
                    st.integers(-(1 << 31), (1 << 31) - 1),
                    st.integers(-(1 << 31), (1 << 31) - 1)),
    batch=st.one_of(st.none(), st.integers(-(1 << 31), (1 << 31) - 1)),
    compression=st.sampled_from(list(api.CompressionType.values())),
    uncompressed=st.integers(0, (1 << 32) - 1),
    marker=st.one_of(st.none(), st.integers(-(1 << 31), (1 << 31) - 1)),
    payload=st.binary(max_size=64),
)
def test_whatever_metadata_a_send_carries_what_is_stored_is_delivered(
    sequence_id, event_time, highest, publish_time, deliver_at, chunk, batch, compression,
    uncompressed, marker, payload,
) -> None:
    """Any value of Pulsar's protobuf types: SEND_ERROR, or stored AND delivered (raw if it
    cannot be laid out), with the connection still serving."""
    h = Both()
    h.open()
    md = dict(event_time=event_time, highest_sequence_id=highest, deliver_at_time=deliver_at,
              compression=compression, uncompressed_size=uncompressed)
    num_chunks, total, chunk_id = chunk
    md.update(uuid="u", num_chunks_from_msg=num_chunks, total_chunk_msg_size=total,
              chunk_id=chunk_id)
    if batch is not None:
        md["num_messages_in_batch"] = batch
    if marker is not None:
        md["marker_type"] = marker
    data = _send_with(sequence_id, payload, **md)
    raw = api.MessageMetadata.FromString(
        FrameDecoder(1 << 20).feed(data)[0].metadata)
    raw.publish_time = publish_time
    cmd = T(type=T.SEND, send=api.CommandSend(producer_id=1, sequence_id=sequence_id))
    frames = h.send_raw(encode_payload_command(cmd, raw.SerializeToString(), payload))
    stored = h.service.get_topic("t").ledger.number_of_entries
    if frames[0].command.type == T.SEND_ERROR:
        assert stored == 0
    else:
        assert stored == 1 and frames[0].command.type == T.SEND_RECEIPT
        h.clock.advance(max(0, deliver_at) + 1)  # past any deliver-at time
        h.service.tick()
        later = h.flush()
        delivered = [f for f in frames + later if f.command.type == T.MESSAGE]
        assert len(delivered) == 1
    assert not h.s.closed
    after = h.send_raw(send_frame(1, 1, b"ok"))
    assert after[0].command.type == T.SEND_RECEIPT


# -- 2: batches the broker cannot read are delivered as stored ----------------------------


def _pulsar_batch(messages: list[bytes]) -> bytes:
    parts = []
    for payload in messages:
        single = api.SingleMessageMetadata(payload_size=len(payload)).SerializeToString()
        parts += [len(single).to_bytes(4, "big"), single, payload]
    return b"".join(parts)


@pytest.mark.parametrize("case", ["garbage", "truncated", "corrupt-lz4", "encrypted"])
def test_a_pulsar_batch_the_broker_cannot_read_is_delivered_as_stored(case) -> None:
    """The broker never opens a batch it dispatches: whatever the payload, the consumer
    gets it as the producer sent it (the client library finds it corrupt or encrypted)."""
    h = Both()
    h.open()
    good = _pulsar_batch([b"a", b"b"])
    md: dict = {"num_messages_in_batch": 2}
    if case == "garbage":
        payload = b"\xff\xff\xff\xf0garbage"
    elif case == "truncated":
        payload = good[:-1]
    elif case == "corrupt-lz4":
        payload = b"\x00not lz4 at all"
        md.update(compression=api.LZ4, uncompressed_size=len(good))
    else:
        payload = bytes(cramjam.lz4.compress_block(good, store_size=False))  # as ciphertext
        md["encryption_keys"] = None
    data = _send_with(0, payload, **{k: v for k, v in md.items() if v is not None})
    if case == "encrypted":
        raw = api.MessageMetadata.FromString(FrameDecoder(1 << 20).feed(data)[0].metadata)
        raw.encryption_keys.append(api.EncryptionKeys(key="k", value=b"secret"))
        raw.encryption_algo = "RSA"
        cmd = T(type=T.SEND, send=api.CommandSend(producer_id=1, sequence_id=0))
        data = encode_payload_command(cmd, raw.SerializeToString(), payload)
    frames = h.send_raw(data)
    assert [f.command.type for f in frames] == [T.SEND_RECEIPT, T.MESSAGE]
    assert frames[1].payload == payload
    metadata = api.MessageMetadata.FromString(frames[1].metadata)
    assert metadata.num_messages_in_batch == 2
    assert not h.s.closed


def test_a_stored_pulsarlab_batch_with_a_garbage_payload_reaches_a_consumer_raw() -> None:
    """A batch in the layout the msgpack wire stored (data written before it went away)
    whose payload is garbage goes out as stored."""
    h = Both()
    h.open()
    topic = h.service.get_topic("t")
    topic.ledger.add_entry(encode_entry(
        MessageMetadata(producer_name="p", publish_time=5, num_messages_in_batch=3),
        b"\x93not a batch"), 0)
    topic.ledger.sync()
    topic.on_entries_confirmed()
    [frame] = [f for f in h.flush() if f.command.type == T.MESSAGE]
    metadata = api.MessageMetadata.FromString(frame.metadata)
    # As stored, so that the official client finds the batch corrupt and discards it.
    assert metadata.num_messages_in_batch == 3 and frame.payload == b"\x93not a batch"
    assert not h.s.closed


def test_a_damaged_entry_goes_raw_to_both_faces(caplog) -> None:
    h = Both()
    h.open()
    topic = h.service.get_topic("t")
    good = encode_entry(MessageMetadata(producer_name="p", publish_time=5), b"x")
    damaged = good[:26] + b"\xc1" * (len(good) - 26)  # the msgpack metadata is gone
    topic.ledger.add_entry(damaged, 0)
    topic.ledger.sync()
    topic.on_entries_confirmed()
    with caplog.at_level(logging.WARNING):
        frames = h.flush()
    [frame] = [f for f in frames if f.command.type == T.MESSAGE]
    assert api.MessageMetadata.FromString(frame.metadata).publish_time == 5
    assert frame.payload == damaged
    assert any("is unreadable" in r.getMessage() for r in caplog.records)
    assert not h.s.closed


def test_a_failing_delivery_costs_that_connection_only(monkeypatch) -> None:
    h = Both()
    h.open()
    other = h.session()
    h.connect(other)
    h.run(other, command(T.SUBSCRIBE, "subscribe", topic="t", subscription="other",
                         subType=api.CommandSubscribe.Shared, consumer_id=1, request_id=1,
                         initialPosition=api.CommandSubscribe.Earliest))
    h.run(other, command(T.FLOW, "flow", consumer_id=1, messagePermits=10))

    def broken(self, client_id, action):
        if self is h.s:
            raise RuntimeError("a bug")
        return original(self, client_id, action)

    original = type(h.s)._deliver
    monkeypatch.setattr(type(h.s), "_deliver", broken)
    frames = h.send_raw(send_frame(1, 0, b"x"))
    assert h.s.closed
    assert frames[-1].command.type == T.ERROR
    assert "internal error" in frames[-1].command.error.message
    assert [f.command.type for f in h.frames(other)] == [T.MESSAGE]


# -- 7: the last message id skips empty ledgers --------------------------------------------


def test_last_message_id_after_a_rollover_points_at_the_last_entry() -> None:
    h = Both(managed_ledger_max_entries_per_ledger=2,
             managed_ledger_min_ledger_rollover_time_minutes=0)
    h.open()
    h.send_raw(send_frame(1, 0, b"a"))
    h.send_raw(send_frame(1, 1, b"b"))
    h.service.tick()
    ledger = h.service.get_topic("t").ledger
    assert ledger.last_confirmed[1] == -1, "the ledger rolled over to an empty one"
    (reply,) = h.run(h.s, command(T.GET_LAST_MESSAGE_ID, "getLastMessageId", request_id=3,
                                  consumer_id=5))
    last = reply.getLastMessageIdResponse.last_message_id
    assert (last.ledgerId, last.entryId) == (0, 1)
    assert h.admin.call("topics.get_last_message_id", {"topic": "t"})["entryId"] == 1


def test_last_message_id_of_an_empty_topic_is_still_minus_one() -> None:
    h = Both()
    h.open()
    (reply,) = h.run(h.s, command(T.GET_LAST_MESSAGE_ID, "getLastMessageId", request_id=3,
                                  consumer_id=5))
    assert reply.getLastMessageIdResponse.last_message_id.entryId == U64_MAX  # -1


# -- 8: de-duplication answers like Pulsar -------------------------------------------------


def test_a_duplicate_is_answered_with_message_id_minus_one() -> None:
    h = Both(broker_deduplication_enabled=True)
    h.open()
    first = h.send_raw(send_frame(1, 5, b"x"))[0].command.send_receipt
    assert (first.message_id.ledgerId, first.message_id.entryId) == (0, 0)
    (again,) = h.send_raw(send_frame(1, 5, b"x"))
    receipt = again.command.send_receipt
    assert (receipt.sequence_id, receipt.message_id.ledgerId, receipt.message_id.entryId) == (
        5, U64_MAX, U64_MAX)
    assert h.service.get_topic("t").ledger.number_of_entries == 1
