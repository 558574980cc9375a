"""The pulsar:// TCP transport with real loopback sockets, driven one turn at a time (on
epoll, on the selectors fallback, and in the broker loop's poller beside other
descriptors): bytes in and out, partial writes that keep every byte
in order, closing after the last bytes, max_connections refusals, peers that hang up or
reset, a session that fails, and the accept back-off when the process runs out of
descriptors."""

from __future__ import annotations

import errno
import logging
import os
import select
import socket
import struct
from collections.abc import Callable
from typing import Any

import pytest

from pulsarlab.broker import BrokerSettings, ManualClock
from pulsarlab.broker.poller import LoopPoller
from pulsarlab.broker.pulsar_protocol import FrameDecoder
from pulsarlab.broker.transports.tcp import (
    ACCEPT_PAUSE_MS,
    CLOSE_LINGER_MS,
    TcpTransport,
    bind_listener,
)

from .support import Harness, T, command

_WAIT_S = 10.0  # how long a turn waits for the sockets to be ready (never reached when well)


class FakeSession:
    """What the transport needs of a session: bytes in, queued bytes out, closing."""

    def __init__(self, *, sender: Any, route: bytes, peer: str) -> None:
        self.sender, self.route, self.peer = sender, route, peer
        self.received = bytearray()
        self.out: list[bytes] = []
        self.closed = False
        self.lost = False
        self.peer_certificate = None
        self.close_reason = ""

    def receive_data(self, data: bytes) -> None:
        if data == b"boom":
            raise RuntimeError("a bug in the session")
        self.received += data
        self.out.append(b"echo:" + data)

    def data_to_send(self) -> bytes:
        out = b"".join(self.out)
        self.out.clear()
        return out

    def connection_lost(self) -> None:
        self.closed = self.lost = True

    def queue(self, data: bytes) -> None:
        self.out.append(data)
        self.sender.flush(self)


class Rig:
    """A transport on a loopback listener, its sessions, and clients to connect."""

    def __init__(self, new_session: Callable[..., Any] | None = None, *,
                 poller: LoopPoller | None = None, **settings: Any) -> None:
        """With ``poller``, the transport registers in the loop poller's readiness (as in
        the broker) and a turn hands it what the poller's wait found."""
        self.clock = ManualClock()
        self.sessions: list[Any] = []
        self._make = new_session or FakeSession
        self.poller = poller
        self.transport = TcpTransport(
            bind_listener("127.0.0.1", 0), self._session,
            settings=BrokerSettings.from_kwargs(**settings),
            open_connections=lambda: len(self.transport.sessions),
            now_ms=self.clock.now_ms,
            readiness=None if poller is None else poller.readiness,
        )
        self.clients: list[socket.socket] = []

    def _session(self, **kwargs: Any) -> Any:
        session = self._make(**kwargs)
        self.sessions.append(session)
        return session

    def turn(self) -> None:
        """Wait until a socket of the transport is ready, then handle it."""
        if self.poller is not None:
            found = self.poller.poll(_WAIT_S * 1000)
            assert found, "no socket of the transport became ready"
            self.transport.drain(2000, found.items())
            return
        ready, _, _ = select.select([self.transport.fileno()], [], [], _WAIT_S)
        assert ready, "no socket of the transport became ready"
        self.transport.drain(2000)

    def until(self, condition: Callable[[], bool]) -> None:
        for _ in range(10_000):
            if condition():
                return
            self.turn()
        raise AssertionError("the condition never held")

    def client(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.transport.port), timeout=_WAIT_S)
        self.clients.append(sock)
        return sock

    def connect(self) -> tuple[socket.socket, Any]:
        """A client and its session on the broker side."""
        before = len(self.sessions)
        sock = self.client()
        self.until(lambda: len(self.sessions) > before)
        return sock, self.sessions[-1]

    def close(self) -> None:
        for sock in self.clients:
            sock.close()
        self.transport.close()


