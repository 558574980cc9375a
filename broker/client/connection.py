"""The client's I/O loop: one thread owning the sockets of a connection, and its timers.

Sockets are not thread-safe, so only the I/O thread touches them. Other threads hand it
work through :meth:`Connection.post` (a queue plus a one-byte wake-up on a socketpair the
poller watches); :meth:`Connection.request` asks for a command and returns a
:class:`~concurrent.futures.Future` its reply completes. The loop polls the transport's
sockets and the wake-up with a timeout driven by :meth:`Connection.schedule` timers (batch
publish delay, ack-group flush, nack redelivery, send timeouts). The protocol and its
transports are a subclass's: :class:`~.pulsar_connection.PulsarConnection`, Pulsar's binary
protocol over TCP or a ZeroMQ DEALER.

Pushed commands (MESSAGE, SEND_RECEIPT, ...) go to the handler registered for their
producer or consumer id; handlers run on the I/O thread and must not block.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import heapq
import itertools
import logging
import queue
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import zmq

from ..entry import MessageMetadata
from .exceptions import (
    AlreadyClosed,
    InvalidUrl,
    PulsarException,
    Timeout,
)

__all__ = [
    "CallbackExecutor", "Command", "Connection", "TimerHandle", "now_ms", "parse_service_url",
]

log = logging.getLogger("pulsarlab.client")

CLIENT_VERSION = "pulsarlab-client-0.1"
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
_RECV_BURST = 1000


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def parse_service_url(service_url: str) -> str:
    """``zmq://host:port`` (or ``tcp://``, ``ipc://``, ``inproc://``) → a ZeroMQ endpoint."""
    url = service_url.strip().rstrip("/")
    for prefix in ("zmq://", "tcp://"):
        if url.startswith(prefix):
            hostport = url[len(prefix):]
            host, sep, port = hostport.rpartition(":")
            if not sep or not host or not port.isdigit():
                raise InvalidUrl(f"service URL {service_url!r} must look like zmq://host:port")
            return f"tcp://{hostport}"
    if url.startswith(("ipc://", "inproc://")):
        return url
    raise InvalidUrl(
        f"unsupported service URL {service_url!r}: use zmq://host:port (a pulsarlab "
        "broker's ZeroMQ socket) or pulsar://host:port (any Pulsar broker)"
    )


@dataclass(slots=True)
class Command:
    """A reply or a push, by its pulsarlab name (``SEND_RECEIPT``, ``CLOSE_CONSUMER``, ...),
    with its fields: what the producers and consumers read, whatever the wire."""

    name: str
    request_id: int
    fields: dict[str, Any]
    payloads: list[Any] = field(default_factory=list)

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)


