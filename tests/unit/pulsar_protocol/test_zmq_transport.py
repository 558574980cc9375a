"""The ZeroMQ transport's rules without sockets: one message is one Pulsar frame for one
routing id's session; closes, refusals, max_connections, hang-ups, and peers that speak
something else (the msgpack command wire older releases had)."""

from __future__ import annotations

import logging
from typing import Any

import msgpack
import pytest

from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.pulsar_protocol.framing import decode_message
from pulsarlab.broker.transports import zmq as transport_module
from pulsarlab.broker.transports.zmq import ZmqTransport, is_pulsar_frame

from .support import Harness, T, command, send_frame


class _FromSocket(bytes):
    """A message as if read from TCP socket ``fd`` (what ``zmq.SRCFD`` tells)."""

    fd = -1


def on(fd: int, data: bytes) -> _FromSocket:
    message = _FromSocket(data)
    message.fd = fd
    return message


@pytest.fixture
def over_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages tell their TCP socket (``on(fd, data)``) as ZeroMQ's frames do."""
    monkeypatch.setattr(transport_module, "source_fd", lambda message: message.fd)


class Peers:
    """A transport on a core; what it sent to each routing id, decoded."""

    def __init__(self, *, others: int = 0, tie: bool = False, **settings: Any) -> None:
        self.h = Harness(**settings)
        self.sent: list[tuple[bytes, bytes]] = []
        self.others = others  # connections on other transports
        self.transport = ZmqTransport(
            lambda identity, message: self.sent.append((identity, message)),
            self._session, settings=self.h.settings,
            open_connections=lambda: self.others + len(self.transport.sessions),
            now_ms=self.h.clock.now_ms, tie_to_socket=tie,
        )

    def _session(self, *, peer: str, sender: Any, route: bytes) -> Any:
        session = self.h.session()
        session.sender, session.route, session.peer = sender, route, peer
        return session

    def run(self, identity: bytes, *messages: bytes) -> list:
        """Feed messages, commit, route the core's actions; what ``identity`` got (a
        decoded command, or ``"closed"`` for the empty close notice)."""
        for message in messages:
            self.transport.receive(identity, message)
        self.h.service.commit()
        touched = {}
        for action in self.h.service.take_actions():
            action.conn.handle_action(action)
            touched[action.conn] = None
        for session in touched:
            session.sender.flush(session)
        out = [m for i, m in self.sent if i == identity]
        self.sent = [(i, m) for i, m in self.sent if i != identity]
        return ["closed" if not m else decode_message(m, 1 << 30).command for m in out]

    def connect(self, identity: bytes) -> None:
        (reply,) = self.run(identity, command(T.CONNECT, "connect", client_version="t",
                                              protocol_version=20))
        assert reply.type == T.CONNECTED


# What a client of the msgpack command wire (gone) sent first: a msgpack map.
OLD_WIRE_CONNECT = msgpack.packb({"v": 1, "cmd": "CONNECT", "rid": 1, "client_version": "v"})


def test_the_first_byte_tells_a_pulsar_frame_from_anything_else() -> None:
    assert is_pulsar_frame(command(T.PING, "ping"))
    assert not is_pulsar_frame(OLD_WIRE_CONNECT)
    assert not is_pulsar_frame(b"GET / HTTP/1.1\r\n")
    assert not is_pulsar_frame(b"")