@pytest.fixture(params=["epoll", "selectors", "loop"])
def rig(request, monkeypatch):
    """Rigs on Linux's epoll, on the selectors fallback other platforms use, or in a loop
    poller (as the broker's) that also watches a descriptor of someone else."""
    if request.param == "selectors":
        monkeypatch.delattr(select, "epoll", raising=False)
    rigs: list[Rig] = []
    pollers: list[LoopPoller] = []
    others: list[socket.socket] = []

    def make(**kwargs: Any) -> Rig:
        if request.param == "loop":
            pollers.append(LoopPoller())
            others.extend(socket.socketpair())
            pollers[-1].add_descriptor(others[-2].fileno())
            kwargs["poller"] = pollers[-1]
        rigs.append(Rig(**kwargs))
        return rigs[-1]

    yield make
    for each in rigs:
        each.close()
    for poller in pollers:
        poller.close()
    for sock in others:
        sock.close()


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, f"the connection closed after {len(data)} of {size} bytes"
        data += chunk
    return bytes(data)


def _numbered(count: int, size: int = 1 << 16) -> list[bytes]:
    """Chunks whose every 8 bytes say where they are: a lost or moved byte shows."""
    words = size // 8
    return [b"".join(struct.pack(">Q", i * words + w) for w in range(words))
            for i in range(count)]


def test_bytes_reach_the_session_and_its_answers_the_client(rig) -> None:
    r = rig()
    sock, session = r.connect()
    assert session.peer == f"/127.0.0.1:{sock.getsockname()[1]}"
    assert r.transport.sessions == {session.route: session}
    conn = r.transport._by_route[session.route]
    assert conn.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)  # as Pulsar's
    sock.sendall(b"hello")
    r.until(lambda: bytes(session.received) == b"hello")
    assert _recv_exactly(sock, 10) == b"echo:hello"
    assert r.transport.readiness.ready() == []  # nothing left to do: no busy loop


def test_a_real_session_answers_connect(rig) -> None:
    h = Harness()

    def pulsar_session(*, sender: Any, route: bytes, peer: str) -> Any:
        session = h.session()
        session.sender, session.route, session.peer = sender, route, peer
        return session

    r = rig(new_session=pulsar_session)
    sock, _session = r.connect()
    sock.sendall(command(T.CONNECT, "connect", client_version="test", protocol_version=20))
    r.turn()
    size = _recv_exactly(sock, 4)
    (frame,) = FrameDecoder(1 << 20).feed(size + _recv_exactly(sock, struct.unpack(">I", size)[0]))
    assert frame.command.type == T.CONNECTED


def test_partial_writes_keep_every_byte_in_order(rig) -> None:
    r = rig()
    sock, session = r.connect()
    chunks = _numbered(4)
    sent = 0
    while r.transport.pending_bytes == 0:  # the client reads nothing: its buffers fill
        chunk = chunks[sent % len(chunks)]
        session.queue(chunk)
        sent += 1
    expected = b"".join(chunks[i % len(chunks)] for i in range(sent))
    got = bytearray()
    sock.setblocking(False)
    while True:  # the client reads until the broker's socket could take more
        readable, _, _ = select.select([sock, r.transport.fileno()], [], [], _WAIT_S)
        assert readable, "the client's reads freed no room"
        if r.transport.fileno() in readable:
            break
        got += sock.recv(1 << 16)
    # Before the transport's turn writes what waits, more is queued: it goes behind.
    more = _numbered(8)[4:]
    for chunk in more:
        session.queue(chunk)
    expected += b"".join(more)
    assert r.transport.pending_bytes > 0
    while len(got) < len(expected):
        readable, _, _ = select.select([sock, r.transport.fileno()], [], [], _WAIT_S)
        assert readable, f"stalled after {len(got)} of {len(expected)} bytes"
        if sock in readable:
            got += sock.recv(1 << 20)
        if r.transport.fileno() in readable:
            r.transport.drain(2000)
    assert bytes(got) == expected
    r.until(lambda: r.transport.pending_bytes == 0)
    assert r.transport.readiness.ready() == []  # no longer watched for writing
    assert not session.closed


