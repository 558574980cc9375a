"""FrameDecoder: however a stream of frames is cut into reads, the same frames come out,
each whole and in order (frames sliced from one read, or from the bytes left waiting)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsarlab.broker.pulsar_protocol import FrameDecoder
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.pulsar_protocol.framing import encode_command, encode_payload_command

T = api.BaseCommand


def _frames(count: int) -> list[bytes]:
    out = []
    for i in range(count):
        if i % 3 == 2:
            out.append(encode_command(T(type=T.PING, ping=api.CommandPing())))
        else:
            cmd = T(type=T.SEND, send=api.CommandSend(producer_id=i, sequence_id=i))
            md = api.MessageMetadata(producer_name="p", sequence_id=i, publish_time=1)
            out.append(encode_payload_command(cmd, md.SerializeToString(), b"m%d" % i * i))
    return out


def _summary(frames: list) -> list:
    return [(f.command.type, f.command.send.sequence_id, f.metadata, f.payload, f.checksum_ok)
            for f in frames]


# Deterministic examples, no time limits: under a loaded CI input generation is slow.
@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 8), st.lists(st.integers(1, 60), max_size=40),
       st.sampled_from([bytes, bytearray]))
def test_any_cut_of_the_stream_gives_the_same_frames(count, cuts, kind) -> None:
    frames = _frames(count)
    stream = b"".join(frames)
    expected = _summary(FrameDecoder(1 << 20).feed(stream))
    assert len(expected) == count and all(ok for *_, ok in expected)
    decoder = FrameDecoder(1 << 20)
    got, offset = [], 0
    for cut in cuts:
        got += decoder.feed(kind(stream[offset:offset + cut]))
        offset += cut
    got += decoder.feed(kind(stream[offset:]))
    assert _summary(got) == expected
    assert all(type(f.payload) is bytes for f in got if f.payload is not None)
    assert decoder.feed(b"") == []