@pytest.mark.parametrize("first", [OLD_WIRE_CONNECT, b"GET / HTTP/1.1\r\n\r\n", b"\xff"])
def test_a_peer_whose_first_message_is_not_a_pulsar_frame_is_closed_with_one_line(
    first: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    peers = Peers()
    peers.connect(b"good")
    with caplog.at_level(logging.INFO, logger="pulsarlab.broker.zmq"):
        assert peers.run(b"old", first) == ["closed"]  # the close notice, nothing else
        assert peers.run(b"old", command(T.CONNECT, "connect", client_version="t")) == []
    [line] = [r.getMessage() for r in caplog.records]
    assert "not a Pulsar frame" in line and f"0x{first[0]:02x}" in line
    assert b"old" not in peers.transport.sessions
    assert peers.transport.dropped_from_refused == 1
    # Everyone else is served on.
    assert peers.run(b"good", command(T.PING, "ping"))[0].type == T.PONG
    peers.h.clock.advance(1)
    peers.transport.forget_refused(peers.h.clock.now_ms())
    peers.connect(b"old")  # a Pulsar client under that id later is a new connection


def test_a_several_part_message_that_is_not_pulsar_is_closed_too() -> None:
    peers = Peers()
    peers.transport.receive(b"old", OLD_WIRE_CONNECT, parts=2)
    assert peers.sent == [(b"old", b"")]
    assert b"old" in peers.transport.ignored


def test_each_routing_id_has_its_own_session_and_gets_each_frame_as_a_message() -> None:
    peers = Peers()
    peers.connect(b"a")
    peers.connect(b"b")
    peers.run(b"a", command(T.PRODUCER, "producer", topic="t", producer_id=1, request_id=1))
    replies = peers.run(b"a", send_frame(1, 0, b"x"), send_frame(1, 1, b"y"))
    assert [r.type for r in replies] == [T.SEND_RECEIPT, T.SEND_RECEIPT]
    assert peers.run(b"b") == []
    assert set(peers.transport.sessions) == {b"a", b"b"}


def test_a_broken_frame_closes_the_session_and_its_id_is_ignored_until_forgotten() -> None:
    peers = Peers()
    peers.connect(b"a")
    peers.run(b"a", command(T.SUBSCRIBE, "subscribe", topic="t", subscription="s",
                            consumer_id=1, request_id=2, subType=api.CommandSubscribe.Exclusive))
    error, closed = peers.run(b"a", b"\x00\x00\x00\x05\x00")
    assert error.type == T.ERROR and "invalid frame" in error.error.message
    assert closed == "closed"
    assert b"a" not in peers.transport.sessions
    assert peers.h.service.topic_stats("t")["subscriptions"]["s"]["consumers"] == []
    assert peers.run(b"a", command(T.PING, "ping")) == []
    assert peers.transport.dropped_from_refused == 1
    peers.h.clock.advance(1)
    peers.transport.forget_refused(peers.h.clock.now_ms())
    peers.connect(b"a")  # served again, as a new connection


def test_max_connections_counts_the_other_transports_too() -> None:
    peers = Peers(others=1, max_connections=2)
    peers.connect(b"a")
    error, closed = peers.run(b"b", command(T.CONNECT, "connect", client_version="t"))
    assert error.type == T.ERROR and "max_connections=2" in error.error.message
    assert error.error.error == api.ServiceNotReady  # what Pulsar's client retries on
    assert closed == "closed"
    assert b"b" not in peers.transport.sessions
    peers.others = 0
    peers.h.clock.advance(1)
    peers.transport.forget_refused(peers.h.clock.now_ms())
    peers.connect(b"b")


def test_an_empty_message_hangs_up_without_a_refusal() -> None:
    peers = Peers()
    peers.connect(b"a")
    peers.run(b"a", command(T.PRODUCER, "producer", topic="t", producer_id=1, request_id=1))
    assert peers.run(b"a", b"") == []
    assert peers.h.service.topic_stats("t")["publishers"] == []
    assert b"a" not in peers.transport.ignored
    peers.connect(b"a")


def _tied_producer(fd: int) -> Peers:
    """Routing id ``a`` connected over TCP socket ``fd``, with a producer on ``t``."""
    peers = Peers(tie=True)
    peers.run(b"a", on(fd, command(T.CONNECT, "connect", client_version="t",
                                   protocol_version=20)))
    assert peers.transport.fds == {b"a": fd}
    peers.run(b"a", on(fd, command(T.PRODUCER, "producer", topic="t", producer_id=1,
                                   request_id=1)))
    assert len(peers.h.service.topic_stats("t")["publishers"]) == 1
    return peers


def test_a_tied_session_ends_with_its_socket(over_sockets) -> None:
    peers = _tied_producer(42)
    peers.transport.socket_closed(41)
    assert b"a" in peers.transport.sessions
    peers.transport.socket_closed(42)
    assert b"a" not in peers.transport.sessions
    assert peers.h.service.topic_stats("t")["publishers"] == []


def test_keep_alive_closes_a_silent_peer_with_the_close_notice() -> None:
    peers = Peers()
    peers.connect(b"a")
    peers.transport.ping(1000)
    assert [c.type for c in peers.run(b"a")] == [T.PING]
    peers.h.clock.advance(2500)
    peers.transport.ping(1000)
    assert peers.run(b"a") == ["closed"]
    assert b"a" not in peers.transport.sessions


def test_a_tied_session_is_not_served_to_another_socket(over_sockets) -> None:
    """The fd check: a message under a live session's routing id that came over another
    TCP socket ends that session and starts unauthenticated, even before the monitor
    reports the first socket closed."""
    peers = _tied_producer(7)
    (error, closed) = peers.run(b"a", on(8, command(T.PRODUCER, "producer", topic="t",
                                                    producer_id=1, request_id=2)))
    assert "before CONNECT" in error.error.message and closed == "closed"
    assert peers.h.service.topic_stats("t")["publishers"] == []


def test_a_frame_over_the_handshake_limit_before_connect_is_refused() -> None:
    """Before CONNECT a frame may be at most MAX_HANDSHAKE_FRAME bytes, as on pulsar://."""
    from pulsarlab.broker.pulsar_protocol.framing import MAX_HANDSHAKE_FRAME

    peers = Peers()
    big = command(T.CONNECT, "connect", client_version="x" * MAX_HANDSHAKE_FRAME,
                  protocol_version=20)
    error, closed = peers.run(b"a", big)
    assert error.type == T.ERROR and "outside 4.." in error.error.message
    assert closed == "closed"
    peers.connect(b"b")  # after CONNECT the limit is the message size's
    (success,) = peers.run(b"b", command(T.PRODUCER, "producer", topic="t", producer_id=1,
                                         request_id=1))
    assert success.type == T.PRODUCER_SUCCESS
    replies = peers.run(b"b", send_frame(1, 0, b"x" * (2 * MAX_HANDSHAKE_FRAME)))
    assert [r.type for r in replies] == [T.SEND_RECEIPT]
