"""Fuzzing the pulsar:// decoder through a session: no input crashes the broker core or
touches another connection."""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api

from .support import Harness, T, command, send_frame

_HEAD = struct.Struct(">II")


def _framed(body: bytes) -> bytes:
    return _HEAD.pack(len(body) + 4, len(body)) + body


# Valid frames, frames with random command bodies, and raw garbage, in random order.
_chunks = st.one_of(
    st.binary(max_size=64),
    st.binary(max_size=64).map(_framed),
    st.sampled_from(sorted(T.Type.values())).map(lambda t: _framed(T(type=t).SerializeToString())),
    st.just(command(T.PING, "ping")),
    st.just(send_frame(1, 0, b"x")),
    st.just(command(T.FLOW, "flow", consumer_id=1, messagePermits=5)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_chunks, max_size=8), st.booleans())
def test_no_input_breaks_the_broker_or_other_connections(
    chunks: list[bytes], connect: bool
) -> None:
    h = Harness()
    fuzzed = h.session()
    if connect:
        h.connect(fuzzed)
        h.run(fuzzed, command(T.PRODUCER, "producer", topic="t", producer_id=1, request_id=1))
    for chunk in chunks:
        h.run(fuzzed, chunk)  # never raises
    fuzzed.connection_lost()
    other = h.session()
    assert h.connect(other).type == T.CONNECTED
    (reply,) = h.run(other, command(T.PRODUCER, "producer", topic="t", producer_id=9,
                                    request_id=2))
    assert reply.type == T.PRODUCER_SUCCESS
    (receipt,) = h.run(other, send_frame(9, 0, b"still serving"))
    assert receipt.type == T.SEND_RECEIPT
    assert receipt.send_receipt.producer_id == 9
    assert api.MessageIdData  # the module stays importable and intact
