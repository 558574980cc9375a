"""The ZeroMQ shell around the broker core: sockets, timers, heart-beats, one thread.

``Broker`` binds a ROUTER socket for client commands (replies and pushed messages go
back through it), a STREAM socket for the official client's pulsar:// connections (raw TCP
bytes, each connection a sans-I/O :class:`~.pulsar_protocol.PulsarSession`) and an XPUB
socket for the event stream, then runs one loop on its own thread: read a burst of
commands, hand them to :class:`BrokerService`, group-commit (one fsync for the burst),
run due timers, and turn the core's actions into frames. The same class serves inside a
Jupyter kernel (``start()`` in-process) and as its own process (``pulsarlab broker`` calls
the very same ``start()``/``stop()``).

Other threads never touch the core directly: :meth:`Broker.call` runs a function on the
broker thread and returns its result.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import shutil
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgpack
import zmq
import zmq.utils.monitor

from . import wire
from .actions import ActiveConsumerChange, ConsumerClosed, Deliver, SendError, SendReceipt
from .admin_handler import AdminHandler
from .clock import WallClock
from .consumer import KeySharedMeta, KeySharedMode, SubType
from .curve import apply_server, load_secret_key
from .entry import FLAG_PULSAR_BATCH, MessageMetadata, decode_entry, encode_entry
from .errors import AuthenticationError, ConsumerNotFound, InvalidArgument, PulsarLabError
from .events import BrokerEvent
from .limits import check_connections, check_consumers, check_producers
from .message_id import MessageId
from .pulsar_protocol import PulsarSession
from .pulsar_protocol.metadata import pulsar_entry_for_zmq
from .pulsar_protocol.schemas import SchemaRegistry
from .security import Authenticator, check_bind, event_stream_check, events_host
from .service import BrokerService
from .settings import BrokerSettings
from .storage import open_storage
from .web import WebServer
from .zap import EVENTS_DOMAIN, ZapHandler

log = logging.getLogger("pulsarlab.broker.server")

SERVER_VERSION = "pulsarlab-0.1"
T = TypeVar("T")

_BURST = 2000  # commands read before a group commit
_FRAME_OVERHEAD = 1 << 20
_MAX_IGNORED = 100_000  # refused identities remembered (oldest forgotten first)
_NOBLOCK = int(zmq.NOBLOCK)
_HANDLERS = {name: f"_cmd_{name.lower()}" for name in wire.CLIENT_COMMANDS}
_SNDMORE = int(zmq.SNDMORE)
_ZERO_COPY_MIN = 1 << 16  # payload frames at least this big are sent without a copy


@dataclass(eq=False)
class Connection:
    """One client connection (a DEALER identity) and what it opened."""

    identity: bytes
    connected: bool = False
    role: str | None = None  # the token's subject when authentication is on
    fd: int | None = None  # its TCP socket (authentication on: dropped when that closes)
    last_seen_ms: int = 0
    producers: dict[int, int] = field(default_factory=dict)  # client id -> core id
    consumers: dict[int, int] = field(default_factory=dict)  # client id -> core id
    consumer_ids: dict[int, int] = field(default_factory=dict)  # core id -> client id
    producer_ids: dict[int, int] = field(default_factory=dict)  # core id -> client id


class Broker:
    """A pulsarlab broker serving the core over ZeroMQ.

    ``data_dir=None`` uses a temporary durable directory (removed on stop);
    ``storage="memory"`` keeps nothing on disk. Other keyword arguments are broker
    settings (see :class:`BrokerSettings`), e.g. ``max_message_size``.
    """

    def __init__(
        self,
        data_dir: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        storage: str = "durable",
        events_port: int = 0,
        keep_alive_interval_seconds: float = 30.0,
        **settings: Any,
    ) -> None:
        self.settings = BrokerSettings.from_kwargs(**settings)
        if storage not in ("durable", "memory"):
            raise InvalidArgument(f"storage must be 'durable' or 'memory', not {storage!r}")
        # Security (broker/security.py): loopback unless authenticated, optional CURVE.
        check_bind(host, self.settings)
        self.authenticator = Authenticator(self.settings)
        self._curve_secret: bytes | None = None
        self.curve_public_key: str | None = None  # what clients pass as curve_server_key
        if self.settings.curve_secret_key_file:
            try:
                public, self._curve_secret = load_secret_key(self.settings.curve_secret_key_file)
            except ValueError as exc:
                raise InvalidArgument(f"curve_secret_key_file: {exc}") from None
            self.curve_public_key = public.decode("ascii")
        self.events_host = events_host(host, self.settings)
        self._ignored: dict[bytes, int] = {}  # refused identities -> when (frames dropped)
        self._zap: ZapHandler | None = None
        self.dropped_from_refused = 0  # messages dropped from refused connections
        self.host = host
        self.port = port
        self.pulsar_port = self.settings.broker_service_port
        self.events_port = events_port
        self.storage_kind = storage
        self.keep_alive_ms = int(keep_alive_interval_seconds * 1000)
        self._temp_dir: str | None = None
        if storage == "durable" and data_dir is None:
            self._temp_dir = tempfile.mkdtemp(prefix="pulsarlab-")
            data_dir = self._temp_dir
        self.data_dir = data_dir if storage == "durable" else None
        self.service: BrokerService | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._calls: queue.SimpleQueue[tuple[Callable[[BrokerService], Any], Future]] = (
            queue.SimpleQueue()
        )
        self._ctx: zmq.Context | None = None
        self._wake_addr = f"inproc://pulsarlab-wake-{id(self)}"
        self._wake_lock = threading.Lock()
        self._wake_sender: zmq.Socket | None = None
        self._sockets: list[zmq.Socket] = []
        self._burst_ms = 0
        self.web: WebServer | None = None  # the admin REST API (broker/web), bound in _setup

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def service_url(self) -> str:
        return f"zmq://{self.host}:{self.port}"

    @property
    def pulsar_url(self) -> str:
        """Where the official ``pulsar-client`` connects: ``pulsar://host:port``."""
        return f"pulsar://{self.host}:{self.pulsar_port}"

    @property
    def events_url(self) -> str:
        return f"tcp://{self.events_host}:{self.events_port}"

    @property
    def web_url(self) -> str:
        """``http://host:port`` of the admin REST API (``/admin/v2/...``)."""
        if self.web is None:
            raise RuntimeError("the broker is not running")
        return self.web.url

    def create_token(self, role: str, expires_in_seconds: int | None = None) -> str:
        """A token for ``role`` signed with this broker's secret key (authentication on)."""
        return self.authenticator.create_token(role, expires_in_seconds)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, timeout: float = 30.0) -> Broker:
        """Bind the sockets, open (recover) the storage and serve on a daemon thread."""
        if self.running:
            return self
        self._stop.clear()
        self._ready.clear()
        self._thread = threading.Thread(target=self._serve, name="pulsarlab-broker", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("pulsarlab broker did not start in time")
        if self._startup_error is not None:
            raise self._startup_error
        assert self.web is not None
        self.web.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving, persist cursors and close the storage."""
        if self._thread is None:
            return
        if self.web is not None:
            self.web.stop()
        self._stop.set()
        self._wake()
        self._thread.join(timeout)
        self._thread = None
        if self._wake_sender is not None:
            self._wake_sender.close(linger=0)
            self._wake_sender = None
        if self._ctx is not None:
            self._ctx.term()
            self._ctx = None
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def call(self, fn: Callable[[BrokerService], T], timeout: float = 30.0) -> T:
        """Run ``fn(service)`` on the broker thread and return its result."""
        return self.submit(fn).result(timeout)

    def submit(self, fn: Callable[[BrokerService], T]) -> Future:
        """Queue ``fn(service)`` for the broker thread; its result arrives in the future."""
        if not self.running:
            raise RuntimeError("the broker is not running")
        future: Future = Future()
        self._calls.put((fn, future))
        self._wake()
        return future

    def _wake(self) -> None:
        ctx = self._ctx
        if ctx is None:
            return
        with self._wake_lock:
            if self._wake_sender is None:
                try:
                    self._wake_sender = ctx.socket(zmq.PAIR)
                    self._wake_sender.linger = 0
                    self._wake_sender.connect(self._wake_addr)
                except zmq.ZMQError:
                    return
            with contextlib.suppress(zmq.ZMQError):
                self._wake_sender.send(b"", zmq.NOBLOCK)

    # -- the loop -------------------------------------------------------------------------

    def _serve(self) -> None:
        try:
            self._setup()
        except BaseException as exc:  # reported to start()
            self._startup_error = exc
            for sock in self._sockets:
                sock.close(linger=0)
            if self.web is not None:
                self.web.stop()
            if self._zap is not None:
                self._zap.close()
                self._zap = None
            self._ready.set()
            return
        self._ready.set()
        try:
            self._loop()
        except Exception:
            log.exception("pulsarlab broker loop crashed")
        finally:
            self._teardown()

    def _setup(self) -> None:
        self._ctx = zmq.Context()
        ctx = self._ctx
        self._sockets: list[zmq.Socket] = []
        if self.authenticator.enabled:  # event subscribers log in with a token (broker/zap.py)
            self._zap = ZapHandler(ctx, event_stream_check(self.authenticator, self.settings))
        self.router = ctx.socket(zmq.ROUTER)
        self._sockets.append(self.router)
        self.router.linger = 0
        if self._curve_secret is not None:
            apply_server(self.router, self._curve_secret)
        self.router.setsockopt(zmq.MAXMSGSIZE, self.settings.max_message_size + _FRAME_OVERHEAD)
        self._monitor: zmq.Socket | None = None
        self._header_frame: Any = None
        if self.authenticator.enabled:
            # A peer may pick its own routing id, even one of an authenticated connection.
            # Without handover ZeroMQ ignores a second peer claiming a live id; the monitor
            # tells when a connection's socket closes, and that connection (its role) is
            # dropped before any later peer with the same id is read (_check_sessions).
            self._monitor = self.router.get_monitor_socket(zmq.EVENT_DISCONNECTED)
            self._sockets.append(self._monitor)
        else:
            self.router.setsockopt(zmq.ROUTER_HANDOVER, 1)
        self.router.sndhwm = 0
        self.router.rcvhwm = 0
        if self.port:
            self.router.bind(f"tcp://{self.host}:{self.port}")
        else:
            self.port = self.router.bind_to_random_port(f"tcp://{self.host}")
        self.stream = ctx.socket(zmq.STREAM)  # pulsar:// connections
        self._sockets.append(self.stream)
        self.stream.linger = 0
        self.stream.sndhwm = 0
        self.stream.rcvhwm = 0
        if self.pulsar_port:
            self.stream.bind(f"tcp://{self.host}:{self.pulsar_port}")
        else:
            self.pulsar_port = self.stream.bind_to_random_port(f"tcp://{self.host}")
        self.pub = ctx.socket(zmq.XPUB)
        self._sockets.append(self.pub)
        self.pub.linger = 0
        if self._zap is not None:
            self.pub.plain_server = True
            self.pub.zap_domain = EVENTS_DOMAIN
        if self.events_port:
            self.pub.bind(f"tcp://{self.events_host}:{self.events_port}")
        else:
            self.events_port = self.pub.bind_to_random_port(f"tcp://{self.events_host}")
        self.wake = ctx.socket(zmq.PAIR)
        self._sockets.append(self.wake)
        self.wake.linger = 0
        self.wake.bind(self._wake_addr)
        self.clock = WallClock()
        self.service = BrokerService(
            open_storage(self.data_dir, self.storage_kind), self.clock, self.settings
        )
        self.connections: dict[bytes, Connection] = {}
        self.pulsar_sessions: dict[bytes, PulsarSession] = {}
        # Connections the broker closed (oldest forgotten first): ZeroMQ may still report
        # their peer leaving, which must not read as a new connection.
        self._closed_streams: dict[bytes, None] = {}
        self.schemas = SchemaRegistry()
        self._exclusive_producers: dict[str, int] = {}
        self.admin = AdminHandler(self.service)
        self._event_subscribers = 0
        self._publishing_events = False
        self._next_ping = self.clock.now_ms() + self.keep_alive_ms
        self.web = WebServer(self, self.host, self.settings.web_service_port)
        self.admin.tenants.cluster_data.update(
            serviceUrl=self.web.url, brokerServiceUrl=self.pulsar_url
        )
        log.info(
            "pulsarlab broker serving on %s and %s (events %s, admin REST API %s)",
            self.service_url, self.pulsar_url, self.events_url, self.web_url,
        )

    def _teardown(self) -> None:
        try:
            if self.service is not None:
                self.service.close()
        except Exception:
            log.exception("error while closing the broker core")
        if self._monitor is not None:
            self.router.disable_monitor()
            self._monitor.close(linger=0)
        for sock in (self.router, self.stream, self.pub, self.wake):
            sock.close(linger=0)
        if self._zap is not None:
            self._zap.close()
            self._zap = None

    def _loop(self) -> None:
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        poller.register(self.stream, zmq.POLLIN)
        poller.register(self.pub, zmq.POLLIN)
        poller.register(self.wake, zmq.POLLIN)
        service = self.service
        assert service is not None
        while not self._stop.is_set():
            now = self.clock.now_ms()
            deadline = min(service.next_deadline() or now + 100, self._next_ping, now + 100)
            ready = dict(poller.poll(max(0, deadline - now)))
            if self.wake in ready:
                while self._poll_nowait(self.wake):
                    pass
            if self.pub in ready:
                self._read_event_subscriptions()
            if self.router in ready:
                self._drain_router()
            if self.stream in ready:
                self._drain_stream()
            self._run_calls()
            service.commit()
            service.tick()
            self._heartbeat()
            self._flush_actions()

    def _drain_router(self) -> None:
        """Read and handle queued commands (up to a burst) until the socket is empty.

        Frames are read one by one rather than with ``recv_multipart``, which asks libzmq
        for the RCVMORE option after every frame; a ROUTER always delivers the identity
        frame followed by at least one more, and ``Frame.more`` tells the rest.
        """
        recv = self.router.recv
        handle = self._handle
        self._burst_ms = self.clock.now_ms()  # "last seen" for every command of the burst
        for _ in range(_BURST):
            try:
                identity = recv(_NOBLOCK)
            except zmq.Again:
                return
            frames = [identity]
            more = True
            while more:
                frame = recv(copy=False)
                frames.append(frame)
                more = frame.more
            handle(frames)

    def _drain_stream(self) -> None:
        """Read pulsar:// traffic: bytes for a session, or a connect/disconnect notice
        (an empty message, as ZeroMQ's STREAM socket reports them)."""
        recv = self.stream.recv
        sessions = self.pulsar_sessions
        for _ in range(_BURST):
            try:
                identity = recv(_NOBLOCK)
            except zmq.Again:
                return
            data = recv()
            session = sessions.get(identity)
            if not data:
                if identity in self._closed_streams:  # its notice after we closed it
                    del self._closed_streams[identity]
                    continue
                if session is not None:
                    del sessions[identity]
                    if not session.closed:
                        session.connection_lost()
                    continue
                try:
                    check_connections(self.settings, len(self.connections) + len(sessions))
                except PulsarLabError as exc:
                    log.info("refused a pulsar:// connection: %s", exc)
                    self._stream_send(identity, b"")
                    continue
                assert self.service is not None
                sessions[identity] = PulsarSession(
                    self.service,
                    settings=self.settings,
                    authenticator=self.authenticator,
                    authorizer=self.admin.authorizer,
                    schemas=self.schemas,
                    exclusive_producers=self._exclusive_producers,
                    service_url=self.pulsar_url,
                    now_ms=self.clock.now_ms,
                )
                continue
            if session is None:
                continue
            try:
                session.receive_data(data)
            except Exception:  # a bug must cost this connection, never the broker
                log.exception("internal error on a pulsar:// connection; closing it")
                session.connection_lost()
            self._flush_session(identity, session)

    def _flush_session(self, identity: bytes, session: PulsarSession) -> None:
        data = session.data_to_send()
        if data:
            self._stream_send(identity, data)
        if session.closed:
            self._stream_send(identity, b"")  # closes the TCP connection
            self.pulsar_sessions.pop(identity, None)
            if len(self._closed_streams) >= _MAX_IGNORED:
                del self._closed_streams[next(iter(self._closed_streams))]
            self._closed_streams[identity] = None

    def _stream_send(self, identity: bytes, data: bytes) -> None:
        # Never blocking: a peer that is going away makes a blocking send wait forever.
        try:
            self.stream.send(identity, _SNDMORE | _NOBLOCK)
            self.stream.send(data, _NOBLOCK, len(data) < _ZERO_COPY_MIN)
        except zmq.ZMQError as exc:
            log.info("could not send to a pulsar:// client (%s); it is gone", exc)

    @staticmethod
    def _poll_nowait(sock: zmq.Socket) -> bool:
        try:
            sock.recv(zmq.NOBLOCK)
            return True
        except zmq.Again:
            return False

    def _run_calls(self) -> None:
        while True:
            try:
                fn, future = self._calls.get_nowait()
            except queue.Empty:
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(self.service))
            except BaseException as exc:
                future.set_exception(exc)

    # -- events ---------------------------------------------------------------------------

    def _read_event_subscriptions(self) -> None:
        while True:
            try:
                msg = self.pub.recv(zmq.NOBLOCK)
            except zmq.Again:
                break
            if msg[:1] == b"\x01":
                self._event_subscribers += 1
            elif msg[:1] == b"\x00":
                self._event_subscribers = max(0, self._event_subscribers - 1)
        assert self.service is not None
        listening = self._publishing_events
        if self._event_subscribers and not listening:
            self.service.add_listener(self._publish_event)
            self._publishing_events = True
        elif not self._event_subscribers and listening:
            self.service.remove_listener(self._publish_event)
            self._publishing_events = False

    def _publish_event(self, event: BrokerEvent) -> None:
        body = msgpack.packb(event.to_dict(), use_bin_type=True, default=str)
        self.pub.send_multipart([str(event.type).encode(), body])

    # -- commands -------------------------------------------------------------------------

    def _send(self, conn: Connection, frames: list) -> None:
        # Frame by frame with int flags: send_multipart type-checks every part and
        # combines enum flags per frame, which costs more than the sends themselves.
        send = self.router.send
        try:
            send(conn.identity, _SNDMORE)
            last = len(frames) - 1
            if last:
                # Payloads: zero-copy only when big (pyzmq's small-frame copy=False path is
                # slower than a plain copy); positional, as keywords cost more here.
                send(frames[0], _SNDMORE)
                for frame in frames[1:last]:
                    send(frame, _SNDMORE, len(frame) < _ZERO_COPY_MIN)
                frame = frames[last]
                send(frame, 0, len(frame) < _ZERO_COPY_MIN)
            else:
                send(frames[0])
        except zmq.ZMQError as exc:
            log.warning("could not send to a client: %s", exc)

    def _reply_error(self, conn: Connection, request_id: int, code: str, message: str) -> None:
        self._send(conn, wire.encode("ERROR", request_id, code=code, message=message))

    def _handle(self, frames: list) -> None:
        if len(frames) < 2:
            log.warning("dropped a message with no header frame")
            return
        identity = frames[0]
        if self._monitor is not None:
            self._check_sessions()
            self._header_frame = frames[1]  # for CONNECT: which TCP socket it came over
        conn = self.connections.get(identity)
        if conn is None:
            if identity in self._ignored:
                self.dropped_from_refused += 1
                return  # refused once already: everything else it sends is dropped
            conn = Connection(identity)
            self.connections[identity] = conn
        conn.last_seen_ms = self._burst_ms
        try:
            command = wire.decode(frames[1:], wire.CLIENT_COMMANDS)
        except wire.ProtocolError as exc:
            if not conn.connected and self.authenticator.enabled:
                self._refuse(conn, exc.request_id, AuthenticationError(
                    "authentication required: the first message must be CONNECT with a token"
                ))
                return
            log.info("protocol error from a client: %s", exc)
            self._reply_error(conn, exc.request_id, "InvalidMessage", str(exc))
            return
        name = command.name
        if not conn.connected and name != "CONNECT" and self.authenticator.enabled:
            self._refuse(conn, command.request_id, AuthenticationError(
                f"authentication required: {name} before CONNECT"
            ))
            return
        if name == "PONG":
            return
        if name == "PING":
            self._send(conn, wire.encode("PONG", command.request_id))
            return
        if name != "CONNECT" and not conn.connected:
            self._reply_error(
                conn, command.request_id, "NotConnected",
                f"{name} before CONNECT: send CONNECT first",
            )
            return
        handler = getattr(self, _HANDLERS[name])
        try:
            handler(conn, command)
        except PulsarLabError as exc:
            self._reply_error(conn, command.request_id, exc.code, str(exc))
        except wire.ProtocolError as exc:
            self._reply_error(conn, command.request_id, "InvalidMessage", str(exc))
        except (ValueError, TypeError, KeyError) as exc:
            self._reply_error(
                conn, command.request_id, "InvalidMessage", f"{name}: {type(exc).__name__}: {exc}"
            )
        except Exception as exc:  # a bug must cost one request, never the broker
            log.exception("internal error while handling %s", name)
            self._reply_error(
                conn, command.request_id, "UnknownError",
                f"{name}: internal error ({type(exc).__name__}); the broker logged it",
            )

    def _success(self, conn: Connection, command: wire.Command, result: Any = None) -> None:
        if command.request_id or result is not None:
            self._send(conn, wire.encode("SUCCESS", command.request_id, result=result))

    def _refuse(self, conn: Connection, request_id: int, exc: PulsarLabError) -> None:
        """Send one ERROR, forget the connection and drop what it sends from now on."""
        self._reply_error(conn, request_id, exc.code, str(exc))
        assert self.service is not None
        self.service.close_connection(conn)
        self.connections.pop(conn.identity, None)
        if len(self._ignored) >= _MAX_IGNORED:
            del self._ignored[next(iter(self._ignored))]
        self._ignored[conn.identity] = self.clock.now_ms()
        log.info("refused a client: %s", exc)

    def _cmd_connect(self, conn: Connection, command: wire.Command) -> None:
        try:
            if not conn.connected:
                check_connections(self.settings, len(self.connections))
            if self.authenticator.enabled:
                conn.role = self.authenticator.authenticate(command.get("auth_token"))
                conn.fd = _source_fd(self._header_frame)
        except PulsarLabError as exc:
            self._refuse(conn, command.request_id, exc)
            return
        conn.connected = True
        self._send(
            conn,
            wire.encode(
                "CONNECTED",
                command.request_id,
                server_version=SERVER_VERSION,
                protocol_version=wire.PROTOCOL_VERSION,
                max_message_size=self.settings.max_message_size,
            ),
        )

    def _cmd_producer(self, conn: Connection, command: wire.Command) -> None:
        client_id = command["producer_id"]
        if client_id in conn.producers:
            raise InvalidArgument(f"producer id {client_id} is already in use on this connection")
        self.admin.authorizer.check_topic(conn.role, command["topic"], "produce")
        check_producers(self.settings, len(conn.producers))
        assert self.service is not None
        producer = self.service.create_producer(
            command["topic"], command.get("producer_name"), conn
        )
        conn.producers[client_id] = producer.producer_id
        conn.producer_ids[producer.producer_id] = client_id
        self._send(
            conn,
            wire.encode(
                "PRODUCER_SUCCESS",
                command.request_id,
                producer_id=client_id,
                producer_name=producer.producer_name,
                last_sequence_id=producer.last_sequence_id,
            ),
        )

    def _cmd_send(self, conn: Connection, command: wire.Command) -> None:
        fields = command.fields  # the hot path reads the checked map directly
        client_id = fields["producer_id"]
        core_id = conn.producers.get(client_id)
        sequence_id = fields["sequence_id"]
        if core_id is None:
            self._send(
                conn,
                wire.encode(
                    "SEND_ERROR", command.request_id, producer_id=client_id,
                    sequence_id=sequence_id, code="ProducerNotFound",
                    message=f"producer {client_id} is not open on this connection",
                ),
            )
            return
        meta = fields["metadata"]
        if meta:
            try:
                metadata = MessageMetadata.from_dict(meta)
            except (TypeError, ValueError) as exc:
                raise InvalidArgument(f"SEND: {exc}") from None
        else:
            metadata = MessageMetadata()  # nothing to check
        metadata.sequence_id = sequence_id
        payload = command.payloads[0]
        payload = payload.bytes if type(payload) is zmq.Frame else bytes(payload)
        assert self.service is not None
        try:
            self.service.send(core_id, metadata, payload)
        except PulsarLabError as exc:
            self._send(
                conn,
                wire.encode(
                    "SEND_ERROR", command.request_id, producer_id=client_id,
                    sequence_id=sequence_id, code=exc.code, message=str(exc),
                ),
            )

    def _cmd_close_producer(self, conn: Connection, command: wire.Command) -> None:
        client_id = command["producer_id"]
        core_id = conn.producers.pop(client_id, None)
        if core_id is not None:
            conn.producer_ids.pop(core_id, None)
            assert self.service is not None
            self.service.close_producer(core_id)
        self._success(conn, command)

    def _cmd_subscribe(self, conn: Connection, command: wire.Command) -> None:
        client_id = command["consumer_id"]
        if client_id in conn.consumers:
            raise InvalidArgument(f"consumer id {client_id} is already in use on this connection")
        self.admin.authorizer.check_topic(conn.role, command["topic"], "consume")
        check_consumers(self.settings, len(conn.consumers))
        try:
            sub_type = SubType(command["sub_type"])
        except ValueError:
            raise InvalidArgument(f"unknown subscription type {command['sub_type']!r}") from None
        key_shared_meta = None
        if sub_type is SubType.Key_Shared:
            mode = command.get("key_shared_mode") or "AUTO_SPLIT"
            try:
                ks_mode = KeySharedMode(mode)
            except ValueError:
                raise InvalidArgument(f"unknown key_shared_mode {mode!r}") from None
            key_shared_meta = KeySharedMeta(
                ks_mode,
                tuple(_ranges(command.get("sticky_ranges") or [])),
                bool(command.get("allow_out_of_order_delivery", False)),
            )
        start = command.get("start_message_id")
        start_id = None
        if start is not None:
            if len(start) != 4 or not all(isinstance(v, int) for v in start):
                raise InvalidArgument("start_message_id must be [ledger, entry, partition, batch]")
            start_id = MessageId(start[2], start[0], start[1], start[3])
        initial = command.get("initial_position", "latest")
        if initial not in ("latest", "earliest"):
            raise InvalidArgument(f"initial_position must be latest or earliest, not {initial!r}")
        assert self.service is not None
        consumer = self.service.subscribe(
            command["topic"],
            command["subscription"],
            command.get("consumer_name"),
            sub_type,
            initial_position_earliest=initial == "earliest",
            durable=bool(command.get("durable", True)),
            priority_level=command.get("priority_level", 0),
            key_shared_meta=key_shared_meta,
            key_hash_ranges=_ranges(command.get("key_hash_ranges") or []) or None,
            start_message_id=start_id,
            start_message_id_inclusive=bool(command.get("start_message_id_inclusive", False)),
            batch_index_ack_enabled=bool(command.get("batch_index_ack_enabled", False)),
            is_reader=bool(command.get("is_reader", False)),
            conn=conn,
        )
        conn.consumers[client_id] = consumer.consumer_id
        conn.consumer_ids[consumer.consumer_id] = client_id
        self._send(conn, wire.encode("SUCCESS", command.request_id, result=consumer.consumer_name))

    def _core_consumer(self, conn: Connection, command: wire.Command) -> int:
        client_id = command["consumer_id"]
        core_id = conn.consumers.get(client_id)
        if core_id is None:
            raise ConsumerNotFound(f"consumer {client_id} is not open on this connection")
        return core_id

    def _cmd_flow(self, conn: Connection, command: wire.Command) -> None:
        assert self.service is not None
        self.service.flow(self._core_consumer(conn, command), command["permits"])
        self._success(conn, command)

    def _cmd_ack(self, conn: Connection, command: wire.Command) -> None:
        core_id = self._core_consumer(conn, command)
        positions = [wire.position_list(p) for p in command["positions"]]
        ack_sets = None
        if command.get("ack_sets"):
            ack_sets = {}
            for item in command["ack_sets"]:
                if (
                    not isinstance(item, list) or len(item) != 4
                    or not all(isinstance(v, int) for v in item)
                ):
                    raise InvalidArgument("ack_sets items are [ledger, entry, bits, batch_size]")
                ack_sets[(item[0], item[1])] = (item[2], item[3])
        assert self.service is not None
        self.service.ack(
            core_id, positions, cumulative=bool(command.get("cumulative", False)), ack_sets=ack_sets
        )
        self._success(conn, command)

    def _cmd_redeliver_unacknowledged(self, conn: Connection, command: wire.Command) -> None:
        core_id = self._core_consumer(conn, command)
        positions = command.get("positions")
        assert self.service is not None
        requested_at = command.get("requested_at")
        if requested_at is not None and not all(
            isinstance(t, int) and not isinstance(t, bool) for t in requested_at
        ):
            raise InvalidArgument("requested_at must be a list of ms timestamps")
        self.service.redeliver_unacknowledged(
            core_id,
            None if positions is None else [wire.position_list(p) for p in positions],
            reason=command.get("reason") or "consumer_request",
            requested_at=requested_at,
        )
        self._success(conn, command)

    def _cmd_close_consumer(self, conn: Connection, command: wire.Command) -> None:
        client_id = command["consumer_id"]
        core_id = conn.consumers.pop(client_id, None)
        if core_id is not None:
            conn.consumer_ids.pop(core_id, None)
            assert self.service is not None
            self.service.close_consumer(core_id)
        self._success(conn, command)

    def _cmd_unsubscribe(self, conn: Connection, command: wire.Command) -> None:
        core_id = self._core_consumer(conn, command)
        assert self.service is not None
        self.service.unsubscribe(core_id)
        client_id = conn.consumer_ids.pop(core_id, None)
        if client_id is not None:
            conn.consumers.pop(client_id, None)
        self._success(conn, command)

    def _cmd_seek(self, conn: Connection, command: wire.Command) -> None:
        core_id = self._core_consumer(conn, command)
        assert self.service is not None
        # Messages dispatched before the seek must reach the client before its SUCCESS
        # (the client drops its queue on SUCCESS); those after it, after.
        self.service.commit()
        self._flush_actions()
        mid = command.get("message_id")
        if mid is not None:
            if len(mid) != 4 or not all(isinstance(v, int) for v in mid):
                raise InvalidArgument("message_id must be [ledger, entry, partition, batch]")
            self.service.seek(core_id, message_id=MessageId(mid[2], mid[0], mid[1], mid[3]))
        elif command.get("publish_time") is not None:
            self.service.seek(core_id, publish_time=command["publish_time"])
        else:
            raise InvalidArgument("SEEK needs message_id or publish_time")
        self._success(conn, command)

    def _cmd_get_last_message_id(self, conn: Connection, command: wire.Command) -> None:
        core_id = self._core_consumer(conn, command)
        assert self.service is not None
        _consumer, sub = self.service.consumers[core_id]
        ledger_id, entry_id = sub.topic.ledger.last_confirmed
        result = [ledger_id, entry_id, sub.topic.partition_index, -1]
        md = sub.cursor.mark_delete_position
        self._send(
            conn,
            wire.encode(
                "SUCCESS", command.request_id, result=result, mark_delete_position=list(md)
            ),
        )

    def _cmd_partitioned_metadata(self, conn: Connection, command: wire.Command) -> None:
        self.admin.authorizer.check_topic(conn.role, command["topic"], "lookup")
        assert self.service is not None
        n = self.service.get_partitioned_topic_metadata(command["topic"])
        self._send(conn, wire.encode("SUCCESS", command.request_id, result=n))

    def _cmd_get_topics(self, conn: Connection, command: wire.Command) -> None:
        self.admin.authorizer.check(conn.role, command["namespace"], "consume")
        assert self.service is not None
        names = self.service.list_topics(
            command["namespace"], bool(command.get("include_system", False))
        )
        self._send(conn, wire.encode("SUCCESS", command.request_id, result=names))

    def _cmd_admin(self, conn: Connection, command: wire.Command) -> None:
        self.admin.authorizer.check_admin(conn.role, command["op"], command.get("args") or {})
        result = self.admin.call(command["op"], command.get("args") or {})
        self._send(conn, wire.encode("SUCCESS", command.request_id, result=result))

    # -- actions and heart-beats ----------------------------------------------------------

    def _flush_actions(self) -> None:
        assert self.service is not None
        connections = self.connections
        send = self._send
        # Consecutive receipts for one producer travel as one SEND_RECEIPTS message.
        receipts: list[tuple[int, int, int, int]] = []
        receipts_to: tuple[Connection, int] | None = None
        pulsar_sessions: set[PulsarSession] = set()
        for action in self.service.take_actions():
            conn = action.conn
            if type(conn) is PulsarSession:
                conn.handle_action(action)
                pulsar_sessions.add(conn)
                continue
            if not isinstance(conn, Connection) or conn.identity not in connections:
                continue
            kind = type(action)
            if kind is SendReceipt:
                client_id = conn.producer_ids.get(action.producer_id)
                if client_id is None:
                    continue
                if receipts_to is None or receipts_to[0] is not conn or receipts_to[1] != client_id:
                    if receipts:
                        self._send_receipts(receipts_to, receipts)
                        receipts = []
                    receipts_to = (conn, client_id)
                receipts.append(
                    (action.sequence_id, action.ledger_id, action.entry_id, action.partition)
                )
                continue
            if receipts:  # keep every push in the order the core queued it
                self._send_receipts(receipts_to, receipts)
                receipts = []
                receipts_to = None
            # MESSAGE builds its header map directly (the same frame as wire.encode, without
            # its keyword-argument detour).
            if kind is Deliver:
                client_id = conn.consumer_ids.get(action.consumer_id)
                if client_id is None:
                    continue
                entries = [
                    [e.position[0], e.position[1], e.partition, e.redelivery_count, e.ack_set]
                    for e in action.entries
                ]
                header = wire.pack_header({
                    "v": wire.PROTOCOL_VERSION, "cmd": "MESSAGE", "rid": 0,
                    "consumer_id": client_id, "entries": entries,
                })
                send(conn, [header, *[
                    _zmq_layout(e.data) if e.data[1] & FLAG_PULSAR_BATCH else e.data
                    for e in action.entries
                ]])
            elif isinstance(action, SendError):
                client_id = conn.producer_ids.get(action.producer_id)
                if client_id is not None:
                    self._send(
                        conn,
                        wire.encode(
                            "SEND_ERROR", 0, producer_id=client_id,
                            sequence_id=action.sequence_id, code=action.code,
                            message=action.message,
                        ),
                    )
            elif isinstance(action, ActiveConsumerChange):
                client_id = conn.consumer_ids.get(action.consumer_id)
                if client_id is not None:
                    self._send(
                        conn,
                        wire.encode(
                            "ACTIVE_CONSUMER_CHANGE", 0, consumer_id=client_id,
                            is_active=action.is_active,
                        ),
                    )
            elif isinstance(action, ConsumerClosed):
                client_id = conn.consumer_ids.pop(action.consumer_id, None)
                if client_id is not None:
                    conn.consumers.pop(client_id, None)
                    self._send(
                        conn,
                        wire.encode(
                            "CLOSE_CONSUMER", 0, consumer_id=client_id, reason=action.reason
                        ),
                    )

        if receipts:
            self._send_receipts(receipts_to, receipts)
        if pulsar_sessions:
            for identity, session in list(self.pulsar_sessions.items()):
                if session in pulsar_sessions:
                    self._flush_session(identity, session)

    def _send_receipts(
        self, to: tuple[Connection, int] | None, receipts: list[tuple[int, int, int, int]]
    ) -> None:
        assert to is not None
        conn, client_id = to
        if len(receipts) == 1:
            sequence_id, ledger_id, entry_id, partition = receipts[0]
            header = {
                "v": wire.PROTOCOL_VERSION, "cmd": "SEND_RECEIPT", "rid": 0,
                "producer_id": client_id, "sequence_id": sequence_id,
                "message_id": [ledger_id, entry_id, partition, -1],
            }
        else:
            header = {
                "v": wire.PROTOCOL_VERSION, "cmd": "SEND_RECEIPTS", "rid": 0,
                "producer_id": client_id, "receipts": receipts,
            }
        self._send(conn, [wire.pack_header(header)])

    def _check_sessions(self) -> None:
        """Drop authenticated connections whose TCP socket closed (monitor events)."""
        assert self._monitor is not None
        if not self._monitor.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            return
        assert self.service is not None
        while True:
            try:
                event = zmq.utils.monitor.recv_monitor_message(self._monitor, zmq.NOBLOCK)
            except zmq.Again:
                return
            if event["event"] != zmq.EVENT_DISCONNECTED:
                continue
            fd = event["value"]
            for conn in [c for c in self.connections.values() if c.fd == fd]:
                self.service.close_connection(conn)
                del self.connections[conn.identity]

    def _heartbeat(self) -> None:
        if self._monitor is not None:
            self._check_sessions()
        now = self.clock.now_ms()
        if now < self._next_ping:
            return
        self._next_ping = now + self.keep_alive_ms
        if self._ignored:  # a refused peer is ignored for two keep-alive periods
            horizon = now - 2 * self.keep_alive_ms
            self._ignored = {i: t for i, t in self._ignored.items() if t > horizon}
        assert self.service is not None
        for identity, conn in list(self.connections.items()):
            if now - conn.last_seen_ms > 2 * self.keep_alive_ms:
                log.info("closing a client that stopped answering heart-beats")
                self.service.close_connection(conn)
                del self.connections[identity]
            else:
                self._send(conn, wire.encode("PING"))
        for identity, session in list(self.pulsar_sessions.items()):
            session.ping(self.keep_alive_ms)
            self._flush_session(identity, session)


def _zmq_layout(data: bytes) -> bytes:
    """An entry holding a batch in Pulsar's layout, re-laid for a ZeroMQ consumer."""
    metadata, payload = pulsar_entry_for_zmq(*decode_entry(data))
    return encode_entry(metadata, payload)


def _source_fd(frame: Any) -> int | None:
    """The TCP socket a frame came over (``zmq.SRCFD``), if ZeroMQ tells."""
    try:
        return frame.get(zmq.SRCFD) if isinstance(frame, zmq.Frame) else None
    except zmq.ZMQError:
        return None


def _ranges(value: list) -> list[tuple[int, int]]:
    out = []
    for item in value:
        if (
            not isinstance(item, list | tuple) or len(item) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in item)
        ):
            raise InvalidArgument(f"hash ranges are [start, end] pairs of ints, not {item!r}")
        out.append((item[0], item[1]))
    return out
