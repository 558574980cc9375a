"""The HTTP listeners: Tornado ``HTTPServer`` s (http://, and https:// when webServicePortTls
is set) on an asyncio loop the broker thread drives (:mod:`.pump`), or in a thread of their
own where the platform's selector cannot be watched from the broker's poller."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
import threading
from typing import Any

from tornado.httpserver import HTTPServer
from tornado.ioloop import IOLoop
from tornado.netutil import bind_sockets

from ..hosts import connect_host
from ..resource_log import RESOURCE_ERRNOS, RateLimitedLog
from ..storage.open_files import descriptor_share
from .app import make_app
from .body_limit import BodyLimit
from .pump import PumpedLoop

log = logging.getLogger("pulsarlab.broker.web")

# Admin requests are small JSON documents; a larger body is refused before it is read.
MAX_BODY_SIZE = 1 << 20
# Out of descriptors, accepting pauses this long (asyncio's own accept retry delay) while
# the connections already open are served and idle ones time out.
ACCEPT_RETRY_DELAY_S = 1.0


def default_http_connections() -> int:
    """Pulsar's maxHttpServerConnections (2048), at most a quarter of RLIMIT_NOFILE: idle
    HTTP peers never take the descriptors that storage and pulsar:// clients need."""
    return descriptor_share(2048)


class WebServer:
    """Binds ``host:port`` at once (0 = a free port), and ``tls_port`` with ``ssl_context``
    when ``tls_port >= 0``, and serves once :meth:`start` ed."""

    def __init__(self, broker: Any, host: str, port: int, *, tls_port: int = -1,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.broker = broker
        self.host = host
        self._sockets: list[socket.socket] = _bind(host, port)
        self.port: int = self._sockets[0].getsockname()[1]
        self._ssl_context = ssl_context if tls_port >= 0 else None
        self._tls_sockets: list[socket.socket] = []
        self.port_tls: int | None = None
        if self._ssl_context is not None:
            try:
                self._tls_sockets = _bind(host, tls_port)
            except OSError:
                for sock in self._sockets:
                    sock.close()
                raise
            self.port_tls = self._tls_sockets[0].getsockname()[1]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._servers: list[HTTPServer] = []
        self._thread: threading.Thread | None = None
        self._accept_errors = RateLimitedLog(log)
        self._refusals = RateLimitedLog(log, level=logging.WARNING)

    @property
    def url(self) -> str:
        return f"http://{connect_host(self.host)}:{self.port}"

    @property
    def url_tls(self) -> str | None:
        """``https://host:port`` when the https:// listener is on."""
        return None if self.port_tls is None else f"https://{connect_host(self.host)}:{self.port_tls}"

    def start(self, timeout: float = 10.0) -> None:
        """Serve on a thread of its own (where :meth:`attach` is not supported)."""
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name="pulsarlab-web", daemon=True
        )
        self._thread.start()
        if not ready.wait(timeout):
            raise RuntimeError("the pulsarlab web server did not start in time")

    def attach(self) -> PumpedLoop:
        """Serve on the calling thread (the broker's): it watches the returned loop's
        ``fileno()`` beside its own sockets, waits at most ``wait_ms``, and ``pump`` s it.
        An admin call so runs on the thread that answers it, with no hand-off between
        threads. :meth:`detach` (on the same thread) stops serving."""
        loop = PumpedLoop()
        asyncio.set_event_loop(loop)
        try:
            self._servers = self._listen()
        except BaseException:
            asyncio.set_event_loop(None)
            loop.close()
            raise
        self._loop = loop
        return loop

    def detach(self) -> None:
        """Stop serving on the thread that :meth:`attach` ed, close the sockets."""
        loop = self._loop
        if loop is None:
            return
        try:
            self._close_servers(loop)
        finally:
            loop.close()
            asyncio.set_event_loop(None)
            self._loop = None
            self._close_sockets()

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        self._servers = self._listen()
        ready.set()
        try:
            loop.run_forever()
        finally:
            self._close_servers(loop)
            loop.close()
            self._loop = None

    def _listen(self) -> list[HTTPServer]:
        """The HTTP servers, accepting on the bound sockets (on the current loop)."""
        # A connection must send a request's headers (idle_connection_timeout) and its body
        # (body_timeout) in time: slow or idle peers cannot hold descriptors for an hour.
        timeout_s = self.broker.settings.web_service_idle_timeout_ms / 1000
        limits = {"max_body_size": MAX_BODY_SIZE, "idle_connection_timeout": timeout_s,
                  "body_timeout": timeout_s}
        app = BodyLimit(make_app(self.broker), MAX_BODY_SIZE)
        server = HTTPServer(app, **limits)
        for sock in self._sockets:
            self._accept_on(server, sock)
        servers = [server]
        if self._ssl_context is not None:
            tls_server = HTTPServer(app, ssl_options=self._ssl_context, **limits)
            for sock in self._tls_sockets:
                self._accept_on(tls_server, sock)
            servers.append(tls_server)
        return servers

    def _close_servers(self, loop: asyncio.AbstractEventLoop) -> None:
        for sock in (*self._sockets, *self._tls_sockets):
            IOLoop.current().remove_handler(sock)
        for each in self._servers:
            each.stop()
            loop.run_until_complete(each.close_all_connections())
        self._servers = []

    def _accept_on(self, server: HTTPServer, sock: socket.socket) -> None:
        """Accept connections on ``sock`` for ``server`` (Tornado's ``add_sockets``, except
        that running out of descriptors logs one line per interval and pauses accepting
        instead of logging a traceback per attempt, megabytes a second)."""
        io_loop = IOLoop.current()
        limit = self.broker.settings.max_http_server_connections or default_http_connections()

        def accept(fd: Any, events: int) -> None:
            for _ in range(128):  # then let other callbacks run
                try:
                    connection, address = sock.accept()
                except (BlockingIOError, InterruptedError):
                    return
                except ConnectionAbortedError:
                    continue
                except OSError as exc:
                    if exc.errno not in RESOURCE_ERRNOS:
                        raise
                    self._accept_errors.log(
                        f"admin REST API: cannot accept connections: {os.strerror(exc.errno)}; "
                        f"pausing accepts for {ACCEPT_RETRY_DELAY_S:g} s (open connections "
                        "are still served)"
                    )
                    io_loop.remove_handler(sock)
                    io_loop.call_later(ACCEPT_RETRY_DELAY_S, resume)
                    return
                if len(server._connections) >= limit:  # Tornado's set of open connections
                    self._refusals.log(
                        f"admin REST API: {limit} connections open "
                        "(max_http_server_connections); closing new ones"
                    )
                    connection.close()
                    continue
                server._handle_connection(connection, address)  # what add_sockets calls

        def resume() -> None:
            if sock.fileno() >= 0:
                io_loop.add_handler(sock, accept, IOLoop.READ)

        resume()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and close the listening sockets (and open connections), when
        serving on a thread of its own (an attached server stops with :meth:`detach`)."""
        loop, thread = self._loop, self._thread
        if thread is None and loop is not None:
            return  # attached: the thread that drives it detaches
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
        self._thread = None
        self._close_sockets()

    def _close_sockets(self) -> None:
        for sock in self._sockets + self._tls_sockets:
            sock.close()
        self._sockets = []
        self._tls_sockets = []


def _bind(host: str, port: int) -> list[socket.socket]:
    try:
        return bind_sockets(port, address=host.strip("[]"))
    except OSError as exc:
        raise OSError(
            exc.errno, f"cannot serve the admin REST API on {host}:{port}: {exc.strerror}"
        ) from None
