"""Pulsar's binary protocol over TCP (pulsar://, pulsar+ssl://) through a ZeroMQ STREAM.

A STREAM socket hands the broker raw TCP bytes per connection, and an empty message when a
connection opens or closes. :class:`StreamTransport` keeps one
:class:`~..pulsar_protocol.PulsarSession` per connection, feeds it the bytes (the session
cuts them into frames with Pulsar's length framing), writes what it answers back and closes
the TCP connection when the session closes. A pulsar+ssl:// listener keeps a sans-I/O
:class:`~..tls.TlsConnection` per connection between the socket and the session.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable
from typing import Any

import zmq

from ..errors import PulsarLabError
from ..limits import check_connections
from ..pulsar_protocol import PulsarSession
from ..tls import TlsConnection
from . import SessionTransport

log = logging.getLogger("pulsarlab.broker.server")

__all__ = ["StreamTransport"]

_MAX_CLOSED = 100_000  # connections the broker closed, remembered
_NOBLOCK = int(zmq.NOBLOCK)
_SNDMORE = int(zmq.SNDMORE)
_ZERO_COPY_MIN = 1 << 16  # data at least this big is sent without a copy


class StreamTransport(SessionTransport):
    """One pulsar:// or pulsar+ssl:// listening socket (a ZeroMQ STREAM) and its
    connections."""

    def __init__(
        self,
        socket: zmq.Socket,
        new_session: Callable[..., PulsarSession],
        *,
        settings: Any,
        open_connections: Callable[[], int],
        tls_context: ssl.SSLContext | None = None,
    ) -> None:
        """``new_session(sender=..., route=...)`` makes a session; ``open_connections()``
        counts every connection the broker serves, on any transport (``max_connections``)."""
        self.socket = socket
        self.tls_context = tls_context
        self.sessions: dict[bytes, PulsarSession] = {}
        self.tls: dict[bytes, TlsConnection] = {}
        # Connections the broker closed (oldest forgotten first): ZeroMQ may still report
        # their peer leaving, which must not read as a new connection.
        self.closed: dict[bytes, None] = {}
        self._new_session = new_session
        self._settings = settings
        self._open_connections = open_connections

    @property
    def scheme(self) -> str:
        return "pulsar+ssl" if self.tls_context is not None else "pulsar"

    # -- reading --------------------------------------------------------------------------

    def drain(self, burst: int) -> None:
        """Read up to ``burst`` messages: bytes for a session, or a connect/disconnect
        notice (an empty message, as ZeroMQ's STREAM socket reports them)."""
        recv = self.socket.recv
        sessions = self.sessions
        for _ in range(burst):
            try:
                identity = recv(_NOBLOCK)
            except zmq.Again:
                return
            data = recv()
            session = sessions.get(identity)
            if not data:
                if identity in self.closed:  # its notice after we closed it
                    del self.closed[identity]
                    continue
                if session is not None:
                    del sessions[identity]
                    self.tls.pop(identity, None)
                    if not session.closed:
                        session.connection_lost()
                    continue
                self._accept(identity)
                continue
            if session is None:
                continue
            tls = self.tls.get(identity)
            try:
                if tls is not None:
                    data = self._decrypt(session, tls, data)
                if data:
                    session.receive_data(data)
            except Exception:  # a bug must cost this connection, never the broker
                log.exception("internal error on a %s:// connection; closing it", self.scheme)
                session.connection_lost()
            self.flush(session)

    def _accept(self, identity: bytes) -> None:
        """A new connection: its session, or a refusal (``max_connections``)."""
        try:
            check_connections(self._settings, self._open_connections() + 1)
        except PulsarLabError as exc:
            log.info("refused a %s:// connection: %s", self.scheme, exc)
            self.send(identity, b"")
            return
        self.sessions[identity] = self._new_session(sender=self, route=identity)
        if self.tls_context is not None:
            self.tls[identity] = TlsConnection(self.tls_context)

    @staticmethod
    def _decrypt(session: PulsarSession, tls: TlsConnection, data: bytes) -> bytes:
        """The plaintext of a pulsar+ssl:// read; a failed handshake closes the session
        (the client gets the TLS alert) with one log line saying why."""
        try:
            plain = tls.receive(data)
        except ssl.SSLError as exc:
            what = "TLS" if tls.handshake_done else "the TLS handshake"
            session.close_reason = f"{what} failed: {exc.reason or exc}"
            log.info("a pulsar+ssl:// client failed %s: %s", what, exc.reason or exc)
            session.connection_lost()
            return b""
        if tls.handshake_done and session.peer_certificate is None:
            session.peer_certificate = tls.peer_certificate()
        return plain

    # -- writing --------------------------------------------------------------------------

    def flush(self, session: PulsarSession) -> None:
        """Write what ``session`` queued; close its TCP connection if it closed."""
        identity = session.route
        data = session.data_to_send()
        tls = self.tls.get(identity)
        if tls is not None:
            try:
                tls.send(data)
            except ssl.SSLError:  # the TLS session already failed: nothing more goes out
                session.closed = True
            data = tls.data_to_send()
        if data:
            self.send(identity, data, session.closed)
        if session.closed:
            self.send(identity, b"", True)  # closes the TCP connection
            self.sessions.pop(identity, None)
            self.tls.pop(identity, None)
            if len(self.closed) >= _MAX_CLOSED:
                del self.closed[next(iter(self.closed))]
            self.closed[identity] = None

    def send(self, identity: bytes, data: bytes, closing: bool = False) -> None:
        """Never blocking: a peer that is going away makes a blocking send wait forever.
        The last bytes to a connection being closed (its reason is logged already) may
        find the peer gone; that is not worth a second log line."""
        try:
            self.socket.send(identity, _SNDMORE | _NOBLOCK)
            self.socket.send(data, _NOBLOCK, len(data) < _ZERO_COPY_MIN)
        except zmq.ZMQError as exc:
            (log.debug if closing else log.info)(
                "could not send to a %s:// client (%s); it is gone", self.scheme, exc)
