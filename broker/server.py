"""The ZeroMQ shell around the broker core: sockets, timers, heart-beats, one thread.

``Broker`` binds a ROUTER socket for ZeroMQ clients (Pulsar frames, one per message:
:mod:`.transports.zmq`), plain TCP listeners for pulsar:// and pulsar+ssl:// connections
(:mod:`.transports.tcp`, their sockets in the loop's one epoll), every Pulsar
connection a sans-I/O
:class:`~.pulsar_protocol.PulsarSession`, and an XPUB socket for the event stream, then runs
one loop on its own thread: read a burst of frames, hand them to :class:`BrokerService`,
group-commit (one fsync for the burst), run due timers, and hand each of the core's actions
to the connection it is addressed to (:func:`.transports.hand_out`). The same class serves inside a
Jupyter kernel (``start()`` in-process) and as its own process (``pulsarlab broker`` calls
the very same ``start()``/``stop()``).

Other threads never touch the core directly: :meth:`Broker.call` runs a function on the
broker thread and returns its result.
"""

from __future__ import annotations

import logging
import queue
import shutil
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import msgpack
import zmq
import zmq.utils.monitor

from . import local_brokers
from .admin_handler import AdminHandler
from .clock import HousekeepingGate, LoopClock
from .curve import apply_server, load_secret_key
from .errors import InvalidArgument
from .events import BrokerEvent
from .hosts import connect_host, is_ipv6_literal, url_host
from .listeners import AdvertisedListeners
from .poller import LoopPoller
from .pulsar_protocol import PulsarSession
from .schemas import SchemaRegistry
from .security import Authenticator, check_bind, event_stream_check, events_host
from .service import BrokerService
from .settings import BrokerSettings
from .storage import open_storage
from .tls import server_context, tls_enabled
from .transports import SessionTransport, hand_out
from .transports.tcp import TcpTransport, bind_listener
from .transports.zmq import ZmqTransport
from .waker import Waker
from .web import WebServer
from .web.pump import PumpedLoop
from .zap import EVENTS_DOMAIN, ZapHandler

log = logging.getLogger("pulsarlab.broker.server")

T = TypeVar("T")

