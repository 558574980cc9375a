"""The client's Pulsar-protocol connection: ``pulsar://`` or ``pulsar+ssl://`` to any Pulsar broker.

Speaks Pulsar's binary protocol (``BaseCommand`` + ``MessageMetadata`` + payload, length
framed, CRC32C-checked) over TCP, with the same I/O-thread model and the same interface as
:class:`~.connection.Connection`: the producers and consumers ask for commands by their
pulsarlab names (``PRODUCER``, ``SUBSCRIBE``, ``SEND``, ``ACK``, ...) and get replies and pushes
as :class:`~.connection.Command` objects; this module maps both ways.

One logical connection holds one TCP socket per broker (:class:`_BrokerCnx`), as Pulsar's
``ConnectionPool`` does: a producer or consumer is first looked up (``LOOKUP``, following
redirects with the ``authoritative`` flag the answer gives) and then created on the socket
of the broker that owns its topic. A lost socket closes its producers and consumers with
reason ``"reconnect"``; they create themselves again (a new lookup, a new socket), retried
with back-off (100 ms doubling to 30 s) until they succeed or are closed. Authentication:
``CONNECT`` carries ``auth_method_name`` ``"token"`` and the token (a supplier is asked
again for each connection and each ``AUTH_CHALLENGE``), or another provider's method and
data (``tls``: the role is the client certificate's CN).

``pulsar+ssl://``: each socket is wrapped with the client's :mod:`.tls` context and does a
non-blocking handshake in the I/O loop before CONNECT goes out; a lookup's
``brokerServiceUrlTls`` is followed. Keep-alive, as Pulsar's clients: every
``keep_alive_interval_seconds`` a socket that has sent nothing since the last turn's PING is
closed (its producers and consumers reconnect), else it gets a PING.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import secrets
import socket
import ssl
from collections.abc import Callable
from typing import Any

import zmq

from ..curve import apply_client
from ..entry import MessageMetadata
from ..format.batch import encode_pulsar_batch, pulsar_batch_items
from ..format.metadata import pulsar_metadata
from ..pulsar_protocol import PulsarApi_pb2 as pb
from ..pulsar_protocol.framing import (
    MAX_FRAME_OVERHEAD,
    Frame,
    FrameDecoder,
    FrameError,
    decode_message,
    encode_command,
    encode_payload_command,
)
from .connection import (
    _RECV_BURST,
    CLIENT_VERSION,
    DEFAULT_MAX_MESSAGE_SIZE,
    Command,
    Connection,
    TimerHandle,
    now_ms,
    parse_service_url,
)
from .exceptions import (
    AlreadyClosed,
    AuthenticationError,
    AuthorizationError,
    ConnectError,
    ErrorGettingAuthenticationData,
    InvalidUrl,
    PulsarException,
)
from .pulsar_commands import (
    bits_to_words,
    error_for,
    id_data,
    is_tls_url,
    parse_pulsar_url,
    producer_command,
    request_id_of,
    settle,
    settle_reply,
    signed,
    subscribe_command,
    words_to_bits,
)
from .tls import TlsOptions, client_context, handshake_error

__all__ = ["PulsarConnection", "parse_pulsar_url"]

log = logging.getLogger("pulsarlab.client")

PROTOCOL_VERSION = 21  # Pulsar 3.x/4.x clients announce 21
MAX_LOOKUP_REDIRECTS = 20
BACKOFF_INITIAL_MS = 100
BACKOFF_MAX_MS = 30_000
DEFAULT_KEEP_ALIVE_SECONDS = 30  # Pulsar's clients' keepAliveIntervalSeconds
_TLS_RECORD = 16384  # the most one TLS record carries: what one non-blocking write sends
_RECV_BYTES = 1 << 20
# Errors after which creating a producer/consumer is tried again (Java's retriable ones).
_RETRIABLE = frozenset({"ServiceUnitNotReady", "BrokerMetadataError", "ConnectError",
                        "NotConnected", "Timeout", "TooManyLookupRequestException"})
# ... and, re-creating one the broker may still hold (the old connection not yet seen
# closed), these.
_RETRIABLE_AGAIN = _RETRIABLE | {"ProducerBusy", "ConsumerBusy"}
_MASK64 = (1 << 64) - 1
_T = pb.BaseCommand.Type


class _BrokerCnx:
    """One TCP socket to one broker: its framing, its outbox, its producers and consumers."""

    def __init__(self, url: str, max_frame: int) -> None:
        self.url = url
        self.sock: socket.socket | None = None
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


class PulsarConnection(Connection):
    """A Pulsar-protocol client connection over TCP (see the module docstring)."""

    encode_batch = staticmethod(encode_pulsar_batch)
    batch_items = staticmethod(pulsar_batch_items)

    def __init__(self, service_url: str, *, tls: TlsOptions | None = None,
                 keep_alive_interval_seconds: float = DEFAULT_KEEP_ALIVE_SECONDS,
                 **kwargs: Any) -> None:
        self.tls_options = tls or TlsOptions()
        self.keep_alive_ms = int(keep_alive_interval_seconds * 1000)
        super().__init__(service_url, **kwargs)

    def _parse_url(self, service_url: str) -> str:
        self.use_tls = is_tls_url(service_url)
        self._ssl_context: ssl.SSLContext | None = None
        if service_url.strip().startswith(("pulsar://", "pulsar+ssl://")):
            self.over_zmq = False
            host, port = parse_pulsar_url(service_url)
            scheme = "pulsar+ssl" if self.use_tls else "pulsar"
            self.service_url = endpoint = f"{scheme}://{host}:{port}"
            if self.use_tls:
                self._ssl_context = client_context(self.tls_options)
        else:  # zmq:// (tcp://, ipc://, inproc://): one DEALER to a pulsarlab broker
            self.over_zmq = True
            endpoint = parse_service_url(service_url)
            self.service_url = service_url.strip().rstrip("/")
        self._cnxs: dict[str, _BrokerCnx] = {}
        self._by_fd: dict[Any, _BrokerCnx] = {}  # a socket's fd, or a zmq socket
        self._requests: dict[int, tuple[_BrokerCnx, Callable[[Frame], None]]] = {}
        self._producer_cnx: dict[int, _BrokerCnx] = {}
        self._consumer_cnx: dict[int, _BrokerCnx] = {}
        self._created: set[tuple[str, int]] = set()  # producers/consumers once created
        # Closed by the application while being created again: when the broker's answer
        # comes, the broker-side one is closed instead of kept (no ghost consumer).
        self._abandoned: set[tuple[str, int]] = set()
        self._poller: zmq.Poller | None = None
        return endpoint

    # -- any thread -----------------------------------------------------------------------

    def request(self, name: str, payloads: tuple = (), **fields: Any) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        self.post(lambda: self._io_request(name, fields, future))
        return future

    def send(self, name: str, payloads: tuple = (), **fields: Any) -> None:
        self.post(lambda: self.send_now(name, 0, payloads, **fields))

    def ensure_connected(self) -> None:
        if self.connected:
            return
        with self._connect_lock:
            if self.connected:
                return
            if self._auth_failure is not None:
                raise self._auth_failure
            future: concurrent.futures.Future = concurrent.futures.Future()
            self.post(lambda: self._io_cnx(self.service_url, lambda err: settle(future, err)))
            try:
                future.result(self.connection_timeout)
            except (AuthenticationError, ErrorGettingAuthenticationData) as exc:
                self._auth_failure = exc
                raise
            except concurrent.futures.TimeoutError:
                raise ConnectError(
                    f"no answer from a Pulsar broker at {self.service_url} within "
                    f"{self.connection_timeout:g} s"
                ) from None
            self.connected = True

    # -- I/O thread: the commands the producers and consumers send ------------------------

    def send_message(self, producer_id: int, sequence_id: int, metadata: MessageMetadata,
                     payload: bytes, num_messages: int = 1,
                     highest_sequence_id: int | None = None) -> None:
        """SEND one entry (a message, a batch or a chunk)."""
        cnx = self._producer_cnx.get(producer_id)
        if cnx is None:
            return  # reconnecting: the producer sends it again once re-created
        raw = pulsar_metadata(metadata)
        command = pb.BaseCommand(type=_T.SEND)
        send = command.send
        send.producer_id = producer_id
        send.sequence_id = sequence_id & _MASK64
        if num_messages != 1:
            send.num_messages = num_messages
        if highest_sequence_id is not None:
            send.highest_sequence_id = highest_sequence_id & _MASK64
        if metadata.num_chunks_from_msg is not None and metadata.num_chunks_from_msg > 1:
            send.is_chunk = True
        cnx.outbox.append(encode_payload_command(command, raw, payload))

    def send_now(self, name: str, rid: int, payloads: tuple = (), **fields: Any) -> None:
        """Fire-and-forget commands: FLOW, ACK, REDELIVER_UNACKNOWLEDGED."""
        consumer_id = fields.get("consumer_id")
        cnx = self._consumer_cnx.get(consumer_id) if consumer_id is not None else None
        if cnx is None:
            return  # the consumer is reconnecting: it sends FLOW again when re-created
        command = pb.BaseCommand()
        if name == "FLOW":
            command.type = _T.FLOW
            command.flow.consumer_id = consumer_id
            command.flow.messagePermits = fields["permits"]
        elif name == "ACK":
            command.type = _T.ACK
            ack = command.ack
            ack.consumer_id = consumer_id
            ack.ack_type = 1 if fields.get("cumulative") else 0
            with_sets = {(s[0], s[1]): s for s in fields.get("ack_sets") or ()}
            for position in fields["positions"]:
                mid = ack.message_id.add(ledgerId=position[0], entryId=position[1])
                ack_set = with_sets.get((position[0], position[1]))
                if ack_set is not None:
                    mid.ack_set.extend(bits_to_words(ack_set[2], ack_set[3]))
                    mid.batch_size = ack_set[3]
        elif name == "REDELIVER_UNACKNOWLEDGED":
            command.type = _T.REDELIVER_UNACKNOWLEDGED_MESSAGES
            redeliver = command.redeliverUnacknowledgedMessages
            redeliver.consumer_id = consumer_id
            for position in fields.get("positions") or ():
                redeliver.message_ids.append(id_data(position))
            if fields.get("reason"):
                redeliver.pulsarlab_reason = fields["reason"]
            if fields.get("requested_at"):
                redeliver.pulsarlab_requested_at.extend(fields["requested_at"])
        else:
            log.warning("%s is not a command of the Pulsar protocol", name)
            return
        cnx.outbox.append(encode_command(command))

    def _io_request(self, name: str, fields: dict[str, Any],
                    future: concurrent.futures.Future) -> None:
        try:
            if name == "PRODUCER":
                self._io_create("producer", fields, future)
            elif name == "SUBSCRIBE":
                self._io_create("consumer", fields, future)
            elif name == "PARTITIONED_METADATA":
                self._io_partitioned_metadata(fields["topic"], future)
            elif name == "GET_TOPICS":
                self._io_get_topics(fields, future)
            elif name in ("CLOSE_PRODUCER",):
                self._io_close_producer(fields["producer_id"], future)
            elif name in ("CLOSE_CONSUMER", "UNSUBSCRIBE", "SEEK", "GET_LAST_MESSAGE_ID"):
                self._io_consumer_request(name, fields, future)
            else:
                raise PulsarException(f"{name} is not a command of the Pulsar protocol")
        except BaseException as exc:
            if not future.done():
                future.set_exception(exc)

    def _rpc(self, cnx: _BrokerCnx, command: pb.BaseCommand, field: str,
             on_reply: Callable[[Frame], None]) -> None:
        """Send a request (its ``request_id`` set here) and route its answer to ``on_reply``."""
        rid = next(self._request_ids)
        getattr(command, field).request_id = rid
        self._requests[rid] = (cnx, on_reply)
        cnx.outbox.append(encode_command(command))

    def _io_lookup(self, topic: str, done: Callable[[_BrokerCnx | None, BaseException | None],
                   None]) -> None:
        """Find the broker owning ``topic`` (following redirects) and its ready socket."""
        if self.over_zmq:  # one broker behind the ROUTER owns every topic
            url = self.service_url
            self._io_cnx(url, lambda err: done(self._cnxs.get(url), err))
            return

        def ask(url: str, authoritative: bool, hops: int) -> None:
            def on_ready(err: BaseException | None) -> None:
                if err is not None:
                    done(None, err)
                    return
                command = pb.BaseCommand(type=_T.LOOKUP)
                command.lookupTopic.topic = topic
                command.lookupTopic.authoritative = authoritative
                self._rpc(self._cnxs[url], command, "lookupTopic", answered)

            def answered(frame: Frame) -> None:
                cmd = frame.command
                if cmd.type == _T.ERROR:
                    done(None, error_for(cmd.error.error, cmd.error.message))
                    return
                r = cmd.lookupTopicResponse
                if r.response == r.Failed:
                    done(None, error_for(r.error, r.message or f"lookup of {topic} failed"))
                    return
                target = (r.brokerServiceUrlTls if self.use_tls else r.brokerServiceUrl) or url
                if (self.use_tls and not r.brokerServiceUrlTls and r.brokerServiceUrl
                        and not r.proxy_through_service_url):
                    done(None, ConnectError(f"lookup of {topic}: the owning broker has no "
                                            "TLS URL (brokerServiceUrlTls)"))
                    return
                if r.proxy_through_service_url:
                    target = self.service_url
                if r.response == r.Redirect:
                    if hops >= MAX_LOOKUP_REDIRECTS:
                        done(None, ConnectError(f"lookup of {topic}: too many redirects"))
                        return
                    ask(target, r.authoritative, hops + 1)
                    return
                self._io_cnx(target, lambda err: done(self._cnxs.get(target), err))

            self._io_cnx(url, on_ready)

        ask(self.service_url, False, 0)

    def _io_create(self, kind: str, fields: dict[str, Any],
                   future: concurrent.futures.Future) -> None:
        """Create a producer or consumer on its topic's broker; retried with back-off
        while the error is retriable (always, for one that existed before)."""
        ident = fields["producer_id" if kind == "producer" else "consumer_id"]
        again = (kind, ident) in self._created
        deadline = None if again else now_ms() + int(self.operation_timeout * 1000)
        if kind == "consumer" and not fields.get("consumer_name"):
            fields = dict(fields, consumer_name=secrets.token_hex(5))
        delay = [BACKOFF_INITIAL_MS]

        def retry_or_fail(err: BaseException) -> None:
            code = getattr(getattr(err, "result", None), "name", "")
            handlers = self._producers if kind == "producer" else self._consumers
            retriable = (isinstance(err, ConnectError)
                         or code in (_RETRIABLE_AGAIN if again else _RETRIABLE))
            if (retriable and ident in handlers and not self._closed
                    and (deadline is None or now_ms() + delay[0] < deadline)):
                log.info("creating the %s on %s again in %d ms: %s", kind, fields["topic"],
                         delay[0], err)
                self.schedule(delay[0], attempt)
                delay[0] = min(delay[0] * 2, BACKOFF_MAX_MS)
                return
            self._abandoned.discard((kind, ident))
            if not future.done():
                future.set_exception(err)

        def attempt() -> None:
            self._io_lookup(fields["topic"], looked_up)

        def looked_up(cnx: _BrokerCnx | None, err: BaseException | None) -> None:
            if err is not None or cnx is None:
                retry_or_fail(err or ConnectError("lookup failed"))
                return
            if kind == "producer":
                command, field = producer_command(fields), "producer"
            else:
                command, field = subscribe_command(fields), "subscribe"
            self._rpc(cnx, command, field, lambda frame: created(cnx, frame))

        def created(cnx: _BrokerCnx, frame: Frame) -> None:
            cmd = frame.command
            if (kind, ident) in self._abandoned:
                self._abandoned.discard((kind, ident))
                if cmd.type != _T.ERROR:
                    self._close_on_broker(cnx, kind, ident)
                if not future.done():
                    future.set_exception(AlreadyClosed(f"the {kind} was closed"))
                return
            if cmd.type == _T.ERROR:
                retry_or_fail(error_for(cmd.error.error, cmd.error.message))
                return
            if cmd.type == _T.PRODUCER_SUCCESS and not cmd.producer_success.producer_ready:
                # WaitForExclusive: queued; the broker answers again when it is admitted.
                self._requests[cmd.producer_success.request_id] = (
                    cnx, lambda f: created(cnx, f))
                return
            self._created.add((kind, ident))
            if kind == "producer":
                self._producer_cnx[ident] = cnx
                cnx.producers.add(ident)
                ps = cmd.producer_success
                reply = Command("PRODUCER_SUCCESS", 0, {
                    "producer_id": ident, "producer_name": ps.producer_name,
                    "last_sequence_id": ps.last_sequence_id,
                    "topic_epoch": ps.topic_epoch if ps.HasField("topic_epoch") else None,
                })
            else:
                self._consumer_cnx[ident] = cnx
                cnx.consumers.add(ident)
                reply = Command("SUCCESS", 0, {"result": fields["consumer_name"]})
            if not future.done():
                future.set_result(reply)

        attempt()

    def _io_partitioned_metadata(self, topic: str, future: concurrent.futures.Future) -> None:
        def on_ready(err: BaseException | None) -> None:
            if err is not None:
                future.set_exception(err)
                return
            command = pb.BaseCommand(type=_T.PARTITIONED_METADATA)
            command.partitionMetadata.topic = topic
            self._rpc(self._cnxs[self.service_url], command, "partitionMetadata", answered)

        def answered(frame: Frame) -> None:
            cmd = frame.command
            if cmd.type == _T.ERROR:
                future.set_exception(error_for(cmd.error.error, cmd.error.message))
                return
            r = cmd.partitionMetadataResponse
            if r.response == r.Failed:
                future.set_exception(error_for(r.error, r.message))
                return
            future.set_result(Command("SUCCESS", 0, {"result": r.partitions}))

        self._io_cnx(self.service_url, on_ready)

    def _io_get_topics(self, fields: dict[str, Any], future: concurrent.futures.Future) -> None:
        def on_ready(err: BaseException | None) -> None:
            if err is not None:
                future.set_exception(err)
                return
            command = pb.BaseCommand(type=_T.GET_TOPICS_OF_NAMESPACE)
            command.getTopicsOfNamespace.namespace = fields["namespace"]
            command.getTopicsOfNamespace.mode = 2  # ALL: the caller filters by domain
            self._rpc(self._cnxs[self.service_url], command, "getTopicsOfNamespace", answered)

        def answered(frame: Frame) -> None:
            cmd = frame.command
            if cmd.type == _T.ERROR:
                future.set_exception(error_for(cmd.error.error, cmd.error.message))
                return
            topics = list(cmd.getTopicsOfNamespaceResponse.topics)
            future.set_result(Command("SUCCESS", 0, {"result": topics}))

        self._io_cnx(self.service_url, on_ready)

    def _close_on_broker(self, cnx: _BrokerCnx, kind: str, ident: int) -> None:
        """Close a producer or consumer the broker created for one the application had
        closed meanwhile; its answer is not waited for."""
        if kind == "producer":
            command = pb.BaseCommand(type=_T.CLOSE_PRODUCER)
            command.close_producer.producer_id = ident
            field = "close_producer"
        else:
            command = pb.BaseCommand(type=_T.CLOSE_CONSUMER)
            command.close_consumer.consumer_id = ident
            field = "close_consumer"
        self._rpc(cnx, command, field, lambda frame: None)

    def _io_close_producer(self, producer_id: int, future: concurrent.futures.Future) -> None:
        cnx = self._producer_cnx.pop(producer_id, None)
        if cnx is None:
            if ("producer", producer_id) in self._created:  # being created again
                self._abandoned.add(("producer", producer_id))
            self._created.discard(("producer", producer_id))
            future.set_result(Command("SUCCESS", 0, {}))
            return
        self._created.discard(("producer", producer_id))
        cnx.producers.discard(producer_id)
        command = pb.BaseCommand(type=_T.CLOSE_PRODUCER)
        command.close_producer.producer_id = producer_id
        self._rpc(cnx, command, "close_producer", lambda frame: settle_reply(future, frame))

    def _io_consumer_request(self, name: str, fields: dict[str, Any],
                             future: concurrent.futures.Future) -> None:
        consumer_id = fields["consumer_id"]
        cnx = self._consumer_cnx.get(consumer_id)
        if name in ("CLOSE_CONSUMER", "UNSUBSCRIBE") and cnx is None:
            if ("consumer", consumer_id) in self._created:  # being created again
                self._abandoned.add(("consumer", consumer_id))
            self._created.discard(("consumer", consumer_id))
            future.set_result(Command("SUCCESS", 0, {}))
            return
        if cnx is None:
            future.set_exception(ConnectError("the consumer is reconnecting"))
            return
        command = pb.BaseCommand()
        if name == "CLOSE_CONSUMER" or name == "UNSUBSCRIBE":
            closing = name == "CLOSE_CONSUMER"
            command.type = _T.CLOSE_CONSUMER if closing else _T.UNSUBSCRIBE
            field = "close_consumer" if closing else "unsubscribe"
            getattr(command, field).consumer_id = consumer_id

            def closed(frame: Frame) -> None:
                if frame.command.type != _T.ERROR or closing:
                    self._consumer_cnx.pop(consumer_id, None)
                    cnx.consumers.discard(consumer_id)
                    self._created.discard(("consumer", consumer_id))
                settle_reply(future, frame)

            self._rpc(cnx, command, field, closed)
            return
        if name == "SEEK":
            command.type = _T.SEEK
            command.seek.consumer_id = consumer_id
            if fields.get("message_id") is not None:
                ledger, entry, partition, batch = fields["message_id"]
                command.seek.message_id.CopyFrom(pb.MessageIdData(
                    ledgerId=ledger & _MASK64, entryId=entry & _MASK64, partition=partition,
                    batch_index=batch))
            else:
                command.seek.message_publish_time = fields["publish_time"]
            self._rpc(cnx, command, "seek", lambda frame: settle_reply(future, frame))
            return
        command.type = _T.GET_LAST_MESSAGE_ID
        command.getLastMessageId.consumer_id = consumer_id

        def last(frame: Frame) -> None:
            cmd = frame.command
            if cmd.type == _T.ERROR:
                future.set_exception(error_for(cmd.error.error, cmd.error.message))
                return
            mid = cmd.getLastMessageIdResponse.last_message_id
            ledger, entry = signed(mid.ledgerId), signed(mid.entryId)
            future.set_result(Command("SUCCESS", 0, {
                "result": [ledger, entry, mid.partition, mid.batch_index]}))

        self._rpc(cnx, command, "getLastMessageId", last)

    # -- I/O thread: sockets --------------------------------------------------------------

    def _io_cnx(self, url: str, on_ready: Callable[[BaseException | None], None]) -> None:
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

    def _open(self, url: str) -> _BrokerCnx | None:
        cnx = _BrokerCnx(url, DEFAULT_MAX_MESSAGE_SIZE + MAX_FRAME_OVERHEAD)
        assert self._poller is not None
        if self.over_zmq:
            dealer = self._ctx.socket(zmq.DEALER)
            dealer.linger = 0
            dealer.sndhwm = 0
            dealer.rcvhwm = 0
            if self.curve_server_key is not None:
                apply_client(dealer, self.curve_server_key)
            dealer.connect(self.endpoint)
            cnx.sock = dealer
            self._by_fd[dealer] = cnx
            self._poller.register(dealer, zmq.POLLIN)
        else:
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
        self._cnxs[url] = cnx
        if self.keep_alive_ms > 0:
            cnx.keep_alive = self.schedule(self.keep_alive_ms, lambda: self._keep_alive(cnx))
        try:
            cnx.outbox.append(encode_command(self._connect_command()))
        except PulsarException as exc:
            self._drop(cnx, exc)
            raise
        return cnx

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

    def _token(self) -> str | None:
        token = self.auth_token
        if callable(token):
            try:
                token = token()
            except Exception as exc:
                raise ErrorGettingAuthenticationData(
                    f"the authentication token supplier failed: {exc}") from None
        return token

    def _transport_open(self, poller: zmq.Poller) -> None:
        self._poller = poller

    def _transport_ready(self, ready: dict[Any, int]) -> None:
        for fd, events in ready.items():
            cnx = self._by_fd.get(fd)
            if cnx is None:
                continue
            if cnx.handshaking:
                self._handshake(cnx)
                if cnx.handshaking or cnx.sock is None:
                    continue
            if events & zmq.POLLOUT:
                self._write(cnx)
            if events & zmq.POLLIN:
                self._read_cnx(cnx)

    def _transport_flush(self) -> None:
        for cnx in list(self._cnxs.values()):
            if cnx.outbox and cnx.sock is not None and not cnx.handshaking:
                self._write(cnx)

    def _handshake(self, cnx: _BrokerCnx) -> None:
        """One step of a non-blocking TLS handshake; once done, CONNECT goes out."""
        sock = cnx.sock
        assert isinstance(sock, ssl.SSLSocket) and self._poller is not None
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            self._poller.modify(sock.fileno(), zmq.POLLIN)
            return
        except ssl.SSLWantWriteError:
            self._poller.modify(sock.fileno(), zmq.POLLIN | zmq.POLLOUT)
            return
        except OSError as exc:  # ssl.SSLError included: untrusted, wrong name, reset
            message = handshake_error(cnx.url, exc)
            log.info("%s", message)
            self._drop(cnx, ConnectError(message))
            return
        cnx.handshaking = False
        self._write(cnx)

    def _keep_alive(self, cnx: _BrokerCnx) -> None:
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

    def _transport_close(self) -> None:
        for cnx in list(self._cnxs.values()):
            if self.over_zmq and cnx.sock is not None:  # hang up: an empty message
                with contextlib.suppress(zmq.ZMQError):
                    cnx.sock.send(b"", zmq.NOBLOCK)
            self._drop(cnx, AlreadyClosed("the client was closed"), notify=False)

    def _write(self, cnx: _BrokerCnx) -> None:
        sock = cnx.sock
        if sock is None:
            return
        if self.over_zmq:  # one Pulsar frame per ZeroMQ message (no high-water mark)
            frames, cnx.outbox = cnx.outbox, []
            try:
                for frame in frames:
                    sock.send(frame, copy=len(frame) < 65536)
            except zmq.ZMQError as exc:
                self._drop(cnx, ConnectError(f"connection to {cnx.url} lost: {exc}"))
            return
        data = cnx.unsent + b"".join(cnx.outbox) if cnx.outbox else cnx.unsent
        cnx.outbox.clear()
        try:
            if isinstance(sock, ssl.SSLSocket):
                sent = self._send_tls(sock, data)
            else:
                sent = sock.send(data) if data else 0
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            self._drop(cnx, ConnectError(f"connection to {cnx.url} lost: {exc}"))
            return
        cnx.unsent = data[sent:]
        assert self._poller is not None
        self._poller.modify(sock.fileno(), zmq.POLLIN | (zmq.POLLOUT if cnx.unsent else 0))

    @staticmethod
    def _send_tls(sock: ssl.SSLSocket, data: bytes) -> int:
        """Write ``data`` one TLS record at a time until the socket would block (a write
        that would block is repeated later with the same bytes, as OpenSSL requires)."""
        view = memoryview(data)
        sent = 0
        while sent < len(data):
            try:
                sent += sock.send(view[sent:sent + _TLS_RECORD])
            except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError,
                    InterruptedError):
                break  # what went out before counts: it is not sent twice
        return sent

    def _recv(self, cnx: _BrokerCnx, sock: socket.socket) -> tuple[bytes, str | None]:
        """What the socket has (``b""`` if nothing yet) and, if it is closed, why.
        A TLS socket is read until it would block: the bytes OpenSSL already decrypted
        are no longer the poller's to announce."""
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
                log.info("connection to %s lost: %s", cnx.url, reason)
                return b"".join(chunks), f"connection to {cnx.url} lost: {reason}"
            if not chunk:
                return b"".join(chunks), f"connection to {cnx.url} closed"
            chunks.append(chunk)
            total += len(chunk)
            tls = isinstance(sock, ssl.SSLSocket)
            if not tls or (total >= _RECV_BYTES and not sock.pending()):
                return b"".join(chunks), None

    def _read_cnx(self, cnx: _BrokerCnx) -> None:
        sock = cnx.sock
        if sock is None:
            return
        if self.over_zmq:
            self._read_dealer(cnx, sock)
            return
        data, closed = self._recv(cnx, sock)
        if data:
            cnx.waiting_for_pong = False  # any traffic shows the broker is alive
            try:
                frames = cnx.decoder.feed(data)
            except FrameError as exc:
                log.warning("bad frame from %s: %s", cnx.url, exc)
                self._drop(cnx, ConnectError(f"bad frame from {cnx.url}: {exc}"))
                return
            self._handle_frames(cnx, frames)
        if closed is not None and cnx.sock is not None:
            self._drop(cnx, ConnectError(closed))

    def _read_dealer(self, cnx: _BrokerCnx, sock: zmq.Socket) -> None:
        """A burst of ZeroMQ messages, each one whole frame; an empty one: the broker
        closed the connection."""
        frames: list[Frame] = []
        max_frame = cnx.decoder.max_frame_size
        for _ in range(_RECV_BURST):
            try:
                data = sock.recv(zmq.NOBLOCK)
            except zmq.Again:
                break
            cnx.waiting_for_pong = False
            if not data:
                self._handle_frames(cnx, frames)
                self._drop(cnx, ConnectError(f"the broker at {cnx.url} closed the connection"))
                return
            try:
                frames.append(decode_message(data, max_frame, checksum_optional=True))
            except FrameError as exc:
                log.warning("bad frame from %s: %s", cnx.url, exc)
                self._handle_frames(cnx, frames)
                self._drop(cnx, ConnectError(f"bad frame from {cnx.url}: {exc}"))
                return
        self._handle_frames(cnx, frames)

    def _handle_frames(self, cnx: _BrokerCnx, frames: list[Frame]) -> None:
        # A burst's MESSAGEs reach each consumer as one list (one queue hand-over, not one
        # per entry); any other command first delivers what came before it, in order.
        deliveries: dict[int, list[tuple[tuple, bytes, bytes]]] = {}
        for frame in frames:
            cmd = frame.command
            if cmd.type == _T.MESSAGE and frame.checksum_ok:
                m = cmd.message
                mid = m.message_id
                ack_set = words_to_bits(m.ack_set) if m.ack_set else None
                entry = (signed(mid.ledgerId), signed(mid.entryId), mid.partition,
                         m.redelivery_count, ack_set)
                deliveries.setdefault(m.consumer_id, []).append(
                    (entry, frame.metadata, frame.payload))
                continue
            if deliveries:
                self._deliver(deliveries)
                deliveries = {}
            try:
                self._dispatch_frame(cnx, frame)
            except Exception:
                log.exception("error handling a command from %s", cnx.url)
        if deliveries:
            self._deliver(deliveries)

    def _deliver(self, deliveries: dict[int, list[tuple[tuple, bytes, bytes]]]) -> None:
        for consumer_id, entries in deliveries.items():
            handler = self._consumers.get(consumer_id)
            if handler is None:
                continue
            try:
                handler.on_entries(entries)
            except Exception:
                log.exception("error delivering messages to consumer %d", consumer_id)

    def _drop(self, cnx: _BrokerCnx, error: BaseException, notify: bool = True) -> None:
        """Close a socket: waiting requests fail, its producers and consumers reconnect."""
        if self._cnxs.get(cnx.url) is cnx:
            del self._cnxs[cnx.url]
        sock, cnx.sock = cnx.sock, None
        if cnx.keep_alive is not None:
            cnx.keep_alive.cancel()
        if sock is not None:
            key = sock if self.over_zmq else sock.fileno()
            self._by_fd.pop(key, None)
            with contextlib.suppress(KeyError, zmq.ZMQError, ValueError):
                assert self._poller is not None
                self._poller.unregister(key)
            if self.over_zmq:
                sock.close(linger=0)
            else:
                sock.close()
        waiting, cnx.waiting = cnx.waiting, []
        for on_ready in waiting:
            on_ready(error)
        lost = [rid for rid, (owner, _) in self._requests.items() if owner is cnx]
        for rid in lost:  # answered as Pulsar's client does: ServiceNotReady (retriable)
            _, on_reply = self._requests.pop(rid)
            command = pb.BaseCommand(type=_T.ERROR)
            command.error.request_id = rid
            command.error.error = pb.ServiceNotReady
            command.error.message = str(error)
            on_reply(Frame(command))
        if not notify:
            return
        for producer_id in list(cnx.producers):
            self._producer_lost(cnx, producer_id)
        for consumer_id in list(cnx.consumers):
            self._consumer_lost(cnx, consumer_id)

    def _producer_lost(self, cnx: _BrokerCnx, producer_id: int) -> None:
        """The broker closed the producer, or its socket is gone: it creates itself again."""
        cnx.producers.discard(producer_id)
        self._producer_cnx.pop(producer_id, None)
        self._push(self._producers, "CLOSE_PRODUCER", producer_id=producer_id,
                   reason="reconnect")

    def _consumer_lost(self, cnx: _BrokerCnx, consumer_id: int) -> None:
        cnx.consumers.discard(consumer_id)
        self._consumer_cnx.pop(consumer_id, None)
        self._push(self._consumers, "CLOSE_CONSUMER", consumer_id=consumer_id,
                   reason="reconnect")

    @staticmethod
    def _push(handlers: dict[int, Any], name: str, **fields: Any) -> None:
        """Hand a push to its producer's or consumer's ``on_<name>`` (if it is still open)."""
        ident = fields.get("producer_id", fields.get("consumer_id"))
        handler = handlers.get(ident)
        if handler is not None:
            getattr(handler, f"on_{name.lower()}")(Command(name, 0, fields))

    # -- I/O thread: what the brokers send ------------------------------------------------

    def _dispatch_frame(self, cnx: _BrokerCnx, frame: Frame) -> None:
        cmd = frame.command
        t = cmd.type
        if t == _T.MESSAGE:  # its checksum failed (good ones go through _deliver)
            handler = self._consumers.get(cmd.message.consumer_id)
            log.warning("dropped a message with a bad checksum from %s", cnx.url)
            if handler is not None:
                handler.add_permits(1)
            return
        if t == _T.SEND_RECEIPT:
            r = cmd.send_receipt
            mid = r.message_id
            self._push(self._producers, "SEND_RECEIPT", producer_id=r.producer_id,
                       sequence_id=r.sequence_id,
                       message_id=[signed(mid.ledgerId), signed(mid.entryId), mid.partition])
            return
        if t == _T.SEND_ERROR:
            e = cmd.send_error
            self._push(self._producers, "SEND_ERROR", producer_id=e.producer_id,
                       sequence_id=e.sequence_id, code=pb.ServerError.Name(e.error),
                       message=e.message)
            return
        if t == _T.PING:
            cnx.outbox.append(encode_command(pb.BaseCommand(type=_T.PONG)))
            return
        if t == _T.CONNECTED:
            cnx.ready = True
            if cmd.connected.max_message_size > 0:
                cnx.max_message_size = cmd.connected.max_message_size
                cnx.decoder.max_frame_size = cnx.max_message_size + MAX_FRAME_OVERHEAD
                if cnx.url == self.service_url:
                    self.max_message_size = cnx.max_message_size
            waiting, cnx.waiting = cnx.waiting, []
            for on_ready in waiting:
                on_ready(None)
            return
        if t == _T.AUTH_CHALLENGE:
            command = pb.BaseCommand(type=_T.AUTH_RESPONSE)
            command.authResponse.client_version = CLIENT_VERSION
            command.authResponse.protocol_version = PROTOCOL_VERSION
            token = self._token()
            command.authResponse.response.auth_method_name = "token"
            command.authResponse.response.auth_data = (token or "").encode()
            cnx.outbox.append(encode_command(command))
            return
        if t == _T.CLOSE_PRODUCER:
            self._producer_lost(cnx, cmd.close_producer.producer_id)
            return
        if t == _T.CLOSE_CONSUMER:
            self._consumer_lost(cnx, cmd.close_consumer.consumer_id)
            return
        if t == _T.ACTIVE_CONSUMER_CHANGE:
            a = cmd.active_consumer_change
            self._push(self._consumers, "ACTIVE_CONSUMER_CHANGE", consumer_id=a.consumer_id,
                       is_active=a.is_active)
            return
        if t == _T.REACHED_END_OF_TOPIC:
            self._push(self._consumers, "REACHED_END_OF_TOPIC",
                       consumer_id=cmd.reachedEndOfTopic.consumer_id)
            return
        if t == _T.PONG:
            return
        if t == _T.ERROR and not cnx.ready:  # the CONNECT was refused
            error = error_for(cmd.error.error, cmd.error.message)
            if not isinstance(error, AuthenticationError | AuthorizationError):
                error = ConnectError(cmd.error.message)  # e.g. past max_connections
            self._drop(cnx, error)
            return
        rid = request_id_of(cmd)
        pending = self._requests.pop(rid, None) if rid is not None else None
        if pending is not None:
            pending[1](frame)
        elif t == _T.ERROR:
            log.warning("broker error: %s: %s", pb.ServerError.Name(cmd.error.error),
                        cmd.error.message)
