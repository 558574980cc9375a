"""The SEND command read by hand gives protobuf's answer, or leaves it to protobuf."""

import pytest
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsarlab.broker.pulsar_protocol import FrameDecoder
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.pulsar_protocol.framing import encode_payload_command
from pulsarlab.broker.pulsar_protocol.send_command import (
    SEND_PREFIX,
    SendCommand,
    read_send_command,
)

T = api.BaseCommand
FIELDS = ("producer_id", "sequence_id", "num_messages", "highest_sequence_id",
          "txnid_least_bits", "txnid_most_bits", "is_chunk", "marker")
U64 = st.integers(0, 2**64 - 1)
SETTINGS = settings(max_examples=400, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


def _send(**fields) -> bytes:
    return T(type=T.SEND, send=api.CommandSend(**fields)).SerializeToString()


def _agrees(raw: bytes) -> SendCommand | None:
    """Read ``raw`` both ways; they agree (or the hand-reader declines)."""
    fast = read_send_command(raw, 0, len(raw)) if raw.startswith(SEND_PREFIX) else None
    command = T()
    try:
        command.ParseFromString(raw)
    except DecodeError:
        assert fast is None
        return None
    if fast is None:
        return None
    assert fast.type == command.type == T.SEND
    assert fast.send is fast
    body = command.send
    for name in FIELDS:
        assert getattr(fast, name) == getattr(body, name), name
        assert fast.HasField(name) == body.HasField(name), name
    assert fast.HasField("send") and not fast.HasField("message_id")
    return fast


@SETTINGS
@given(producer_id=U64, sequence_id=U64,
       num_messages=st.none() | st.integers(-2**31, 2**31 - 1),
       highest=st.none() | U64,
       other=st.sampled_from([None, "txnid_least_bits", "is_chunk", "marker", "message_id"]))
def test_any_send_is_read_as_protobuf_reads_it(producer_id, sequence_id, num_messages,
                                               highest, other):
    fields = {"producer_id": producer_id, "sequence_id": sequence_id}
    if num_messages is not None:
        fields["num_messages"] = num_messages
    if highest is not None:
        fields["highest_sequence_id"] = highest
    if other == "message_id":
        fields[other] = api.MessageIdData(ledgerId=1, entryId=2)
    elif other is not None:
        fields[other] = 1
    fast = _agrees(_send(**fields))
    usual = (other is None and max(producer_id, sequence_id, highest or 0) < 2**63
             and (num_messages or 0) >= 0)
    assert (fast is not None) == usual  # the usual shape is always read by hand


@SETTINGS
@given(body=st.binary(max_size=40))
def test_any_bytes_behind_the_prefix_agree_or_go_to_protobuf(body):
    _agrees(SEND_PREFIX + bytes([len(body)]) + body)
    _agrees(SEND_PREFIX + bytes([min(len(body) + 1, 0x7F)]) + body)  # a length that lies


@pytest.mark.parametrize("raw", [
    _send(producer_id=1, sequence_id=2)[:-1],  # cut short
    SEND_PREFIX + b"\x04\x08\x01\x08\x02",  # producer_id twice, no sequence_id
    SEND_PREFIX + b"\x06\x08\x01\x10\x02\x10\x03",  # sequence_id twice: protobuf's last wins
    SEND_PREFIX + b"\x06\x10\x02\x08\x01",  # out of field order
    SEND_PREFIX + b"\x0d\x08\x01\x10" + b"\xff" * 9 + b"\x01",  # a ten-byte varint
])
def test_what_is_not_the_usual_shape_is_left_to_protobuf(raw):
    assert read_send_command(raw, 0, len(raw)) is None
    _agrees(raw)


def test_a_send_frame_decodes_to_the_hand_read_command():
    metadata = api.MessageMetadata(producer_name="p", sequence_id=9, publish_time=1)
    usual = encode_payload_command(
        T(type=T.SEND, send=api.CommandSend(producer_id=3, sequence_id=9, num_messages=1)),
        metadata.SerializeToString(), b"payload")
    chunk = encode_payload_command(
        T(type=T.SEND, send=api.CommandSend(producer_id=3, sequence_id=10, is_chunk=True)),
        metadata.SerializeToString(), b"payload")
    first, second = FrameDecoder(1 << 20).feed(usual + chunk)
    assert type(first.command) is SendCommand
    assert (first.command.send.producer_id, first.command.send.sequence_id) == (3, 9)
    assert first.payload == b"payload" and first.checksum_ok
    assert type(second.command) is T and second.command.send.is_chunk