def test_a_closed_session_s_connection_closes_after_its_last_bytes(rig) -> None:
    r = rig()
    sock, session = r.connect()
    chunks = _numbered(4)
    sent = 0
    while r.transport.pending_bytes == 0:  # more than the socket buffers hold
        session.queue(chunks[sent % len(chunks)])
        sent += 1
    session.out.append(b"the last bytes")
    session.closed = True
    r.transport.flush(session)
    assert r.transport.pending_bytes > 0
    assert r.transport.sessions == {}  # no longer served, still being written
    got = bytearray()
    sock.setblocking(False)
    while True:
        readable, _, _ = select.select([sock, r.transport.fileno()], [], [], _WAIT_S)
        assert readable, f"stalled after {len(got)} bytes"
        if r.transport.fileno() in readable:
            r.transport.drain(2000)
        if sock in readable:
            data = sock.recv(1 << 20)
            if not data:
                break
            got += data
    assert bytes(got) == b"".join(chunks[i % len(chunks)] for i in range(sent)) + b"the last bytes"
    assert r.transport.pending_bytes == 0 and not r.transport._by_fd
    assert not session.lost  # the broker closed it; nothing was lost


def test_last_bytes_a_peer_never_reads_are_dropped_after_the_linger(rig, caplog) -> None:
    caplog.set_level(logging.INFO, logger="pulsarlab.broker.server")
    r = rig()
    _client, session = r.connect()
    chunk = _numbered(1)[0]
    while r.transport.pending_bytes == 0:  # the client reads nothing
        session.queue(chunk)
    session.closed = True
    r.transport.flush(session)
    r.clock.advance(CLOSE_LINGER_MS - 1)
    r.transport.housekeeping()
    assert r.transport._by_fd  # still waiting for the peer
    r.clock.advance(1)
    r.transport.housekeeping()
    assert not r.transport._by_fd and r.transport.pending_bytes == 0
    assert "did not read the last" in caplog.text


def test_a_small_answer_then_close(rig) -> None:
    r = rig()
    sock, session = r.connect()
    session.out.append(b"ERROR frame")
    session.closed = True
    r.transport.flush(session)
    assert not r.transport._by_fd  # written at once, closed at once
    assert _recv_exactly(sock, 11) == b"ERROR frame"
    assert sock.recv(1) == b""


def test_connections_beyond_max_connections_are_refused(rig, caplog) -> None:
    r = rig(max_connections=1)
    first, session = r.connect()
    caplog.set_level(logging.INFO, logger="pulsarlab.broker.server")
    second = r.client()
    r.turn()
    assert second.recv(1) == b""  # closed by the broker
    assert len(r.sessions) == 1
    assert [rec.getMessage() for rec in caplog.records] == [
        "refused a pulsar:// connection: connection refused: the broker serves "
        "max_connections=1 connections"]
    first.sendall(b"still")  # the connection it serves is served
    r.until(lambda: bytes(session.received) == b"still")


@pytest.mark.parametrize("how", ["close", "reset"])
def test_a_peer_that_goes_away_ends_its_session(rig, how: str, caplog) -> None:
    r = rig()
    sock, session = r.connect()
    if how == "reset":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    r.until(lambda: session.lost)
    assert r.transport.sessions == {} and not r.transport._by_fd
    session.queue(b"late")  # an action for it after it left: dropped, nothing raised
    assert not [rec for rec in caplog.records if rec.levelno >= logging.WARNING]


def test_a_peer_that_resets_with_bytes_waiting_for_it(rig) -> None:
    r = rig()
    sock, session = r.connect()
    chunk = _numbered(1)[0]
    while r.transport.pending_bytes == 0:  # the client reads nothing
        session.queue(chunk)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    r.until(lambda: session.lost)
    assert r.transport.pending_bytes == 0 and not r.transport._by_fd
    assert r.transport.readiness.ready() == []


