"""The HTTP listeners: Tornado ``HTTPServer`` s (http://, and https:// when webServicePortTls
is set) on one asyncio loop in its own thread."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import threading
from typing import Any

from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

from .app import make_app

log = logging.getLogger("pulsarlab.broker.web")

# Admin requests are small JSON documents; a larger body is refused before it is read.
MAX_BODY_SIZE = 1 << 20


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
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def url_tls(self) -> str | None:
        """``https://host:port`` when the https:// listener is on."""
        return None if self.port_tls is None else f"https://{self.host}:{self.port_tls}"

    def start(self, timeout: float = 10.0) -> None:
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name="pulsarlab-web", daemon=True
        )
        self._thread.start()
        if not ready.wait(timeout):
            raise RuntimeError("the pulsarlab web server did not start in time")

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        app = make_app(self.broker)
        server = HTTPServer(app, max_body_size=MAX_BODY_SIZE)
        server.add_sockets(self._sockets)
        servers = [server]
        if self._ssl_context is not None:
            tls_server = HTTPServer(app, max_body_size=MAX_BODY_SIZE,
                                    ssl_options=self._ssl_context)
            tls_server.add_sockets(self._tls_sockets)
            servers.append(tls_server)
        ready.set()
        try:
            loop.run_forever()
        finally:
            for each in servers:
                each.stop()
                loop.run_until_complete(each.close_all_connections())
            loop.close()
            self._loop = None

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and close the listening sockets (and open connections)."""
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
        self._thread = None
        for sock in self._sockets + self._tls_sockets:
            sock.close()
        self._sockets = []
        self._tls_sockets = []


def _bind(host: str, port: int) -> list[socket.socket]:
    try:
        return bind_sockets(port, address=host)
    except OSError as exc:
        raise OSError(
            exc.errno, f"cannot serve the admin REST API on {host}:{port}: {exc.strerror}"
        ) from None