_BURST = 2000  # frames read before a group commit
_FRAME_OVERHEAD = 1 << 20
_NOBLOCK = int(zmq.NOBLOCK)
_SNDMORE = int(zmq.SNDMORE)
_ZERO_COPY_MIN = 1 << 16  # payload frames at least this big are sent without a copy


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
        # TLS (broker/tls.py): a bad certificate or key file fails here, before any socket.
        self._tls_context = server_context(self.settings) if tls_enabled(self.settings) else None
        AdvertisedListeners.parse(self.settings.advertised_listeners,
                                  self.settings.internal_listener_name)
        self._curve_secret: bytes | None = None
        self.curve_public_key: str | None = None  # what clients pass as curve_server_key
        if self.settings.curve_secret_key_file:
            try:
                public, self._curve_secret = load_secret_key(self.settings.curve_secret_key_file)
            except ValueError as exc:
                raise InvalidArgument(f"curve_secret_key_file: {exc}") from None
            self.curve_public_key = public.decode("ascii")
        self.events_host = events_host(host, self.settings)
        self._zap: ZapHandler | None = None
        self.host = host
        self.port = port
        self.pulsar_port = self.settings.broker_service_port
        self.pulsar_port_tls = self.settings.broker_service_port_tls
        self._listeners: list[TcpTransport] = []  # pulsar://, pulsar+ssl://
        self._poller: LoopPoller | None = None  # the loop's wait, made by _setup
        self.events_port = events_port
        self.storage_kind = storage
        self.keep_alive_ms = int(keep_alive_interval_seconds * 1000)
        self._temp_dir: str | None = None
        if storage == "durable" and data_dir is None:
            self._temp_dir = tempfile.mkdtemp(prefix="pulsarlab-")
            data_dir = self._temp_dir
        self.data_dir = data_dir if storage == "durable" else None
        self.service: BrokerService | None = None
        self.zmq: ZmqTransport | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        # Why the loop died, if it did: calls and the command line report it.
        self.loop_error: BaseException | None = None
        self._calls: queue.SimpleQueue[tuple[Callable[[BrokerService], Any], Future]] = (
            queue.SimpleQueue()
        )
        self._answers: list[tuple[Future, Any, BaseException | None]] = []
        self._ctx: zmq.Context | None = None
        self._waker: Waker | None = None  # another thread's way to wake the loop
        self._sockets: list[zmq.Socket] = []
        self.web: WebServer | None = None  # the admin REST API (broker/web), bound in _setup
        self._web_loop: PumpedLoop | None = None  # its loop, when the broker thread drives it
        self._loop_thread: int | None = None

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def service_url(self) -> str:
        return f"zmq://{connect_host(self.host)}:{self.port}"

    @property
    def pulsar_url(self) -> str:
        """Where the official ``pulsar-client`` connects: ``pulsar://host:port``."""
        return f"pulsar://{connect_host(self.host)}:{self.pulsar_port}"

    @property
    def pulsar_ssl_url(self) -> str | None:
        """``pulsar+ssl://host:port`` when brokerServicePortTls is set, else ``None``."""
        if self.pulsar_port_tls < 0:
            return None
        return f"pulsar+ssl://{connect_host(self.host)}:{self.pulsar_port_tls}"

    @property
    def web_url_tls(self) -> str | None:
        """``https://host:port`` of the admin REST API when webServicePortTls is set."""
        if self.web is None:
            raise RuntimeError("the broker is not running")
        return self.web.url_tls

    @property
    def pulsar_sessions(self) -> dict[bytes, PulsarSession]:
        """The pulsar:// connections being served (broker thread only)."""
        return self._listeners[0].sessions

    @property
    def zmq_sessions(self) -> dict[bytes, PulsarSession]:
        """The ZeroMQ connections being served, by routing id (broker thread only)."""
        return self.zmq.sessions

    @property
    def dropped_from_refused(self) -> int:
        """Messages dropped from ZeroMQ connections the broker closed or refused earlier."""
        if self.zmq is None:
            return 0
        return self.zmq.dropped_from_refused

    @property
    def events_url(self) -> str:
        return f"tcp://{connect_host(self.events_host)}:{self.events_port}"

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
        if self._web_loop is None:  # no selector the broker's poller can watch
            try:
                self.web.start()
            except BaseException:
                self.stop()
                raise
        local_brokers.register(self.service_url, self.web.url)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving, persist cursors and close the storage."""
        if self._thread is None:
            return
        local_brokers.unregister(self.service_url)
        if self.web is not None:
            self.web.stop()
        self._stop.set()
        self._wake()
        self._thread.join(timeout)
        self._thread = None
        if self._waker is not None:
            self._waker.close()
            self._waker = None
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
        if not self.running or self.loop_error is not None:
            raise self._not_running()
        future: Future = Future()
        self._calls.put((fn, future))
        if threading.get_ident() != self._loop_thread:  # the loop runs calls after the REST pump
            self._wake()
        if not self.running or self.loop_error is not None:
            self._fail_calls()  # it died between the check and the put: nobody runs the call
        return future

    def _not_running(self) -> RuntimeError:
        exc = self.loop_error
        if exc is None:
            return RuntimeError("the broker is not running")
        error = RuntimeError(
            f"the pulsarlab broker loop crashed ({type(exc).__name__}: {exc}); it serves "
            "nobody until it is restarted (its log has the traceback)"
        )
        error.__cause__ = exc
        return error

    def _fail_calls(self) -> None:
        """Fail every call still queued or unanswered: the loop that would have run (or
        answered) them is gone."""
        answers, self._answers = self._answers, []
        for future, _result, _exc in answers:
            future.set_exception(self._not_running())
        while True:
            try:
                _fn, future = self._calls.get_nowait()
            except queue.Empty:
                return
            if future.set_running_or_notify_cancel():
                future.set_exception(self._not_running())

    def _wake(self) -> None:
        waker = self._waker
        if waker is not None:
            waker.wake()

    # -- the loop -------------------------------------------------------------------------

    def _serve(self) -> None:
        try:
            self._setup()
        except BaseException as exc:  # reported to start()
            self._startup_error = exc
            for sock in self._sockets:
                sock.close(linger=0)
            for listener in self._listeners:
                listener.close()
            self._listeners = []
            self._close_poller()
            if self.web is not None:
                self.web.detach()
                self.web.stop()
            if self._zap is not None:
                self._zap.close()
                self._zap = None
            self._ready.set()
            return
        self._ready.set()
        try:
            self._loop()
        except BaseException as exc:
            self.loop_error = exc
            log.critical("the pulsarlab broker loop crashed; the broker stops serving",
                         exc_info=True)
        finally:
            self._teardown()
            self._fail_calls()

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
        # The monitor tells when a TCP connection of the ROUTER closes: the Pulsar sessions
        # tied to it end at once (their producers and consumers with them), as on pulsar://.
        self._monitor: zmq.Socket = self.router.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        self._sockets.append(self._monitor)
        if not self.authenticator.enabled:
            self.router.setsockopt(zmq.ROUTER_HANDOVER, 1)
        # With authentication on a peer may pick its own routing id, even one of an
        # authenticated connection. Without handover ZeroMQ ignores a second peer claiming
        # a live id, and a connection (its role) is dropped before any later peer with the
        # same id is read (_check_sessions before every message).
        self.router.sndhwm = 0
        self.router.rcvhwm = 0
        # pyzmq's own send, without the Python layer over it (routing ids and groups, which
        # a ROUTER never uses): a third of the cost of sending a small frame.
        self._router_send = super(zmq.Socket, self.router).send
        self.port = _bind(self.router, self.host, self.port)
        self.clock = LoopClock()
        self._poller = LoopPoller()  # the loop's one wait; the listeners register in it
        self._listeners = [self._listen(self.pulsar_port)]
        self.pulsar_port = self._listeners[0].port
        if self.pulsar_port_tls >= 0 and self._tls_context is not None:
            self._listeners.append(self._listen(self.pulsar_port_tls, self._tls_context))
            self.pulsar_port_tls = self._listeners[1].port
        self.pub = ctx.socket(zmq.XPUB)
        self._sockets.append(self.pub)
        self.pub.linger = 0
        if self._zap is not None:
            self.pub.plain_server = True
            self.pub.zap_domain = EVENTS_DOMAIN
        self.events_port = _bind(self.pub, self.events_host, self.events_port)
        self._waker = Waker()
        self.service = BrokerService(
            open_storage(self.data_dir, self.storage_kind), self.clock, self.settings
        )
        advertised = connect_host(self.host, self.settings.advertised_address)
        self.advertised = AdvertisedListeners.parse(
            self.settings.advertised_listeners, self.settings.internal_listener_name,
            url=f"pulsar://{advertised}:{self.pulsar_port}",
            url_tls=(f"pulsar+ssl://{advertised}:{self.pulsar_port_tls}"
                     if self.pulsar_ssl_url else None),
        )
        self.zmq = ZmqTransport(
            self._send_message, self._new_session, settings=self.settings,
            open_connections=self._open_connections, now_ms=self.clock.now_ms,
            tie_to_socket=True,
        )
        self.admin = AdminHandler(self.service)  # what the admin REST API calls
        self.schemas: SchemaRegistry = self.service.schemas  # the core's, every face's
        self._event_subscribers = 0
        self._publishing_events = False
        self._next_ping = self.clock.now_ms() + self.keep_alive_ms
        self._auth_check_ms = self.settings.authentication_refresh_check_seconds * 1000
        self._next_auth_check = self.clock.now_ms() + self._auth_check_ms
        self.web = WebServer(self, self.host, self.settings.web_service_port,
                             tls_port=self.settings.web_service_port_tls,
                             ssl_context=self._tls_context)
        self.admin.tenants.cluster_data.update(
            serviceUrl=self.web.url, brokerServiceUrl=self.pulsar_url
        )
        # The admin REST API is served on this thread: no hand-off between threads per call.
        self._web_loop = self.web.attach() if PumpedLoop.supported() else None
        self._loop_thread = threading.get_ident()
        log.info(
            "pulsarlab broker serving on %s and %s (events %s, admin REST API %s)",
            self.service_url, ", ".join(filter(None, (self.pulsar_url, self.pulsar_ssl_url))),
            self.events_url, ", ".join(filter(None, (self.web_url, self.web_url_tls))),
        )

    def _listen(self, port: int, tls_context: Any = None) -> TcpTransport:
        """The pulsar:// (or, with ``tls_context``, pulsar+ssl://) listener on ``port``
        (0: a free one)."""
        listener = bind_listener(self.host, port)
        try:
            return TcpTransport(listener, self._new_session, settings=self.settings,
                                open_connections=self._open_connections,
                                now_ms=self.clock.now_ms, tls_context=tls_context,
                                readiness=self._poller.readiness)
        except BaseException:
            listener.close()
            raise

    def _transports(self) -> list[SessionTransport]:
        """Every transport carrying Pulsar sessions."""
        return [*self._listeners, self.zmq]

    def _open_connections(self) -> int:
        """Every client connection served, on every transport (``max_connections``)."""
        return len(self.zmq.sessions) + sum(len(t.sessions) for t in self._listeners)

    def _new_session(self, *, sender: Any, route: bytes, peer: str = "") -> PulsarSession:
        """A Pulsar connection's session, whichever transport carries it."""
        assert self.service is not None
        return PulsarSession(
            self.service,
            settings=self.settings,
            authenticator=self.authenticator,
            service_url=self.pulsar_url,
            now_ms=self.clock.now_ms,
            peer=peer,
            listeners=self.advertised,
            sender=sender,
            route=route,
        )

    def _teardown(self) -> None:
        if self._web_loop is not None and self.web is not None:
            try:
                self.web.detach()
            except Exception:
                log.exception("error while closing the admin REST API")
            self._web_loop = None
        try:
            if self.service is not None:
                self.service.close()
        except Exception:
            log.exception("error while closing the broker core")
        self.router.disable_monitor()
        self._monitor.close(linger=0)
        for sock in (self.router, self.pub):
            sock.close(linger=0)
        for listener in self._listeners:
            listener.close()
        self._close_poller()
        if self._zap is not None:
            self._zap.close()
            self._zap = None

    def _close_poller(self) -> None:
        if self._poller is not None:
            self._poller.close()
            self._poller = None

    def _loop(self) -> None:
        poller = self._poller
        assert poller is not None
        self._router_watch = poller.add_socket(self.router)
        router_fd = self._router_watch.fd
        self._pub_watch = poller.add_socket(self.pub)
        pub_fd = self._pub_watch.fd
        # The TCP listeners registered their sockets in the poller's readiness themselves.
        listeners = self._listeners
        assert self._waker is not None
        waker = self._waker
        wake_fd = waker.fileno()
        poller.add_descriptor(wake_fd)
        web = self._web_loop
        web_fd = -1
        if web is not None:
            web_fd = web.fileno()
            poller.add_descriptor(web_fd)
        service = self.service
        assert service is not None
        read_clock = self.clock.read
        housekeeping = HousekeepingGate()
        while not self._stop.is_set():
            now = read_clock()
            deadline = min(service.next_deadline() or now + 100, self._next_ping, now + 100,
                           self._next_auth_check)
            wait = housekeeping.wait_ms(max(0, deadline - now))
            if web is not None:
                wait = web.wait_ms(wait)
            ready = poller.poll(wait)
            read_clock()  # the time of everything this turn handles
            if wake_fd in ready:
                waker.clear()
            if pub_fd in ready:
                self._read_event_subscriptions()
            if router_fd in ready:
                self._drain_router()
            if ready:
                items = ready.items()
                for listener in listeners:
                    listener.drain(_BURST, items)
            # The REST API's I/O, or a timer / callback of it due (or the poll timed out).
            if web is not None and (web_fd in ready or not wait or not ready):
                web.pump()
            self._run_calls()
            now = read_clock()  # timers see the time after the burst
            service.commit()
            if housekeeping.due(now):  # timers, housekeeping, pings: once per millisecond
                service.tick()
                self._heartbeat()
            self._flush_actions()
            self._answer_calls()

    def _drain_router(self) -> None:
        """Read and hand over queued messages (up to a burst) until the socket is empty.

        Frames are read one by one rather than with ``recv_multipart``, which asks libzmq
        for the RCVMORE option after every frame; a ROUTER always delivers the identity
        frame followed by at least one more, and ``Frame.more`` tells the rest.
        """
        recv = self.router.recv
        transport = self.zmq
        sessions = transport.sessions
        monitor = self._monitor if self.authenticator.enabled else None
        for _ in range(_BURST):
            try:
                identity = recv(_NOBLOCK)
            except zmq.Again:
                return
            message = recv(copy=False)
            if monitor is not None or identity not in sessions:
                # Before a new session records its socket: a closed socket's number may be
                # this one's, and its notice must not end the new session.
                self._check_sessions()
            parts = 1
            if message.more:  # one message is one frame: the transport refuses more
                parts += 1
                while recv(copy=False).more:
                    parts += 1
            transport.receive(identity, message, parts)

    def _run_calls(self) -> None:
        """Run the queued calls; their answers wait for :meth:`_answer_calls`."""
        calls = self._calls
        if calls.empty():  # most turns: no exception raised and caught to find out
            return
        while True:
            try:
                fn, future = calls.get_nowait()
            except queue.Empty:
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                self._answers.append((future, fn(self.service), None))
            except BaseException as exc:
                self._answers.append((future, None, exc))

    def _answer_calls(self) -> None:
        """Answer the calls once what they caused is flushed to the connections: an admin
        REST answer (terminate, unload …) reaches its caller after the clients were told."""
        answers, self._answers = self._answers, []
        for future, result, exc in answers:
            if exc is None:
                future.set_result(result)
            else:
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
        self._pub_watch.dirty = True

    # -- commands -------------------------------------------------------------------------

    def _send_message(self, identity: bytes, message: bytes) -> None:
        """One message (a Pulsar frame, or the empty close notice) to a ZeroMQ peer."""
        send = self._router_send
        self._router_watch.dirty = True  # a send may take the mailbox's signal
        try:
            send(identity, _SNDMORE)
            send(message, 0, len(message) < _ZERO_COPY_MIN)
        except zmq.ZMQError as exc:
            log.warning("could not send to a client: %s", exc)

    # -- actions and heart-beats ----------------------------------------------------------

    def _flush_actions(self) -> None:
        """Hand the core's actions out, each to its own connection (its transport writes)."""
        assert self.service is not None
        hand_out(self.service.take_actions())

    def _check_sessions(self) -> None:
        """End the ZeroMQ sessions whose TCP socket closed (monitor events)."""
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
            self.zmq.socket_closed(event["value"])

    def _heartbeat(self) -> None:
        if self.zmq.fds:  # a ZeroMQ session tied to its socket (a new one reads them first)
            self._check_sessions()
        for listener in self._listeners:
            listener.housekeeping()
        now = self.clock.now_ms()
        if now >= self._next_auth_check:
            self._next_auth_check = now + self._auth_check_ms
            if self.authenticator.enabled:
                for transport in self._transports():
                    transport.check_authentication()
        if now < self._next_ping:
            return
        self._next_ping = now + self.keep_alive_ms
        self.zmq.forget_refused(now - 2 * self.keep_alive_ms)  # ignored for two periods
        for transport in self._transports():
            transport.ping(self.keep_alive_ms)


def _bind(sock: zmq.Socket, host: str, port: int) -> int:
    """Bind ``sock`` on ``host:port`` (0: a free port) and return the port; an IPv6 address
    (``::1``, ``[::]``) turns the socket's IPV6 option on first, which ZeroMQ requires."""
    if is_ipv6_literal(host):
        sock.ipv6 = True
    base = f"tcp://{url_host(host)}"
    if port:
        sock.bind(f"{base}:{port}")
        return port
    return sock.bind_to_random_port(base)
