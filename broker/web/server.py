"""The HTTP listener: a Tornado ``HTTPServer`` on one asyncio loop in its own thread."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from typing import Any

from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

from .app import make_app
from .body_limit import BodyLimit

log = logging.getLogger("pulsarlab.broker.web")

# Admin requests are small JSON documents; a larger body is refused before it is read.
MAX_BODY_SIZE = 1 << 20


class WebServer:
    """Binds ``host:port`` at once (0 = a free port) and serves once :meth:`start` ed."""

    def __init__(self, broker: Any, host: str, port: int) -> None:
        self.broker = broker
        self.host = host
        try:
            self._sockets: list[socket.socket] = bind_sockets(port, address=host)
        except OSError as exc:
            raise OSError(
                exc.errno, f"cannot serve the admin REST API on {host}:{port}: {exc.strerror}"
            ) from None
        self.port: int = self._sockets[0].getsockname()[1]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

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
        server = HTTPServer(BodyLimit(make_app(self.broker), MAX_BODY_SIZE),
                            max_body_size=MAX_BODY_SIZE)
        server.add_sockets(self._sockets)
        ready.set()
        try:
            loop.run_forever()
        finally:
            server.stop()
            loop.run_until_complete(server.close_all_connections())
            loop.close()
            self._loop = None

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and close the listening sockets (and open connections)."""
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
        self._thread = None
        for sock in self._sockets:
            sock.close()
        self._sockets = []
