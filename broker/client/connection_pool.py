"""The client's sockets, one per broker, as Java's ``ConnectionPool``: open, CONNECT,
keep-alive, read, write, drop.

:meth:`ConnectionPool._io_cnx` gives a caller the :class:`~.client_cnx.ClientCnx` of a
broker URL once its CONNECT was answered (opening it first: a TCP socket, TLS-wrapped for
``pulsar+ssl://``, or over ``zmq://`` a DEALER to the one broker behind the ROUTER).
``CONNECT`` carries ``auth_method_name`` ``"token"`` and the token (a supplier is asked again
for each connection and each ``AUTH_CHALLENGE``), or another provider's method and data.
Keep-alive, as Pulsar's clients: every ``keep_alive_interval_seconds`` a socket that has
sent nothing since the last turn's PING is closed, else it gets a PING. A lost socket fails
its waiting requests (:mod:`.pending_requests`) and is handed to :meth:`_cnx_lost`, where
the layers above reconnect its producers and consumers; what it reads goes to
:meth:`_handle_frames` (:mod:`.inbound_commands`).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
from collections.abc import Callable
from typing import Any

import zmq

from ..curve import apply_client
from ..hosts import endpoint_is_ipv6
from ..pulsar_protocol import PulsarApi_pb2 as pb
from ..pulsar_protocol.framing import MAX_FRAME_OVERHEAD, Frame, encode_command
from .client_cnx import ClientCnx
from .connection import CLIENT_VERSION, DEFAULT_MAX_MESSAGE_SIZE, Connection
from .exceptions import (
    AlreadyClosed,
    ConnectError,
    ErrorGettingAuthenticationData,
    InvalidUrl,
    PulsarException,
)
from .pending_requests import PendingRequests
from .pulsar_commands import is_tls_url, parse_pulsar_url

__all__ = ["DEFAULT_KEEP_ALIVE_SECONDS", "PROTOCOL_VERSION", "ConnectionPool", "OnReady"]

log = logging.getLogger("pulsarlab.client")

PROTOCOL_VERSION = 21  # Pulsar 3.x/4.x clients announce 21
DEFAULT_KEEP_ALIVE_SECONDS = 30  # Pulsar's clients' keepAliveIntervalSeconds
_T = pb.BaseCommand.Type

OnReady = Callable[[BaseException | None], None]


class ConnectionPool(Connection):
    """The I/O loop's transport: one :class:`ClientCnx` per broker URL."""

    service_url: str
    over_zmq: bool
    keep_alive_ms: int
    _ssl_context: ssl.SSLContext | None

    def _init_pool(self) -> None:
        self._cnxs: dict[str, ClientCnx] = {}
        self._by_fd: dict[Any, ClientCnx] = {}  # a socket's fd, or a zmq socket
        self._requests = PendingRequests()
        self._poller: zmq.Poller | None = None

    # -- hooks of the layers above --------------------------------------------------------

    def _handle_frames(self, cnx: ClientCnx, frames: list[Frame]) -> None:
        """What the broker sent, in order."""
        raise NotImplementedError

    def _cnx_lost(self, cnx: ClientCnx) -> None:
        """``cnx`` is gone: its producers and consumers reconnect."""

    # -- getting a ready socket -----------------------------------------------------------

    def _io_cnx(self, url: str, on_ready: OnReady) -> None:
        """Call ``on_ready`` once the socket to ``url`` has done its CONNECT handshake."""
        cnx = self._cnxs.get(url)
        if cnx is not None and cnx.ready:
            on_ready(None)
            return
        if cnx is None:
            try:
                cnx = self._open(url)
            except PulsarException as exc:  # e.g. the token supplier failed
                on_ready(exc)
                return
            if cnx is None:
                on_ready(ConnectError(f"cannot connect to {url}"))
                return
        cnx.waiting.append(on_ready)

    def _open(self, url: str) -> ClientCnx | None:
        cnx = ClientCnx(url, DEFAULT_MAX_MESSAGE_SIZE + MAX_FRAME_OVERHEAD, self.over_zmq)
        assert self._poller is not None
        if self.over_zmq:
            dealer = self._ctx.socket(zmq.DEALER)
            dealer.linger = 0
            dealer.sndhwm = 0
            dealer.rcvhwm = 0
            if self.curve_server_key is not None:
                apply_client(dealer, self.curve_server_key)
            if endpoint_is_ipv6(self.endpoint):  # ZeroMQ connects to [::1] only so
                dealer.ipv6 = True
            dealer.connect(self.endpoint)
            cnx.sock = dealer
            self._by_fd[dealer] = cnx
            self._poller.register(dealer, zmq.POLLIN)
        else:
            sock = self._open_socket(url, cnx)
            if sock is None:
                return None
        self._cnxs[url] = cnx
        if self.keep_alive_ms > 0:
            cnx.keep_alive = self.schedule(self.keep_alive_ms, lambda: self._keep_alive(cnx))
        try:
            cnx.outbox.append(encode_command(self._connect_command()))
        except PulsarException as exc:
            self._drop(cnx, exc)
            raise
        return cnx

    def _open_socket(self, url: str, cnx: ClientCnx) -> socket.socket | None:
        """A non-blocking TCP socket to ``url`` (TLS-wrapped for ``pulsar+ssl://``, its
        handshake still to do), registered with the poller; ``None`` if it cannot be."""
        assert self._poller is not None
        try:
            host, port = parse_pulsar_url(url)
        except InvalidUrl:
            return None
        try:
            sock = socket.create_connection((host, port), timeout=self.connection_timeout)
        except OSError as exc:
            log.info("cannot connect to %s: %s", url, exc)
            return None
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        events = zmq.POLLIN
        if is_tls_url(url):
            if self._ssl_context is None:  # a pulsar:// client sent to a TLS broker
                sock.close()
                log.info("cannot connect to %s: the client's service URL is not TLS", url)
                return None
            sock = self._ssl_context.wrap_socket(sock, server_hostname=host,
                                                 do_handshake_on_connect=False)
            cnx.handshaking = True
            events |= zmq.POLLOUT
        cnx.sock = sock
        self._by_fd[sock.fileno()] = cnx
        self._poller.register(sock.fileno(), events)
        return sock

    def _connect_command(self) -> pb.BaseCommand:
        command = pb.BaseCommand(type=_T.CONNECT)
        c = command.connect
        c.client_version = CLIENT_VERSION
        c.protocol_version = PROTOCOL_VERSION
        token = self._token()
        if token is not None:
            c.auth_method_name = "token"
            c.auth_data = token.encode()
        elif self.auth_method is not None:
            c.auth_method_name, data = self.auth_method
            c.auth_data = data.encode() if isinstance(data, str) else data
        return command

    def _auth_response(self) -> pb.BaseCommand:
        """AUTH_RESPONSE to an AUTH_CHALLENGE: the token, asked for again."""
        command = pb.BaseCommand(type=_T.AUTH_RESPONSE)
        command.authResponse.client_version = CLIENT_VERSION
        command.authResponse.protocol_version = PROTOCOL_VERSION
        token = self._token()
        command.authResponse.response.auth_method_name = "token"
        command.authResponse.response.auth_data = (token or "").encode()
        return command

    def _token(self) -> str | None:
        token = self.auth_token
        if callable(token):
            try:
                token = token()
            except Exception as exc:
                raise ErrorGettingAuthenticationData(
                    f"the authentication token supplier failed: {exc}") from None
        return token

    def _keep_alive(self, cnx: ClientCnx) -> None:
        """A keep-alive turn, as Pulsar's clients: PING, and close a connection that sent
        nothing since the last PING (its producers and consumers reconnect)."""
        if cnx.sock is None or self._cnxs.get(cnx.url) is not cnx:
            return
        seconds = self.keep_alive_ms / 1000
        if not cnx.ready or cnx.waiting_for_pong:
            what = "completed no handshake" if not cnx.ready else "answered no PING"
            message = f"{cnx.url} {what} within {seconds:g} s: closing the connection"
            log.warning("%s", message)
            self._drop(cnx, ConnectError(message))
            return
        cnx.waiting_for_pong = True
        cnx.outbox.append(encode_command(pb.BaseCommand(type=_T.PING)))
        cnx.keep_alive = self.schedule(self.keep_alive_ms, lambda: self._keep_alive(cnx))

    # -- the I/O loop's transport ---------------------------------------------------------

    def _transport_open(self, poller: zmq.Poller) -> None:
        self._poller = poller

    def _transport_ready(self, ready: dict[Any, int]) -> None:
        for fd, events in ready.items():
            cnx = self._by_fd.get(fd)
            if cnx is None:
                continue
            if cnx.handshaking:
                assert self._poller is not None
                failed = cnx.handshake(self._poller)
                if failed is not None:
                    self._drop(cnx, ConnectError(failed))
                    continue
                if cnx.handshaking:
                    continue
                self._write(cnx)  # the handshake is done: CONNECT goes out
                if cnx.sock is None:
                    continue
            if events & zmq.POLLOUT:
                self._write(cnx)
            if events & zmq.POLLIN:
                self._read(cnx)

    def _transport_flush(self) -> None:
        for cnx in list(self._cnxs.values()):
            if cnx.outbox and cnx.sock is not None and not cnx.handshaking:
                self._write(cnx)

    def _transport_close(self) -> None:
        for cnx in list(self._cnxs.values()):
            cnx.hang_up()
            self._drop(cnx, AlreadyClosed("the client was closed"), notify=False)

    def _write(self, cnx: ClientCnx) -> None:
        assert self._poller is not None
        lost = cnx.write(self._poller)
        if lost is not None:
            self._drop(cnx, ConnectError(lost))

    def _read(self, cnx: ClientCnx) -> None:
        if cnx.sock is None:
            return
        frames, lost = cnx.read()
        if frames:
            self._handle_frames(cnx, frames)
        if lost is not None and cnx.sock is not None:
            self._drop(cnx, ConnectError(lost))

    def _drop(self, cnx: ClientCnx, error: BaseException, notify: bool = True) -> None:
        """Close a socket: waiting requests fail, its producers and consumers reconnect."""
        if self._cnxs.get(cnx.url) is cnx:
            del self._cnxs[cnx.url]
        if cnx.sock is not None:
            key = cnx.poll_key
            self._by_fd.pop(key, None)
            with contextlib.suppress(KeyError, zmq.ZMQError, ValueError):
                assert self._poller is not None
                self._poller.unregister(key)
        cnx.close()
        waiting, cnx.waiting = cnx.waiting, []
        for on_ready in waiting:
            on_ready(error)
        self._requests.fail(cnx, error)
        if notify:
            self._cnx_lost(cnx)