def test_a_failing_session_costs_its_connection_only(rig, caplog) -> None:
    r = rig()
    sock, session = r.connect()
    other, other_session = r.connect()
    sock.sendall(b"boom")
    r.until(lambda: session.lost)
    assert sock.recv(1) == b""
    assert "internal error on a pulsar:// connection; closing it" in caplog.text
    other.sendall(b"fine")
    r.until(lambda: bytes(other_session.received) == b"fine")


def test_out_of_descriptors_pauses_accepting_with_one_log_line(rig, monkeypatch,
                                                                caplog) -> None:
    r = rig()
    served, session = r.connect()

    def no_descriptors(self: socket.socket) -> Any:
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    monkeypatch.setattr(socket.socket, "accept", no_descriptors)
    waiting = r.client()  # in the listen backlog, not accepted
    r.turn()
    assert r.transport.accept_paused_until == r.clock.now_ms() + ACCEPT_PAUSE_MS
    assert r.transport.readiness.ready() == []  # the listener is not watched: no spin
    r.transport.housekeeping()  # the pause is not over
    assert r.transport.readiness.ready() == []
    r.clock.advance(ACCEPT_PAUSE_MS)
    r.transport.housekeeping()
    r.turn()  # watched again, still out of descriptors: paused again, not logged again
    assert r.transport.accept_paused_until == r.clock.now_ms() + ACCEPT_PAUSE_MS
    lines = [rec.getMessage() for rec in caplog.records]
    assert lines == [
        "pulsar:// listener: cannot accept connections: Too many open files; pausing "
        f"accepts for {ACCEPT_PAUSE_MS} ms (open connections are still served)"]
    served.sendall(b"served")  # the connected client is served meanwhile
    r.until(lambda: bytes(session.received) == b"served")
    monkeypatch.undo()
    r.clock.advance(ACCEPT_PAUSE_MS)
    r.transport.housekeeping()
    r.until(lambda: len(r.sessions) == 2)  # the waiting connection is accepted at last
    waiting.sendall(b"in")
    r.until(lambda: bytes(r.sessions[1].received) == b"in")


def test_bind_listener_reads_back_a_free_port_and_reuses_addresses() -> None:
    with bind_listener("127.0.0.1", 0) as sock:
        assert sock.getsockname()[1] > 0
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR)
        assert not sock.getblocking()


def test_bind_listener_on_ipv6_loopback() -> None:
    if not socket.has_ipv6:
        pytest.skip("this Python has no IPv6")
    try:
        sock = bind_listener("::1", 0)
    except OSError as exc:
        pytest.skip(f"no IPv6 loopback on this machine: {exc}")
    with sock:
        assert sock.family == socket.AF_INET6
        with socket.create_connection(("::1", sock.getsockname()[1]), timeout=_WAIT_S):
            pass


def test_in_the_loop_poller_others_descriptors_are_passed_over_and_left_open() -> None:
    """In the broker loop's poller the transport handles only its own sockets of what the
    wait found, and closing it unregisters them and leaves the poller serving."""
    poller = LoopPoller()
    reader, writer = socket.socketpair()
    r = Rig(poller=poller)
    try:
        poller.add_descriptor(reader.fileno())
        writer.send(b"not the transport's")
        sock, session = r.connect()
        sock.sendall(b"hello")
        r.until(lambda: bytes(session.received) == b"hello")
        assert _recv_exactly(sock, 10) == b"echo:hello"
        assert list(poller.poll(0)) == [reader.fileno()]  # still readable: not read
        r.close()
        assert list(poller.poll(0)) == [reader.fileno()]  # the poller serves on
        listener = bind_listener("127.0.0.1", 0)
        again = TcpTransport(listener, FakeSession, settings=BrokerSettings(),
                             open_connections=lambda: 0, now_ms=r.clock.now_ms,
                             readiness=poller.readiness)  # a new one joins the same poller
        assert again.readiness is poller.readiness
        again.close()
        assert list(poller.poll(0)) == [reader.fileno()]
    finally:
        reader.close()
        writer.close()
        poller.close()
