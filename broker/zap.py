"""A ZeroMQ authentication (ZAP, RFC 27) handler: tokens for the event stream.

The event stream is a PUB socket; it cannot read a CONNECT, so with authentication on the
broker makes it a ZeroMQ PLAIN server in the ZAP domain ``pulsarlab-events`` and this
handler checks each subscriber's handshake: the password must be a token the broker accepts
(and, with authorization on, one of a superuser role: events name every topic). Subscribers
set ``plain_username = b"token"`` and ``plain_password = TOKEN`` (:func:`subscriber_login`).
A refused subscriber's connection fails its handshake and it receives nothing.

ZeroMQ asks the handler about every PLAIN or CURVE handshake of the context, so the
broker's CURVE-encrypted ROUTER is answered too: allowed, as its clients prove who they
are with the token in CONNECT. The handler owns one REP socket on
``inproc://zeromq.zap.01`` and runs on its own thread; it touches nothing but its socket and
the checking function it is given (which must be thread-safe).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import zmq

__all__ = ["EVENTS_DOMAIN", "ZapHandler", "subscriber_login"]

log = logging.getLogger("pulsarlab.broker.zap")

EVENTS_DOMAIN = b"pulsarlab-events"
ZAP_ENDPOINT = "inproc://zeromq.zap.01"


def subscriber_login(sock: zmq.Socket, token: str) -> None:
    """Give a SUB socket the credentials of an event stream with authentication on."""
    sock.plain_username = b"token"
    sock.plain_password = token.encode("utf-8")


class ZapHandler:
    """Answers ZAP requests: ``check(token)`` → ``(ok, reason, user_id)`` for the events."""

    def __init__(self, ctx: zmq.Context, check: Callable[[str], tuple[bool, str, str]]) -> None:
        self._check = check
        self._stop = threading.Event()
        self._sock = ctx.socket(zmq.REP)
        self._sock.linger = 0
        self._sock.bind(ZAP_ENDPOINT)
        self._thread = threading.Thread(target=self._run, name="pulsarlab-zap", daemon=True)
        self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        """Stop answering; the socket is closed by the handler's thread."""
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if self._sock.poll(100):
                    self._sock.send_multipart(self.answer(self._sock.recv_multipart()))
        except Exception:
            log.exception("the ZAP handler stopped")
        finally:
            self._sock.close(linger=0)

    def answer(self, request: list[bytes]) -> list[bytes]:
        """The reply frames for one ZAP request (version, id, status, text, user, metadata)."""
        if len(request) < 6:
            return [b"1.0", b"", b"500", b"malformed ZAP request", b"", b""]
        version, request_id, domain, _address, _identity, mechanism = request[:6]
        credentials = request[6:]
        if version != b"1.0":
            return [b"1.0", request_id, b"500", b"unsupported ZAP version", b"", b""]
        if domain != EVENTS_DOMAIN:
            return [version, request_id, b"200", b"OK", b"", b""]
        if mechanism != b"PLAIN" or len(credentials) != 2:
            return [version, request_id, b"400", b"the event stream needs a token", b"", b""]
        try:
            token = credentials[1].decode("utf-8")
        except UnicodeDecodeError:
            return [version, request_id, b"400", b"the token is not utf-8", b"", b""]
        ok, reason, user = self._check(token)
        if not ok:
            log.debug("refused an event subscriber: %s", reason)
            return [version, request_id, b"400", reason.encode()[:250], b"", b""]
        return [version, request_id, b"200", b"OK", user.encode(), b""]
