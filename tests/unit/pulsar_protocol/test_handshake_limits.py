"""Before CONNECT a pulsar:// peer gets little: frames of at most 64 KiB, and one
keep-alive interval to complete the handshake (Pulsar's PulsarHandler rule)."""

from __future__ import annotations

import struct

from pulsarlab.broker.pulsar_protocol.framing import MAX_HANDSHAKE_FRAME

from .support import Harness, T, command

_KEEP_ALIVE_MS = 30_000


def test_a_big_frame_before_connect_closes_the_connection_without_buffering_it() -> None:
    h = Harness()
    s = h.session()
    s.receive_data(struct.pack(">I", 5 * 1024 * 1024) + b"\0" * 1000)  # a never-ending frame
    assert s.closed and "frame size" in s.close_reason
    assert len(s.decoder._buffer) <= 1004
    ok = h.session()
    connect = command(T.CONNECT, "connect", client_version="t", protocol_version=20,
                       auth_data=b"x" * (MAX_HANDSHAKE_FRAME - 200))
    (reply,) = h.run(ok, connect)
    assert reply.type == T.CONNECTED  # a CONNECT with a large token still fits
    assert ok.decoder.max_frame_size > h.settings.max_message_size  # messages, once connected


def test_a_peer_that_never_connects_is_closed_after_one_keep_alive_interval() -> None:
    h = Harness()
    idle = h.session()
    connected = h.session()
    h.connect(connected)
    idle.receive_data(b"\0\0")  # a slowloris: a few bytes, never a whole CONNECT
    h.clock.advance(_KEEP_ALIVE_MS - 1)
    idle.ping(_KEEP_ALIVE_MS)
    assert not idle.closed and idle.data_to_send() == b""  # no PING before the handshake
    h.clock.advance(1)
    idle.receive_data(b"\0")  # trickling bytes does not buy time
    idle.ping(_KEEP_ALIVE_MS)
    assert idle.closed and "CONNECT" in idle.close_reason
    connected.receive_data(command(T.PONG, "pong"))
    connected.ping(_KEEP_ALIVE_MS)
    assert not connected.closed
    assert [f.command.type for f in h.frames(connected)] == [T.PING]
