"""One socket to one broker, as Java's ``ClientCnx``: its framing, its outbox and its I/O.

A :class:`ClientCnx` is a TCP socket (``pulsar://``), a TLS-wrapped one (``pulsar+ssl://``,
its handshake done step by step in the I/O loop) or a ZeroMQ DEALER (``zmq://``, one whole
Pulsar frame per ZeroMQ message; an empty message is a hang-up). It writes what its outbox
holds, reads and decodes what the broker sent, and keeps its keep-alive and CONNECT state;
what a lost socket means (failed requests, reconnecting producers and consumers) is the
:mod:`.connection_pool`'s to decide: these methods only say *why* the socket is lost.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
from collections.abc import Callable
from typing import Any

import zmq

from ..pulsar_protocol.framing import Frame, FrameDecoder, FrameError, decode_message
from .connection import _RECV_BURST, DEFAULT_MAX_MESSAGE_SIZE, TimerHandle
from .tls import handshake_error

__all__ = ["ClientCnx"]

log = logging.getLogger("pulsarlab.client")

_TLS_RECORD = 16384  # the most one TLS record carries: what one non-blocking write sends
_RECV_BYTES = 1 << 20


class ClientCnx:
    """One socket to one broker: its framing, its outbox, its producers and consumers."""

    def __init__(self, url: str, max_frame: int, over_zmq: bool) -> None:
        self.url = url
        self.over_zmq = over_zmq  # a ZeroMQ DEALER rather than a TCP (or TLS) socket
        self.sock: Any = None  # socket.socket, ssl.SSLSocket or zmq.Socket
        self.decoder = FrameDecoder(max_frame, checksum_optional=True)
        self.outbox: list[bytes] = []  # written when the loop flushes
        self.unsent = b""  # what the kernel did not take yet
        self.ready = False  # CONNECTED received
        self.waiting: list[Callable[[BaseException | None], None]] = []
        self.producers: set[int] = set()
        self.consumers: set[int] = set()
        self.max_message_size = DEFAULT_MAX_MESSAGE_SIZE
        self.handshaking = False  # a TLS handshake under way: nothing is written yet
        self.waiting_for_pong = False  # a keep-alive PING went out and nothing came back
        self.keep_alive: TimerHandle | None = None

    @property
    def poll_key(self) -> Any:
        """What the loop's poller knows this socket by: the zmq socket, or the fd."""
        return self.sock if self.over_zmq else self.sock.fileno()

    def close(self) -> None:
        """Close the socket (once); the poller must have forgotten it first."""
        sock, self.sock = self.sock, None
        if self.keep_alive is not None:
            self.keep_alive.cancel()
        if sock is None:
            return
        if self.over_zmq:
            sock.close(linger=0)
        else:
            sock.close()

    def hang_up(self) -> None:
        """Over ZeroMQ, tell the broker this connection ends (an empty message)."""
        if self.over_zmq and self.sock is not None:
            with contextlib.suppress(zmq.ZMQError):
                self.sock.send(b"", zmq.NOBLOCK)

    # -- writing --------------------------------------------------------------------------

    def write(self, poller: zmq.Poller) -> str | None:
        """Write the outbox (what the kernel does not take waits for POLLOUT); the reason
        the socket is lost, if it is."""
        sock = self.sock
        if sock is None:
            return None
        if self.over_zmq:  # one Pulsar frame per ZeroMQ message (no high-water mark)
            frames, self.outbox = self.outbox, []
            try:
                for frame in frames:
                    sock.send(frame, copy=len(frame) < 65536)
            except zmq.ZMQError as exc:
                return f"connection to {self.url} lost: {exc}"
            return None
        data = self.unsent + b"".join(self.outbox) if self.outbox else self.unsent
        self.outbox.clear()
        try:
            if isinstance(sock, ssl.SSLSocket):
                sent = _send_tls(sock, data)
            else:
                sent = sock.send(data) if data else 0
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            return f"connection to {self.url} lost: {exc}"
        self.unsent = data[sent:]
        poller.modify(sock.fileno(), zmq.POLLIN | (zmq.POLLOUT if self.unsent else 0))
        return None

    def handshake(self, poller: zmq.Poller) -> str | None:
        """One step of a non-blocking TLS handshake (``handshaking`` is cleared once it is
        done); why it failed, if it did."""
        sock = self.sock
        assert isinstance(sock, ssl.SSLSocket)
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            poller.modify(sock.fileno(), zmq.POLLIN)
            return None
        except ssl.SSLWantWriteError:
            poller.modify(sock.fileno(), zmq.POLLIN | zmq.POLLOUT)
            return None
        except OSError as exc:  # ssl.SSLError included: untrusted, wrong name, reset
            message = handshake_error(self.url, exc)
            log.info("%s", message)
            return message
        self.handshaking = False
        return None

    # -- reading --------------------------------------------------------------------------

    def read(self) -> tuple[list[Frame], str | None]:
        """The frames the broker sent (handled before anything else) and, if the socket
        is lost (closed, reset, a bad frame), why."""
        if self.over_zmq:
            return self._read_dealer()
        data, closed = self._recv()
        if data:
            self.waiting_for_pong = False  # any traffic shows the broker is alive
            try:
                return self.decoder.feed(data), closed
            except FrameError as exc:
                log.warning("bad frame from %s: %s", self.url, exc)
                return [], f"bad frame from {self.url}: {exc}"
        return [], closed

    def _read_dealer(self) -> tuple[list[Frame], str | None]:
        """A burst of ZeroMQ messages, each one whole frame; an empty one: the broker
        closed the connection."""
        frames: list[Frame] = []
        sock = self.sock
        max_frame = self.decoder.max_frame_size
        for _ in range(_RECV_BURST):
            try:
                data = sock.recv(zmq.NOBLOCK)
            except zmq.Again:
                break
            self.waiting_for_pong = False
            if not data:
                return frames, f"the broker at {self.url} closed the connection"
            try:
                frames.append(decode_message(data, max_frame, checksum_optional=True))
            except FrameError as exc:
                log.warning("bad frame from %s: %s", self.url, exc)
                return frames, f"bad frame from {self.url}: {exc}"
        return frames, None

    def _recv(self) -> tuple[bytes, str | None]:
        """What the socket has (``b""`` if nothing yet) and, if it is closed, why.
        A TLS socket is read until it would block: the bytes OpenSSL already decrypted
        are no longer the poller's to announce."""
        sock: socket.socket = self.sock
        chunks: list[bytes] = []
        total = 0
        while True:
            try:
                chunk = sock.recv(_RECV_BYTES)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError,
                    ssl.SSLWantWriteError):
                return b"".join(chunks), None
            except OSError as exc:  # a TLS alert too, e.g. the broker wants a certificate
                reason = getattr(exc, "reason", None) or exc.strerror or str(exc)
                log.info("connection to %s lost: %s", self.url, reason)
                return b"".join(chunks), f"connection to {self.url} lost: {reason}"
            if not chunk:
                return b"".join(chunks), f"connection to {self.url} closed"
            chunks.append(chunk)
            total += len(chunk)
            tls = isinstance(sock, ssl.SSLSocket)
            if not tls or (total >= _RECV_BYTES and not sock.pending()):
                return b"".join(chunks), None


def _send_tls(sock: ssl.SSLSocket, data: bytes) -> int:
    """Write ``data`` one TLS record at a time until the socket would block (a write that
    would block is repeated later with the same bytes, as OpenSSL requires)."""
    view = memoryview(data)
    sent = 0
    while sent < len(data):
        try:
            sent += sock.send(view[sent:sent + _TLS_RECORD])
        except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError,
                InterruptedError):
            break  # what went out before counts: it is not sent twice
    return sent
