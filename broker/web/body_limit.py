"""A request body over the limit gets 413 with Pulsar's ``{"reason": ...}``, before it is read.

Tornado's own ``max_body_size`` check answers a bare ``400 Bad Request`` (or resets the
connection) when a declared ``Content-Length`` is too big. :class:`BodyLimit` wraps the
application and looks at the headers first: a request declaring more than the limit is
answered ``413 Payload Too Large`` with a JSON reason and its connection is closed, so the
body is never read. (A chunked body has no length up front; Tornado still stops it at the
limit, with its 400.)
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Any

from tornado import httputil

__all__ = ["BodyLimit"]


class BodyLimit(httputil.HTTPServerConnectionDelegate):
    """The application, behind a check of each request's declared body size."""

    def __init__(self, app: httputil.HTTPServerConnectionDelegate, limit: int) -> None:
        self.app = app
        self.limit = limit

    def start_request(
        self, server_conn: object, request_conn: httputil.HTTPConnection
    ) -> httputil.HTTPMessageDelegate:
        return _Checked(self.app.start_request(server_conn, request_conn), request_conn,
                        self.limit)

    def on_close(self, server_conn: object) -> None:
        self.app.on_close(server_conn)


class _Checked(httputil.HTTPMessageDelegate):
    def __init__(self, inner: httputil.HTTPMessageDelegate,
                 conn: httputil.HTTPConnection, limit: int) -> None:
        self.inner = inner
        self.conn = conn
        self.limit = limit
        self.refused = False

    def headers_received(self, start_line: Any, headers: httputil.HTTPHeaders
                         ) -> Awaitable[None] | None:
        length = headers.get("Content-Length", "").strip()
        if length.isdigit() and int(length) > self.limit:
            self.refused = True
            return self._refuse(int(length))
        return self.inner.headers_received(start_line, headers)

    async def _refuse(self, length: int) -> None:
        body = json.dumps({
            "reason": f"the request body of {length} bytes exceeds the limit of "
                      f"{self.limit} bytes"
        }).encode()
        headers = httputil.HTTPHeaders({
            "Content-Type": "application/json", "Content-Length": str(len(body)),
            "Connection": "close",
        })
        await self.conn.write_headers(
            httputil.ResponseStartLine("HTTP/1.1", 413, "Payload Too Large"), headers, body
        )
        self.conn.finish()
        self.conn.close()  # the body is never read

    def data_received(self, chunk: bytes) -> Awaitable[None] | None:
        return None if self.refused else self.inner.data_received(chunk)

    def finish(self) -> None:
        if not self.refused:
            self.inner.finish()

    def on_connection_close(self) -> None:
        if not self.refused:
            self.inner.on_connection_close()