class TimerHandle:
    """A scheduled callback; :meth:`cancel` stops it from running."""

    __slots__ = ("cancelled", "deadline", "fn")

    def __init__(self, deadline: int, fn: Callable[[], None]) -> None:
        self.deadline = deadline
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Connection:
    """One connection to a broker, served by a daemon I/O thread."""

    def __init__(
        self,
        service_url: str,
        *,
        auth_token: str | Callable[[], str | None] | None = None,
        auth_method: tuple[str, str] | None = None,
        operation_timeout_seconds: float = 30,
        connection_timeout_ms: int = 10_000,
        curve_server_key: bytes | None = None,
    ) -> None:
        self.endpoint = self._parse_url(service_url)
        self.auth_token = auth_token  # a token or a supplier called at each CONNECT
        self.auth_method = auth_method  # (method, data) of another provider, e.g. basic
        self.curve_server_key = curve_server_key  # the broker's CURVE public key (Z85)
        self._auth_failure: PulsarException | None = None
        self.operation_timeout = float(operation_timeout_seconds)
        self.connection_timeout = connection_timeout_ms / 1000.0
        self.max_message_size = DEFAULT_MAX_MESSAGE_SIZE
        self.connected = False
        self._connect_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._ids_lock = threading.Lock()
        self._tasks: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        # True while a wake-up byte is on its way and the loop has not yet started taking
        # tasks: later posts need not write another one (a syscall per post halves a
        # producer's rate). The loop clears it before it takes tasks, so none is missed.
        self._wake_pending = False
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._stop = threading.Event()
        self._closed = False
        # I/O-thread state.
        self._producers: dict[int, Any] = {}
        self._consumers: dict[int, Any] = {}
        self._timers: list[tuple[int, int, TimerHandle]] = []
        self._timer_seq = itertools.count()
        self._ctx = zmq.Context()
        self._thread = threading.Thread(target=self._run, name="pulsarlab-client-io", daemon=True)
        self._thread.start()

    def _parse_url(self, service_url: str) -> str:
        return parse_service_url(service_url)

    # -- any thread -----------------------------------------------------------------------

    def new_id(self) -> int:
        """A fresh producer/consumer id, unique on this connection."""
        with self._ids_lock:
            return next(self._ids)

    @property
    def is_io_thread(self) -> bool:
        return threading.current_thread() is self._thread

    @property
    def closed(self) -> bool:
        return self._closed

    def post(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the I/O thread (FIFO with other posted work)."""
        if self._closed:
            raise AlreadyClosed("the client is closed")
        self._tasks.put(fn)
        if self._wake_pending:
            return
        self._wake_pending = True
        # A full buffer means wake-ups are pending already: the loop will run.
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\x00")

    def request(self, name: str, payloads: tuple = (), **fields: Any) -> concurrent.futures.Future:
        """Ask for a command (by its pulsarlab name); the future gets the reply ``Command``."""
        raise NotImplementedError

    def send(self, name: str, payloads: tuple = (), **fields: Any) -> None:
        """Fire-and-forget a command."""
        raise NotImplementedError

    def wait(self, future: concurrent.futures.Future, timeout: float | None = -1.0) -> Any:
        """The future's result; ``Timeout`` after ``timeout`` s (default: operation timeout)."""
        if timeout is not None and timeout < 0:
            timeout = self.operation_timeout
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            raise Timeout("operation timed out") from None

    def call(self, fn: Callable[[], Any], timeout: float | None = -1.0) -> Any:
        """Run ``fn`` on the I/O thread and return its result."""
        if self.is_io_thread:
            return fn()
        future: concurrent.futures.Future = concurrent.futures.Future()

        def task() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

        self.post(task)
        return self.wait(future, timeout)

    def ensure_connected(self) -> None:
        """Do the CONNECT handshake once; ``ConnectError`` if the broker does not answer."""
        raise NotImplementedError

    def close(self, timeout: float = 5.0) -> None:
        """Stop the I/O thread (work already posted runs first) and release the socket."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\x00")
        if not self.is_io_thread:
            self._thread.join(timeout)
        self._wake_r.close()
        self._wake_w.close()
        self.connected = False

    # -- I/O thread only ------------------------------------------------------------------

    def register_producer(self, producer_id: int, handler: Any) -> None:
        self._producers[producer_id] = handler

    def unregister_producer(self, producer_id: int) -> None:
        self._producers.pop(producer_id, None)

    def register_consumer(self, consumer_id: int, handler: Any) -> None:
        self._consumers[consumer_id] = handler

    def unregister_consumer(self, consumer_id: int) -> None:
        self._consumers.pop(consumer_id, None)

    def schedule(self, delay_ms: float, fn: Callable[[], None]) -> TimerHandle:
        """Run ``fn`` on the I/O thread after ``delay_ms``."""
        handle = TimerHandle(now_ms() + max(0, int(delay_ms)), fn)
        heapq.heappush(self._timers, (handle.deadline, next(self._timer_seq), handle))
        return handle

    def send_message(self, producer_id: int, sequence_id: int, metadata: MessageMetadata,
                     payload: bytes, num_messages: int = 1,
                     highest_sequence_id: int | None = None) -> None:
        """SEND one entry (a message, a batch or a chunk)."""
        raise NotImplementedError

    def send_now(self, name: str, rid: int, payloads: tuple = (), **fields: Any) -> None:
        """Send a fire-and-forget command now (I/O thread)."""
        raise NotImplementedError

    def _run(self) -> None:
        poller = zmq.Poller()
        poller.register(self._wake_r.fileno(), zmq.POLLIN)
        self._transport_open(poller)
        try:
            while True:
                self._wake_pending = False
                self._run_tasks()
                if self._stop.is_set():
                    break
                self._transport_flush()
                timeout = self._next_timeout()
                ready = dict(poller.poll(timeout))
                if self._wake_r.fileno() in ready:
                    self._drain_wake()
                self._transport_ready(ready)
                self._run_timers()
        except Exception:
            log.exception("pulsarlab client I/O loop crashed")
        finally:
            self._shutdown()

    # The transport: the subclass's sockets.

    def _transport_open(self, poller: zmq.Poller) -> None:
        """Register the transport's sockets with the loop's poller."""

    def _transport_ready(self, ready: dict[Any, int]) -> None:
        """Read (or write) the sockets ``poll`` found ready."""

    def _transport_flush(self) -> None:
        """Write what the loop's tasks and timers queued."""

    def _transport_close(self) -> None:
        """Close the sockets (the loop is ending)."""

    def _shutdown(self) -> None:
        self._run_tasks()
        for handler in list(self._producers.values()) + list(self._consumers.values()):
            try:
                handler.on_connection_closed()
            except Exception:
                log.exception("error while closing a producer/consumer")
        self._transport_flush()
        self._transport_close()
        self._ctx.term()

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _run_tasks(self) -> None:
        while True:
            try:
                task = self._tasks.get_nowait()
            except queue.Empty:
                return
            try:
                task()
            except Exception:
                log.exception("error in a client I/O task")

    def _next_timeout(self) -> int:
        while self._timers and self._timers[0][2].cancelled:
            heapq.heappop(self._timers)
        if not self._timers:
            return 1000
        return max(0, min(1000, self._timers[0][0] - now_ms()))

    def _run_timers(self) -> None:
        now = now_ms()
        while self._timers and self._timers[0][0] <= now:
            _, _, handle = heapq.heappop(self._timers)
            if handle.cancelled:
                continue
            try:
                handle.fn()
            except Exception:
                log.exception("error in a client timer")



def _run_callbacks(result: Any, calls: list[tuple[Callable[..., None], Any]]) -> None:
    for callback, arg in calls:
        try:
            callback(result, arg)
        except Exception:
            log.exception("a user callback raised")


class CallbackExecutor:
    """One thread running user callbacks (message listeners, ``send_async`` callbacks)."""

    def __init__(self, name: str = "pulsarlab-client-listener") -> None:
        self._name = name
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        if self._closed:
            return
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=self._name,
                                                    daemon=True)
                    self._thread.start()
        self._queue.put(lambda: fn(*args))

    def submit_callbacks(self, result: Any, calls: list[tuple[Callable[..., None], Any]]) -> None:
        """Run ``callback(result, arg)`` for each pair, in order, as one task (the
        ``send_async`` callbacks of one batch); one raising does not stop the others."""
        self.submit(_run_callbacks, result, calls)

    @property
    def is_executor_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def _run(self) -> None:
        while True:
            task = self._queue.get()
            if task is None:
                return
            try:
                task()
            except Exception:
                log.exception("a user callback raised")

    def close(self, timeout: float = 5.0) -> None:
        """Run what is queued, then stop (does not wait when called from a callback)."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        thread = self._thread
        if thread is not None and not self.is_executor_thread:
            thread.join(timeout)
