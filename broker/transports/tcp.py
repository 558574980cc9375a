"""Pulsar's binary protocol over plain TCP sockets (pulsar://, pulsar+ssl://) on the broker
thread.

:class:`TcpTransport` owns one listening socket and its connections, every one
non-blocking and registered in a :class:`~.readiness.Readiness`: the broker loop's own one
(``broker/poller.py``), so that one ``epoll_wait`` a turn covers every socket, or one of its
own when made without it. The loop hands :meth:`TcpTransport.drain` what its wait found
ready; the transport accepts, reads and writes what is its own, never waiting. Each
connection is one :class:`~..pulsar_protocol.PulsarSession`, fed the bytes read (it cuts
them into frames with Pulsar's length framing). What a session answers is written at once;
what the socket cannot take yet waits in the connection's buffer, in order, until the
socket is writable, and a closed session's connection closes after its last bytes. A
pulsar+ssl:// listener keeps a sans-I/O :class:`~..tls.TlsConnection` per connection between
the socket and the session. Running out of descriptors pauses accepting for a moment (one
log line per interval) while open connections are still served.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import PulsarLabError
from ..limits import check_connections
from ..pulsar_protocol import PulsarSession
from ..resource_log import RateLimitedLog
from ..tls import TlsConnection
from . import SessionTransport
from .readiness import READ, READABLE, WRITE, Readiness

log = logging.getLogger("pulsarlab.broker.server")

__all__ = ["ACCEPT_PAUSE_MS", "TcpTransport", "bind_listener"]

ACCEPT_PAUSE_MS = 100  # accepting stops this long after the process ran out of descriptors
CLOSE_LINGER_MS = 30_000  # a closed session's last bytes wait this long for a peer to read
_READ_SIZE = 1 << 16
_ACCEPTS_PER_TURN = 64  # then the broker's other work has its turn


def bind_listener(host: str, port: int) -> socket.socket:
    """A non-blocking listening TCP socket on ``host`` (IPv4 or IPv6; ``*`` for every
    interface) and ``port`` (0: a free one, read back with ``getsockname``)."""
    name = "0.0.0.0" if host in ("*", "") else host.strip("[]")
    family, _, _, _, address = socket.getaddrinfo(
        name, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(socket.SOMAXCONN)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


class _Connection:
    """One accepted socket, its session and what waits to be written to it."""

    __slots__ = ("fd", "pending", "session", "sock", "tls")

    def __init__(self, sock: socket.socket, session: PulsarSession,
                 tls: TlsConnection | None) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.session = session
        self.tls = tls
        self.pending = bytearray()  # bytes the socket did not take yet, in order


class TcpTransport(SessionTransport):
    """One pulsar:// or pulsar+ssl:// listening socket and its connections."""

    def __init__(
        self,
        listener: socket.socket,
        new_session: Callable[..., PulsarSession],
        *,
        settings: Any,
        open_connections: Callable[[], int],
        now_ms: Callable[[], int],
        tls_context: ssl.SSLContext | None = None,
        readiness: Readiness | None = None,
    ) -> None:
        """``listener`` is a bound, listening socket (:func:`bind_listener`);
        ``new_session(sender=..., route=..., peer=...)`` makes a session;
        ``open_connections()`` counts every connection the broker serves, on any transport
        (``max_connections``); ``readiness`` is the broker loop's (its sockets are
        registered there, and closing the transport leaves it open), else the transport
        has one of its own."""
        listener.setblocking(False)
        self.listener = listener
        self.tls_context = tls_context
        self.sessions: dict[bytes, PulsarSession] = {}
        self._own_readiness = readiness is None
        self.readiness = Readiness() if readiness is None else readiness
        self._listener_fd = listener.fileno()
        self.readiness.register(self._listener_fd, READ)
        self._by_fd: dict[int, _Connection] = {}
        self._by_route: dict[bytes, _Connection] = {}
        self._routes = 0  # a route is never reused: a late action cannot reach a new peer
        self._new_session = new_session
        self._settings = settings
        self._open_connections = open_connections
        self._now_ms = now_ms
        self.accept_paused_until: int | None = None
        # Connections of closed sessions whose last bytes wait for the peer, and since when.
        self._closing: dict[_Connection, int] = {}
        self._accept_errors = RateLimitedLog(log)

    @property
    def scheme(self) -> str:
        return "pulsar+ssl" if self.tls_context is not None else "pulsar"

    @property
    def port(self) -> int:
        """The port the listener is bound to."""
        return int(self.listener.getsockname()[1])

    def fileno(self) -> int:
        """A descriptor readable when one of the transport's sockets is ready (its own
        readiness's; not for a transport in the broker loop's)."""
        return self.readiness.fileno()

    @property
    def pending_bytes(self) -> int:
        """Bytes accepted for writing that the sockets did not take yet."""
        return sum(len(conn.pending) for conn in self._by_fd.values())

    # -- reading --------------------------------------------------------------------------

    def drain(self, burst: int, ready: Iterable[tuple[int, int]] | None = None) -> None:
        """Handle the sockets ``ready`` (descriptor and events, as the loop's wait found
        them; others' descriptors are passed over), or by default every socket of the
        transport's readiness ready now: accept, write what waited, read (at most ``burst``
        reads in all); never waits."""
        by_fd = self._by_fd
        for fd, events in self.readiness.ready() if ready is None else ready:
            conn = by_fd.get(fd)
            if conn is None:
                if fd == self._listener_fd:
                    self._accept()
                continue
            if events & WRITE:
                self._write_pending(conn)
            if events & READABLE and conn.fd in by_fd:
                burst -= self._read(conn, burst)
                if burst <= 0:
                    return

    def _read(self, conn: _Connection, budget: int) -> int:
        """Read what ``conn``'s socket holds (a full read is followed by another, up to
        ``budget``) into its session; how many reads it took."""
        session = conn.session
        recv = conn.sock.recv
        reads = 0
        while reads < budget:
            reads += 1
            try:
                data = recv(_READ_SIZE)
            except (BlockingIOError, InterruptedError):
                return reads
            except OSError:  # reset, timed out: the connection is lost like on EOF
                data = b""
            if not data:
                self._lost(conn)
                return reads
            if not session.closed:  # closing after its last bytes: input is dropped
                self._receive(session, conn.tls, data)
            if len(data) < _READ_SIZE or conn.fd not in self._by_fd:
                return reads
        return reads

    def _receive(self, session: PulsarSession, tls: TlsConnection | None, data: bytes) -> None:
        try:
            if tls is not None:
                data = self._decrypt(session, tls, data)
            if data:
                session.receive_data(data)
        except Exception:  # a bug must cost this connection, never the broker
            log.exception("internal error on a %s:// connection; closing it", self.scheme)
            session.connection_lost()
        self.flush(session)

    def _lost(self, conn: _Connection) -> None:
        """The peer closed or reset the connection: its session ends."""
        self._close(conn)
        if not conn.session.closed:
            conn.session.connection_lost()

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

    # -- accepting ------------------------------------------------------------------------

    def _accept(self) -> None:
        """New connections (a bounded number per turn): each its session, or a refusal
        (``max_connections``)."""
        for _ in range(_ACCEPTS_PER_TURN):
            try:
                sock, address = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:  # gone before it was accepted
                continue
            except OSError as exc:  # out of descriptors (EMFILE, ENFILE) or worse
                self._pause_accepting(exc)
                return
            try:
                check_connections(self._settings, self._open_connections() + 1)
            except PulsarLabError as exc:
                log.info("refused a %s:// connection: %s", self.scheme, exc)
                sock.close()
                continue
            self._open(sock, address)

    def _open(self, sock: socket.socket, address: Any) -> None:
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as Pulsar's
        except OSError:  # reset before we got to it
            sock.close()
            return
        self._routes += 1
        route = self._routes.to_bytes(8, "big")
        peer = f"/{address[0]}:{address[1]}" if isinstance(address, tuple) else ""
        session = self._new_session(sender=self, route=route, peer=peer)
        tls = TlsConnection(self.tls_context) if self.tls_context is not None else None
        conn = _Connection(sock, session, tls)
        self.sessions[route] = session
        self._by_route[route] = conn
        self._by_fd[conn.fd] = conn
        self.readiness.register(conn.fd, READ)

    def _pause_accepting(self, exc: OSError) -> None:
        """Stop watching the listener for :data:`ACCEPT_PAUSE_MS` (a pending connection
        would make every turn fail the same way), saying so once per interval."""
        self._accept_errors.log(
            f"{self.scheme}:// listener: cannot accept connections: "
            f"{exc.strerror or exc}; pausing accepts for {ACCEPT_PAUSE_MS} ms "
            "(open connections are still served)")
        with contextlib.suppress(OSError):
            self.readiness.unregister(self._listener_fd)
        self.accept_paused_until = self._now_ms() + ACCEPT_PAUSE_MS

    def housekeeping(self) -> None:
        """A turn of the loop's timers: accept again once a pause is over; give up on
        the last bytes of a closed session that its peer did not read in
        :data:`CLOSE_LINGER_MS`."""
        until = self.accept_paused_until
        if until is not None and self._now_ms() >= until:
            self.accept_paused_until = None
            self.readiness.register(self._listener_fd, READ)
        if self._closing:
            expired = self._now_ms() - CLOSE_LINGER_MS
            for conn, since in list(self._closing.items()):
                if since <= expired:
                    log.info("a %s:// client did not read the last %d bytes of its closed "
                             "connection in %d s; dropping them", self.scheme,
                             len(conn.pending), CLOSE_LINGER_MS // 1000)
                    self._close(conn)

    # -- writing --------------------------------------------------------------------------

    def flush(self, session: PulsarSession) -> None:
        """Write what ``session`` queued; close its connection after the last bytes if it
        closed. What the socket does not take now waits for it to be writable."""
        data = session.data_to_send()
        conn = self._by_route.get(session.route)
        if conn is None or conn.session is not session:  # its connection is gone
            return
        tls = conn.tls
        if tls is not None:
            try:
                tls.send(data)
            except ssl.SSLError:  # the TLS session already failed: nothing more goes out
                session.closed = True
            data = tls.data_to_send()
        if data:
            if conn.pending:
                conn.pending += data  # behind what waits already
            else:
                self._send(conn, data)
        if session.closed and conn.fd in self._by_fd:
            self.sessions.pop(session.route, None)
            if not conn.pending:
                self._close(conn)
            elif conn not in self._closing:
                self._closing[conn] = self._now_ms()

    def _send(self, conn: _Connection, data: bytes) -> None:
        try:
            sent = conn.sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            self._write_failed(conn, exc)
            return
        if sent < len(data):
            conn.pending += memoryview(data)[sent:]
            self.readiness.modify(conn.fd, READ | WRITE)

    def _write_pending(self, conn: _Connection) -> None:
        """The socket is writable again: what waited, as much as it takes."""
        pending = conn.pending
        try:
            sent = conn.sock.send(pending)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._write_failed(conn, exc)
            return
        del pending[:sent]
        if pending:
            return
        if conn.session.closed:
            self._close(conn)
        else:
            self.readiness.modify(conn.fd, READ)

    def _write_failed(self, conn: _Connection, exc: OSError) -> None:
        """The peer is gone (reset, broken pipe): what waited is dropped. A closed
        session's connection closes now; otherwise the read that follows (the socket
        reports the error as readable) ends the session on the loop's own turn."""
        conn.pending.clear()
        session = conn.session
        (log.debug if session.closed else log.info)(
            "could not send to a %s:// client (%s); it is gone", self.scheme, exc)
        if session.closed:
            self._close(conn)
        else:
            self.readiness.modify(conn.fd, READ)

    def _close(self, conn: _Connection) -> None:
        """Forget ``conn`` and close its socket (a FIN after what it sent)."""
        route = conn.session.route
        self._closing.pop(conn, None)
        del self._by_fd[conn.fd]
        del self._by_route[route]
        self.sessions.pop(route, None)
        sock = conn.sock
        with contextlib.suppress(OSError):
            self.readiness.unregister(conn.fd)
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)
            # Unread input would make close() answer with a reset, which may cost the
            # peer the last bytes it has not read yet.
            sock.recv(_READ_SIZE)
        sock.close()

    def close(self) -> None:
        """Close every connection, the listener and the readiness descriptor."""
        for conn in list(self._by_fd.values()):
            if not self._own_readiness:
                with contextlib.suppress(OSError):
                    self.readiness.unregister(conn.fd)
            with contextlib.suppress(OSError):
                conn.sock.close()
        self._by_fd.clear()
        self._by_route.clear()
        self._closing.clear()
        self.sessions.clear()
        if self._own_readiness:
            self.readiness.close()
        else:
            with contextlib.suppress(OSError):
                self.readiness.unregister(self._listener_fd)
        self.listener.close()
