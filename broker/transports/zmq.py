"""Pulsar's binary protocol over the broker's ZeroMQ ROUTER socket.

One ZeroMQ message is one complete Pulsar frame, byte for byte as on TCP (total size,
command size, ``BaseCommand``, and for SEND/MESSAGE the magic, checksum, metadata and
payload). :class:`ZmqTransport` keeps one :class:`~..pulsar_protocol.PulsarSession` per
DEALER routing id, feeds it the frames and writes what it answers back through the ROUTER.
It owns what is ZeroMQ's own: an empty message closes a connection (the client's way to
hang up; from the broker, the notice that it closed the connection, as a TCP close), a
connection the broker closed or refused has its routing id ignored for a while (what it
still sends is dropped, counted in :attr:`dropped_from_refused`), and a session is tied to
the TCP socket its CONNECT came over: it ends when that socket closes (:meth:`socket_closed`,
from the ROUTER's monitor), and a message under its routing id from another socket starts a
new, unauthenticated session. CurveZMQ is the socket's business and needs nothing here.

Pulsar's protocol is the only one the ROUTER speaks: a peer whose first message is not a
Pulsar frame (:func:`is_pulsar_frame`; e.g. a client of the msgpack command wire older
pulsarlab releases spoke) gets the close notice, one log line, and its routing id ignored.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from typing import Any

import zmq

from ..errors import PulsarLabError
from ..limits import check_connections
from ..pulsar_protocol import PulsarApi_pb2 as api
from ..pulsar_protocol import PulsarSession
from ..pulsar_protocol.framing import encode_command
from ..pulsar_protocol.session import server_error
from . import SessionTransport

log = logging.getLogger("pulsarlab.broker.zmq")

__all__ = ["ZmqTransport", "is_pulsar_frame", "peer_address", "source_fd"]

_MAX_IGNORED = 100_000  # routing ids ignored at once (oldest forgotten first)
_U64 = (1 << 64) - 1
_Frame = zmq.Frame


def is_pulsar_frame(data: bytes) -> bool:
    """Whether a peer's first message may open a Pulsar connection.

    A Pulsar frame starts with its size as a big-endian u32: its first byte is 0x00 for any
    frame under 16 MiB (the broker's frames are far smaller; a CONNECT is a few hundred
    bytes). Anything else (a msgpack map, 0x80-0x8f, of the old command wire; an HTTP
    request; noise) is not Pulsar. A message that passes is then checked as a whole frame by
    the session, which answers a malformed one with a Pulsar ERROR.
    """
    return data[:1] == b"\x00"


class ZmqTransport(SessionTransport):
    """Pulsar sessions of DEALER peers on one ROUTER socket (sans-I/O: frames out through
    ``send(routing_id, message)``)."""

    def __init__(
        self,
        send: Callable[[bytes, bytes], None],
        new_session: Callable[..., PulsarSession],
        *,
        settings: Any,
        open_connections: Callable[[], int],
        now_ms: Callable[[], int],
        tie_to_socket: bool,
    ) -> None:
        """``new_session(peer=..., sender=..., route=...)`` makes a session;
        ``open_connections()`` counts every connection the broker serves, on any transport
        (``max_connections``); ``tie_to_socket`` records which TCP socket each session's
        CONNECT came over (``zmq.SRCFD``) and serves it no other."""
        self.sessions: dict[bytes, PulsarSession] = {}
        self.fds: dict[bytes, int] = {}  # routing id -> its TCP socket (tie_to_socket)
        self.ignored: dict[bytes, int] = {}  # routing id -> when the broker closed it
        self.dropped_from_refused = 0
        self._send = send
        self._new_session = new_session
        self._settings = settings
        self._open_connections = open_connections
        self._now_ms = now_ms
        self._tie = tie_to_socket

    scheme = "zmq"

    # -- reading --------------------------------------------------------------------------

    def serves(self, identity: bytes) -> bool:
        """Whether messages from ``identity`` are this transport's (a session or ignored)."""
        return identity in self.sessions or identity in self.ignored

    def receive(self, identity: bytes, message: Any, parts: int = 1) -> None:
        """One message from ``identity`` (bytes or a ``zmq.Frame``, its first part when it
        had ``parts`` of them): one Pulsar frame."""
        session = self.sessions.get(identity)
        if session is not None and self._tie and identity in self.fds and (
            source_fd(message) != self.fds[identity]
        ):
            # Another TCP connection under a live session's routing id (the first one
            # closed, its notice not read yet): that session ends, this peer starts anew.
            self.socket_closed(self.fds[identity])
            session = None
        if session is None:
            if identity in self.ignored:
                self.dropped_from_refused += 1
                return
            if not self._opens_pulsar(identity, message):
                return
            session = self._open(identity, message)
            if session is None:
                return
        data = message.bytes if type(message) is _Frame else message
        if not data:  # the client hangs up
            self._forget(identity)
            session.connection_lost()
            return
        connected = session.connected
        try:
            if parts != 1:
                session.fail(f"a message of {parts} parts: one ZeroMQ message carries one "
                             "whole Pulsar frame")
            else:
                session.receive_frame(data)
        except Exception:  # a bug must cost this connection, never the broker
            log.exception("internal error on a ZeroMQ Pulsar connection; closing it")
            session.connection_lost()
        if self._tie and not connected and session.connected:
            fd = source_fd(message)
            if fd is not None:
                self.fds[identity] = fd
        self.flush(session)

    def _opens_pulsar(self, identity: bytes, message: Any) -> bool:
        """Whether a new peer's first message may be a Pulsar frame; a peer speaking
        something else is closed (the empty message) and ignored from now on."""
        data = message.buffer if type(message) is _Frame else message
        if not data or is_pulsar_frame(data):
            return True  # a hang-up, or what the session checks (and answers) itself
        log.info("closed a ZeroMQ connection whose first message is not a Pulsar frame "
                 "(first byte 0x%02x, %d bytes): this broker speaks only Pulsar's binary "
                 "protocol over ZeroMQ, one frame per message", data[0], len(data))
        self._send(identity, b"")
        self._ignore(identity)
        return False

    def _open(self, identity: bytes, message: Any) -> PulsarSession | None:
        """A new connection's session, or a refusal (``max_connections``)."""
        try:
            check_connections(self._settings, self._open_connections() + 1)
        except PulsarLabError as exc:
            log.info("refused a ZeroMQ Pulsar connection: %s", exc)
            command = api.BaseCommand(type=api.BaseCommand.ERROR, error=api.CommandError(
                request_id=_U64, error=server_error(exc.code), message=str(exc)))
            self._send(identity, encode_command(command))
            self._send(identity, b"")
            self._ignore(identity)
            return None
        session = self._new_session(peer=peer_address(message), sender=self, route=identity)
        self.sessions[identity] = session
        return session

    # -- writing --------------------------------------------------------------------------

    def flush(self, session: PulsarSession) -> None:
        """Send each queued frame as its own message; a closed session gets the empty
        message that says so and its routing id is ignored from now on."""
        identity = session.route
        send = self._send
        for frame in session.frames_to_send():
            send(identity, frame)
        if session.closed and self.sessions.get(identity) is session:
            send(identity, b"")
            self._forget(identity)
            self._ignore(identity)

    # -- housekeeping ---------------------------------------------------------------------

    def socket_closed(self, fd: int) -> None:
        """A TCP socket of the ROUTER closed: the sessions tied to it end."""
        for identity in [i for i, f in self.fds.items() if f == fd]:
            session = self.sessions.get(identity)
            self._forget(identity)
            if session is not None and not session.closed:
                session.connection_lost()

    def forget_refused(self, before_ms: int) -> None:
        """Serve again the routing ids the broker closed before ``before_ms``."""
        if self.ignored:
            self.ignored = {i: t for i, t in self.ignored.items() if t > before_ms}

    def _forget(self, identity: bytes) -> None:
        self.sessions.pop(identity, None)
        self.fds.pop(identity, None)

    def _ignore(self, identity: bytes) -> None:
        if len(self.ignored) >= _MAX_IGNORED:
            del self.ignored[next(iter(self.ignored))]
        self.ignored[identity] = self._now_ms()


def source_fd(frame: Any) -> int | None:
    """The TCP socket a frame came over (``zmq.SRCFD``), if ZeroMQ tells."""
    try:
        return frame.get(zmq.SRCFD) if isinstance(frame, zmq.Frame) else None
    except zmq.ZMQError:
        return None


def peer_address(frame: Any) -> str:
    """``/host:port`` of the TCP peer a frame came from, as Pulsar shows a client's
    address; empty over ipc/inproc or when ZeroMQ does not tell."""
    fd = source_fd(frame)
    if fd is None or fd < 0:
        return ""
    try:
        with socket.socket(fileno=os.dup(fd)) as sock:
            peer = sock.getpeername()
    except OSError:
        return ""
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"/{peer[0]}:{peer[1]}"
    return ""
