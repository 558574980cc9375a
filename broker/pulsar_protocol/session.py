"""One Pulsar connection: Pulsar's commands in, core calls, Pulsar's answers out.

:class:`PulsarSession` is sans-I/O (the h11 shape): the socket shell hands it the bytes it
read (:meth:`receive_data`), drains what to write (:meth:`data_to_send`) and closes the
socket when :attr:`closed` says so. In between it keeps the connection's state (handshake,
role, the client's producer and consumer ids mapped to the core's) and turns the core's
actions addressed to it (:meth:`handle_action`) into frames. The session object itself is
the ``conn`` the core records on producers and consumers.

A connection's frames leave in the order the broker produced them, as Pulsar's ServerCnx
writes to its channel as things happen: an answer to a command queued while the core still
holds actions from earlier in the burst (REACHED_END_OF_TOPIC from a FLOW, CLOSE_CONSUMER
from a SEEK, ACTIVE_CONSUMER_CHANGE from a SUBSCRIBE) waits behind them in the core's outbox
(a :class:`Reply`) and is written when the loop hands the actions out. Every transport serves its
connections with this class (:mod:`..transports`: pulsar:// and pulsar+ssl:// over TCP,
one frame per message over ZeroMQ).

Behaviour follows Pulsar 3.3's broker: LOOKUP answers authoritatively with this broker,
a SEND whose checksum does not match gets ``ChecksumError`` and stores nothing, a SEEK
disconnects the subscription's consumer (CLOSE_CONSUMER) so the client re-subscribes with
an empty queue, and commands pulsarlab does not serve (transactions) get an ERROR naming
them. A frame that breaks the framing closes the connection after an ERROR saying why.
"""

from __future__ import annotations

import contextlib
import logging
import operator
from collections.abc import Callable
from typing import Any, NamedTuple

import google_crc32c

from ..actions import (
    ActiveConsumerChange,
    ConsumerClosed,
    Deliver,
    DeliveredEntry,
    ProducerClosed,
    ProducerReady,
    ReachedEndOfTopic,
    SendError,
    SendReceipts,
)
from ..consumer import KeySharedMeta, KeySharedMetaMode, SubType
from ..entry import MessageMetadata, decode_entry, pulsar_parts, read_header
from ..errors import (
    AuthenticationError,
    ConsumerNotFound,
    IncompatibleSchema,
    InvalidArgument,
    PulsarLabError,
    ServiceNotReady,
    SubscriptionAlreadyExists,
    TopicNotFound,
)
from ..format.metadata import (
    from_pulsar,
    raw_to_pulsar,
    read_pulsar_metadata,
    to_pulsar,
    with_sequence_id,
)
from ..limits import check_consumers, check_producers
from ..listeners import AdvertisedListeners
from ..message_id import MessageId
from ..producer_access import RecentlyClosed, waiting_refused
from ..schemas import SchemaInfo
from ..security import AUTH_REFRESH_DATA, AuthState
from ..topic_name import TopicName
from ..topics_pattern import TopicsPattern
from . import PulsarApi_pb2 as api
from .framing import (
    MAX_FRAME_OVERHEAD,
    MAX_HANDSHAKE_FRAME,
    Frame,
    FrameDecoder,
    FrameError,
    decode_message,
    encode_command,
    encode_payload_command,
    encode_payload_frame,
)
from .hot_commands import (
    encode_message_command,
    encode_message_frames,
    encode_send_receipt,
    encode_send_receipts,
)

log = logging.getLogger("pulsarlab.broker.pulsar")

__all__ = ["SERVER_VERSION", "PulsarSession", "Reply"]

SERVER_VERSION = "pulsarlab-0.1"
PROTOCOL_VERSION = 20  # the highest protocol version this broker speaks
_U64 = (1 << 64) - 1
_I64_MAX = (1 << 63) - 1
_T = api.BaseCommand
_SEND = _T.SEND
_ENTRY_ID = operator.itemgetter(1)

_SUB_TYPES = {
    api.CommandSubscribe.Exclusive: SubType.Exclusive,
    api.CommandSubscribe.Shared: SubType.Shared,
    api.CommandSubscribe.Failover: SubType.Failover,
    api.CommandSubscribe.Key_Shared: SubType.Key_Shared,
}
_SERVER_ERRORS = frozenset(api.ServerError.keys())
_ERROR_ALIASES = {
    "InvalidConfiguration": "NotAllowedError",
    "CumulativeAcknowledgementNotAllowedError": "NotAllowedError",
    "MessageTooBig": "NotAllowedError",
    "ProducerNotFound": "NotAllowedError",
    "TopicAlreadyExists": "NotAllowedError",
    "ConnectError": "ServiceNotReady",
}
_UNSUPPORTED = {
    _T.NEW_TXN: "newTxn",
    _T.ADD_PARTITION_TO_TXN: "addPartitionToTxn",
    _T.ADD_SUBSCRIPTION_TO_TXN: "addSubscriptionToTxn",
    _T.END_TXN: "endTxn",
    _T.END_TXN_ON_PARTITION: "endTxnOnPartition",
    _T.END_TXN_ON_SUBSCRIPTION: "endTxnOnSubscription",
    _T.TC_CLIENT_CONNECT_REQUEST: "tcClientConnectRequest",
}


def server_error(code: str) -> int:
    """Pulsar's ``ServerError`` number for a core error code."""
    code = _ERROR_ALIASES.get(code, code)
    return api.ServerError.Value(code) if code in _SERVER_ERRORS else api.UnknownError


def _signed(value: int) -> int:
    """A uint64 id field as the signed number Pulsar means (-1 for "none")."""
    return value - (1 << 64) if value > _I64_MAX else value


def _words_to_bits(words: Any) -> int:
    bits = 0
    for index, word in enumerate(words):
        bits |= (word & _U64) << (64 * index)
    return bits


def _bits_to_words(bits: int) -> list[int]:
    words = []
    while bits:
        word = bits & _U64
        words.append(word - (1 << 64) if word > _I64_MAX else word)
        bits >>= 64
    return words


class Reply(NamedTuple):
    """An answer that waits in the core's outbox behind actions queued before it for the
    same connection (handed out like them, written as is)."""

    conn: PulsarSession
    frame: bytes


class PulsarSession:
    """The protocol state of one Pulsar connection (no I/O: bytes in, bytes out)."""

    def __init__(
        self,
        service: Any,
        *,
        settings: Any,
        authenticator: Any,
        service_url: str,
        now_ms: Callable[[], int],
        peer: str = "",
        listeners: AdvertisedListeners | None = None,
        sender: Any = None,
        route: bytes = b"",
    ) -> None:
        """``sender`` is the transport that writes what this session queues (a
        :class:`~..transports.CommandSender`), ``route`` its name for this connection."""
        self.service = service
        self.settings = settings
        self.authenticator = authenticator
        self.authorizer = service.authorizer  # the core's: every face checks the same
        self.schemas = service.schemas
        self.service_url = service_url
        self.listeners = listeners or AdvertisedListeners.parse("", url=service_url)
        self.now_ms = now_ms
        self.peer = peer
        self.sender = sender
        self.route = route
        # Until CONNECT succeeds a frame may be at most MAX_HANDSHAKE_FRAME bytes: an
        # unauthenticated peer cannot make the broker buffer a 5 MiB frame.
        self.decoder = FrameDecoder(MAX_HANDSHAKE_FRAME)
        self.connected = False
        self.closed = False
        self.close_reason = ""
        self.role: str | None = None
        self.auth_state: AuthState | None = None
        self.peer_certificate: dict | None = None  # a pulsar+ssl:// client's, once checked
        self.supports_auth_refresh = False
        self._auth_challenge_pending = False
        self.protocol_version = 0
        self.client_version = ""  # from CONNECT, shown in producer and consumer stats
        self.last_seen_ms = self.opened_ms = now_ms()
        self.producers: dict[int, int] = {}  # client id -> core id
        self.producer_ids: dict[int, int] = {}  # core id -> client id
        self.consumers: dict[int, int] = {}
        self.consumer_ids: dict[int, int] = {}
        self._highest_sequence: dict[tuple[int, int], int] = {}  # (core producer, seq) -> highest
        # WaitForExclusive producers in line: core id -> (PRODUCER request id, schema version)
        self._waiting: dict[int, tuple[int, bytes | None]] = {}
        self._recently_closed = RecentlyClosed()
        self._out: list[bytes] = []
        self._acting = False  # writing a core action: its frames go straight out

    # -- the shell's side -----------------------------------------------------------------

    def receive_data(self, data: bytes) -> None:
        """Bytes read from the socket; every complete command is handled at once."""
        if self.closed:
            return
        self.last_seen_ms = self.now_ms()
        try:
            frames = self.decoder.feed(data)
        except FrameError as exc:
            self._fail(f"invalid frame: {exc}")
            return
        for frame in frames:
            if self.closed:
                return
            self._handle(frame)

    @property
    def scheme(self) -> str:
        """How the connection came (``pulsar``, ``pulsar+ssl``, ``zmq``), for log lines."""
        return getattr(self.sender, "scheme", "pulsar")

    def receive_frame(self, data: bytes) -> None:
        """One whole frame, as a message transport (ZeroMQ) carries it: a message that is
        not exactly one valid frame gets an ERROR and closes the connection."""
        if self.closed:
            return
        self.last_seen_ms = self.now_ms()
        try:
            frame = decode_message(data, self.decoder.max_frame_size)
        except FrameError as exc:
            self._fail(f"invalid frame: {exc}")
            return
        self._handle(frame)

    def fail(self, reason: str) -> None:
        """The transport cannot read this connection any more: an ERROR saying why, and
        the connection closes."""
        if not self.closed:
            self._fail(reason)

    def frames_to_send(self) -> list[bytes]:
        """Every frame queued since the last call, one by one (a message transport sends
        each as its own message)."""
        out = self._out
        if not out:
            return out
        self._out = []
        return out

    def data_to_send(self) -> bytes:
        """Everything queued for the socket since the last call."""
        if not self._out:
            return b""
        out = b"".join(self._out)
        self._out.clear()
        return out

    def connection_lost(self) -> None:
        """The socket closed: the core closes this connection's producers and consumers."""
        self.closed = True
        self.service.close_connection(self)

    def ping(self, keep_alive_ms: int) -> None:
        """A keep-alive turn: PING the client, or give up on one silent for two periods.

        As Pulsar's ``PulsarHandler``, a connection whose handshake (CONNECT) did not
        complete within one keep-alive interval is closed instead (slow or idle peers
        cannot hold sockets and buffers without ever connecting)."""
        if self.closed:
            return
        if not self.connected:
            if self.now_ms() - self.opened_ms >= keep_alive_ms:
                self._close("the handshake (CONNECT) did not complete within the keep-alive "
                            f"interval ({keep_alive_ms} ms)")
            return
        if self.now_ms() - self.last_seen_ms > 2 * keep_alive_ms:
            self._close("the client stopped answering keep-alive pings")
            return
        self._command(_T.PING, "ping", api.CommandPing())

    # -- core actions ---------------------------------------------------------------------

    def handle_action(self, action: Any) -> None:
        """Frames for one core action addressed to this connection; a failure costs this
        connection (an ERROR, a close, a log line), never the broker."""
        if self.closed:
            return
        self._acting = True
        try:
            self._handle_action(action)
        except Exception as exc:  # a bug must cost this connection, never the broker
            log.exception("internal error handling %s for a %s:// connection (%s %s)",
                          type(action).__name__, self.scheme, getattr(action, "topic", ""),
                          [list(e.position) for e in getattr(action, "entries", ())[:10]])
            self._fail(f"internal error ({type(exc).__name__}); the broker logged it")
        finally:
            self._acting = False

    def _handle_action(self, action: Any) -> None:
        kind = type(action)
        if kind is Deliver:
            client_id = self.consumer_ids.get(action.consumer_id)
            if client_id is not None:
                self._deliver(client_id, action)
        elif kind is SendReceipts:
            client_id = self.producer_ids.get(action.producer_id)
            if client_id is None:
                return
            out, highest, partition = self._out, self._highest_sequence, action.partition
            receipts = action.receipts
            if not highest:  # acting: straight out
                if len(receipts) == 1:  # nothing shared to lay out once
                    out.append(encode_send_receipt(client_id, *receipts[0], partition))
                else:
                    out += encode_send_receipts(client_id, partition, receipts)
                return
            producer_id = action.producer_id
            for sequence_id, ledger_id, entry_id in receipts:
                out.append(encode_send_receipt(
                    client_id, sequence_id, ledger_id, entry_id, partition,
                    highest.pop((producer_id, sequence_id), None),
                ))
        elif kind is Reply:
            self._out.append(action.frame)
        elif kind is SendError:
            client_id = self.producer_ids.get(action.producer_id)
            if client_id is not None:
                self._highest_sequence.pop((action.producer_id, action.sequence_id), None)
                self._send_error(client_id, action.sequence_id, action.code, action.message)
        elif kind is ActiveConsumerChange:
            client_id = self.consumer_ids.get(action.consumer_id)
            if client_id is not None:
                self._command(
                    _T.ACTIVE_CONSUMER_CHANGE, "active_consumer_change",
                    api.CommandActiveConsumerChange(
                        consumer_id=client_id, is_active=action.is_active
                    ),
                )
        elif kind is ConsumerClosed:
            client_id = self.consumer_ids.pop(action.consumer_id, None)
            if client_id is not None:
                self.consumers.pop(client_id, None)
                self._command(
                    _T.CLOSE_CONSUMER, "close_consumer",
                    api.CommandCloseConsumer(consumer_id=client_id, request_id=_U64),
                )
        elif kind is ProducerClosed:
            self._producer_closed(action)
        elif kind is ProducerReady:
            self._producer_ready(action)
        elif kind is ReachedEndOfTopic:
            client_id = self.consumer_ids.get(action.consumer_id)
            if client_id is not None:
                self._command(
                    _T.REACHED_END_OF_TOPIC, "reachedEndOfTopic",
                    api.CommandReachedEndOfTopic(consumer_id=client_id),
                )

    def _producer_closed(self, action: ProducerClosed) -> None:
        """The broker closed a producer (its topic was deleted, terminated or unloaded, or
        it was fenced out): the client reconnects, and is refused with
        ``TopicTerminatedError`` after a termination. A producer still waiting for the
        topic gets its PRODUCER answered with the error instead."""
        client_id = self.producer_ids.pop(action.producer_id, None)
        if client_id is None:
            return
        self.producers.pop(client_id, None)
        pending = self._waiting.pop(action.producer_id, None)
        if pending is not None:
            error = waiting_refused(action.reason)
            self._error(pending[0], error.code, str(error))
            return
        self._recently_closed.add(client_id)  # SENDs on their way are ignored
        self._command(
            _T.CLOSE_PRODUCER, "close_producer",
            api.CommandCloseProducer(producer_id=client_id, request_id=_U64),
        )

    def _deliver(self, client_id: int, action: Deliver) -> None:
        self._out += encode_message_frames(
            client_id, action.entries,
            lambda entry: self._message_frame(client_id, action.topic, entry),
        )

    def _message_frame(self, client_id: int, topic: str, entry: DeliveredEntry) -> bytes:
        """The MESSAGE frame of an entry :func:`encode_message_frames` does not lay out
        itself: one with an ack set, or one not stored in Pulsar's layout."""
        metadata, payload = _pulsar_entry(
            topic, entry.position, entry.data, self.settings.max_message_size
        )
        if entry.ack_set is None:
            return encode_payload_frame(
                encode_message_command(
                    client_id, entry.position[0], entry.position[1], entry.partition,
                    entry.redelivery_count,
                ),
                metadata, payload,
            )
        message = api.CommandMessage(
            consumer_id=client_id,
            message_id=api.MessageIdData(
                ledgerId=entry.position[0] & _U64, entryId=entry.position[1] & _U64,
                partition=entry.partition,
            ),
            redelivery_count=entry.redelivery_count,
        )
        message.ack_set.extend(_bits_to_words(entry.ack_set))
        return encode_payload_command(_T(type=_T.MESSAGE, message=message), metadata, payload)

    # -- commands -------------------------------------------------------------------------

    def _command(self, type_: int, field: str, body: Any) -> None:
        command = _T(type=type_)
        getattr(command, field).CopyFrom(body)
        frame = encode_command(command)
        if self._acting:
            self._out.append(frame)
            return
        # Actions pending (maybe for this connection): the answer waits behind them.
        if not self.service.push_behind_pending(Reply(self, frame)):
            self._out.append(frame)

    def _write_pending(self) -> None:
        """Before the connection closes, what the core queued for it and the answers
        waiting behind go out, in order (the closed connection takes no more)."""
        for action in self.service.take_actions_for(self):
            self.handle_action(action)

    def _error(self, request_id: int, code: str, message: str) -> None:
        self._command(
            _T.ERROR, "error",
            api.CommandError(request_id=request_id, error=server_error(code), message=message),
        )

    def _send_error(self, client_id: int, sequence_id: int, code: str, message: str) -> None:
        self._command(
            _T.SEND_ERROR, "send_error",
            api.CommandSendError(
                producer_id=client_id, sequence_id=sequence_id, error=server_error(code),
                message=message,
            ),
        )

    def _success(self, request_id: int) -> None:
        self._command(_T.SUCCESS, "success", api.CommandSuccess(request_id=request_id))

    def _close(self, reason: str) -> None:
        if self.closed:
            return
        self._write_pending()
        if self.closed:  # writing them failed, which closed the connection
            return
        log.info("closing a %s:// connection%s: %s", self.scheme,
                 self.peer and f" ({self.peer})",
                 reason)
        self.closed = True
        self.close_reason = reason
        self.service.close_connection(self)

    def _fail(self, reason: str) -> None:
        """An ERROR saying why, then the connection closes (the framing is lost)."""
        self._error(_U64, "UnknownError", reason)
        self._close(reason)

    def _handle(self, frame: Frame) -> None:
        command = frame.command
        type_ = command.type
        if type_ == _SEND and self.connected and command.HasField("send"):
            body = command.send  # the most frequent command first
            try:
                self._send(body, frame)
            except Exception as exc:
                self._command_failed(type_, body, "send", exc)
            return
        if type_ == _T.PING:
            self._command(_T.PONG, "pong", api.CommandPong())
            return
        if type_ == _T.PONG:
            return
        if not self.connected:
            if type_ == _T.CONNECT and command.HasField("connect"):
                self._connect(command.connect)
            else:
                name = _T.Type.Name(type_) if type_ in _T.Type.values() else str(type_)
                self._error(_U64, "NotAllowedError", f"{name} before CONNECT")
                self._close(f"{name} before CONNECT")
            return
        handler = _HANDLERS.get(type_)
        if handler is None:
            self._unsupported(command)
            return
        method, field = handler
        if not command.HasField(field):
            self._fail(f"{_T.Type.Name(type_)} without its {field} body")
            return
        body = getattr(command, field)
        try:
            if type_ == _SEND:
                self._send(body, frame)
            else:
                method(self, body)
        except Exception as exc:
            self._command_failed(type_, body, field, exc)

    def _command_failed(self, type_: int, body: Any, field: str, exc: Exception) -> None:
        """A command that raised: its request fails with the error's code (a bug costs
        one request, never the broker)."""
        if isinstance(exc, PulsarLabError):
            self._request_failed(type_, body, _request_id(body, field), exc.code, str(exc))
        elif isinstance(exc, (ValueError, TypeError, KeyError)):
            self._request_failed(
                type_, body, _request_id(body, field), "UnknownError",
                f"{_T.Type.Name(type_)}: {type(exc).__name__}: {exc}",
            )
        else:
            log.error("internal error while handling %s", _T.Type.Name(type_), exc_info=exc)
            self._request_failed(
                type_, body, _request_id(body, field), "UnknownError",
                f"{_T.Type.Name(type_)}: internal error ({type(exc).__name__})",
            )

    def _request_failed(self, type_: int, body: Any, request_id: int, code: str, msg: str) -> None:
        if type_ == _T.PARTITIONED_METADATA:
            self._command(
                _T.PARTITIONED_METADATA_RESPONSE, "partitionMetadataResponse",
                api.CommandPartitionedTopicMetadataResponse(
                    request_id=request_id,
                    response=api.CommandPartitionedTopicMetadataResponse.Failed,
                    error=server_error(code), message=msg,
                ),
            )
        elif type_ == _T.LOOKUP:
            self._command(
                _T.LOOKUP_RESPONSE, "lookupTopicResponse",
                api.CommandLookupTopicResponse(
                    request_id=request_id, response=api.CommandLookupTopicResponse.Failed,
                    error=server_error(code), message=msg,
                ),
            )
        elif type_ == _T.ACK:
            if body.HasField("request_id"):
                self._command(
                    _T.ACK_RESPONSE, "ackResponse",
                    api.CommandAckResponse(
                        consumer_id=body.consumer_id, request_id=body.request_id,
                        error=server_error(code), message=msg,
                    ),
                )
            else:
                log.info("ack refused: %s", msg)
        elif type_ in (_T.FLOW, _T.REDELIVER_UNACKNOWLEDGED_MESSAGES):
            log.info("%s refused: %s", _T.Type.Name(type_), msg)
        elif type_ in (_T.GET_SCHEMA, _T.GET_OR_CREATE_SCHEMA):
            response = (
                api.CommandGetSchemaResponse if type_ == _T.GET_SCHEMA
                else api.CommandGetOrCreateSchemaResponse
            )
            field = "getSchemaResponse" if type_ == _T.GET_SCHEMA else "getOrCreateSchemaResponse"
            self._command(
                type_ + 1, field,
                response(request_id=request_id, error_code=server_error(code), error_message=msg),
            )
        else:
            self._error(request_id, code, msg)

    def _unsupported(self, command: api.BaseCommand) -> None:
        type_ = command.type
        name = _T.Type.Name(type_) if type_ in _T.Type.values() else f"command type {type_}"
        field = _UNSUPPORTED.get(type_)
        request_id = _U64
        if field is not None and command.HasField(field):
            request_id = getattr(command, field).request_id
        if type_ in _UNSUPPORTED:
            message = f"{name}: transactions are not supported by pulsarlab"
        else:
            message = f"{name} is not supported by pulsarlab"
        log.info("refused %s from a %s:// client", name, self.scheme)
        self._error(request_id, "NotAllowedError", message)

    # -- handshake and lookups ------------------------------------------------------------

    def _connect(self, connect: api.CommandConnect) -> None:
        self.supports_auth_refresh = connect.feature_flags.supports_auth_refresh
        if self.authenticator.enabled:
            method = connect.auth_method_name if connect.HasField("auth_method_name") else "none"
            try:
                self.auth_state = self.authenticator.authenticate_command(
                    method, connect.auth_data, self.peer_certificate, self.now_ms() / 1000
                )
            except AuthenticationError as exc:
                self._error(_U64, exc.code, str(exc))
                self._close(str(exc))
                return
            self.role = self.auth_state.role
        self.connected = True
        self.decoder.max_frame_size = self.settings.max_message_size + MAX_FRAME_OVERHEAD
        self.protocol_version = min(connect.protocol_version, PROTOCOL_VERSION)
        self.client_version = connect.client_version
        self._command(
            _T.CONNECTED, "connected",
            api.CommandConnected(
                server_version=SERVER_VERSION,
                protocol_version=self.protocol_version,
                max_message_size=self.settings.max_message_size,
            ),
        )

    def check_authentication(self) -> None:
        """The broker's periodic credentials check (authenticationRefreshCheckSeconds): an
        expired token gets an AUTH_CHALLENGE; a client that cannot refresh, or left the last
        challenge unanswered, is disconnected, as Pulsar's ServerCnx does."""
        state = self.auth_state
        if self.closed or not self.connected or state is None:
            return
        if not state.expired(self.now_ms() / 1000):
            return
        if not self.supports_auth_refresh:
            self._close(f"the credentials of role {state.role!r} expired and the client "
                        "cannot refresh them")
            return
        if self._auth_challenge_pending:
            self._close(f"role {state.role!r} did not answer the AUTH_CHALLENGE for its "
                        "expired credentials")
            return
        log.info("refreshing the expired credentials of role %r%s", state.role,
                 self.peer and f" ({self.peer})")
        self._auth_challenge_pending = True
        self._command(
            _T.AUTH_CHALLENGE, "authChallenge",
            api.CommandAuthChallenge(
                server_version=SERVER_VERSION, protocol_version=self.protocol_version,
                challenge=api.AuthData(auth_method_name=state.method,
                                       auth_data=AUTH_REFRESH_DATA),
            ),
        )

    def _auth_response(self, body: api.CommandAuthResponse) -> None:
        """The client's new credentials after an AUTH_CHALLENGE: the same role must come
        back, or the connection closes."""
        self._auth_challenge_pending = False
        previous = self.auth_state
        if previous is None:
            return
        response = body.response
        try:
            state = self.authenticator.authenticate_command(
                response.auth_method_name or previous.method, response.auth_data,
                self.peer_certificate, self.now_ms() / 1000,
            )
        except AuthenticationError as exc:
            self._error(_U64, exc.code, str(exc))
            self._close(f"authentication refresh failed: {exc}")
            return
        if state.role != previous.role:
            self._close(f"the role cannot change in an authentication refresh "
                        f"({previous.role!r} became {state.role!r})")
            return
        self.auth_state = state
        log.info("refreshed the authentication credentials of role %r", state.role)

    def _partitioned_metadata(self, body: api.CommandPartitionedTopicMetadata) -> None:
        self.authorizer.check_topic(self.role, body.topic, "lookup")
        partitions = self.service.get_partitioned_topic_metadata(body.topic)
        self._command(
            _T.PARTITIONED_METADATA_RESPONSE, "partitionMetadataResponse",
            api.CommandPartitionedTopicMetadataResponse(
                request_id=body.request_id, partitions=partitions,
                response=api.CommandPartitionedTopicMetadataResponse.Success,
            ),
        )

    def _lookup(self, body: api.CommandLookupTopic) -> None:
        self.authorizer.check_topic(self.role, body.topic, "lookup")
        TopicName.get(body.topic)
        listener = self.listeners.lookup(body.advertised_listener_name)
        response = api.CommandLookupTopicResponse(
            request_id=body.request_id,
            response=api.CommandLookupTopicResponse.Connect, authoritative=True,
        )
        if listener.broker_service_url:
            response.brokerServiceUrl = listener.broker_service_url
        if listener.broker_service_url_tls:
            response.brokerServiceUrlTls = listener.broker_service_url_tls
        self._command(_T.LOOKUP_RESPONSE, "lookupTopicResponse", response)

    def _get_topics(self, body: api.CommandGetTopicsOfNamespace) -> None:
        self.authorizer.check(self.role, body.namespace, "consume")
        names = self.service.list_topics(body.namespace)
        mode = body.mode
        if mode == api.CommandGetTopicsOfNamespace.PERSISTENT:
            names = [n for n in names if n.startswith("persistent://")]
        elif mode == api.CommandGetTopicsOfNamespace.NON_PERSISTENT:
            names = [n for n in names if n.startswith("non-persistent://")]
        response = api.CommandGetTopicsOfNamespaceResponse(request_id=body.request_id)
        if body.HasField("topics_pattern") and self._evaluates(body.topics_pattern):
            names = TopicsPattern(body.topics_pattern).filter(names)
            response.filtered = True
        topics_hash = topics_list_hash(names)
        response.topics_hash = topics_hash
        if body.HasField("topics_hash") and body.topics_hash == topics_hash:
            response.changed = False
        else:
            response.topics.extend(names)
        self._command(_T.GET_TOPICS_OF_NAMESPACE_RESPONSE, "getTopicsOfNamespaceResponse",
                      response)

    def _evaluates(self, pattern: str) -> bool:
        """Whether the broker filters by ``pattern`` (Pulsar: enabled and not too long);
        if not, the client gets the whole list and filters it itself."""
        settings = self.settings
        return settings.enable_broker_side_subscription_pattern_evaluation and (
            len(pattern) <= settings.subscription_pattern_max_length
        )

    # -- schemas --------------------------------------------------------------------------

    def _register_schema(self, topic: str, schema: api.Schema) -> bytes:
        info = SchemaInfo(
            schema.type, schema.name, schema.schema_data,
            tuple((kv.key, kv.value) for kv in schema.properties),
        )
        strategy = self.service.namespace_policies(
            TopicName.get(topic).namespace
        ).schema_compatibility_strategy
        return self.schemas.get_or_create(topic, info, strategy)

    def _get_schema(self, body: api.CommandGetSchema) -> None:
        self.authorizer.check_topic(self.role, body.topic, "lookup")
        found = self.schemas.get(
            body.topic, body.schema_version if body.HasField("schema_version") else None
        )
        if found is None:
            raise TopicNotFound(f"{body.topic} has no schema")
        info, version = found
        schema = api.Schema(name=info.name, schema_data=info.data, type=info.type)
        for key, value in info.properties:
            schema.properties.append(api.KeyValue(key=key, value=value))
        self._command(
            _T.GET_SCHEMA_RESPONSE, "getSchemaResponse",
            api.CommandGetSchemaResponse(
                request_id=body.request_id, schema=schema, schema_version=version
            ),
        )

    def _get_or_create_schema(self, body: api.CommandGetOrCreateSchema) -> None:
        self.authorizer.check_topic(self.role, body.topic, "produce")
        version = self._register_schema(body.topic, body.schema)
        self._command(
            _T.GET_OR_CREATE_SCHEMA_RESPONSE, "getOrCreateSchemaResponse",
            api.CommandGetOrCreateSchemaResponse(
                request_id=body.request_id, schema_version=version
            ),
        )

    # -- producers ------------------------------------------------------------------------

    def _producer(self, body: api.CommandProducer) -> None:
        client_id = body.producer_id
        if client_id in self.producers:
            core_id = self.producers[client_id]
            if core_id in self._waiting:  # Pulsar: the first request is still pending
                raise ServiceNotReady("Producer is already present on the connection")
            # The client repeats PRODUCER after a timeout; the producer is already open.
            self._producer_success(body.request_id, self.service.producer(core_id), None)
            return
        self.authorizer.check_topic(self.role, body.topic, "produce")
        check_producers(self.settings, len(self.producers))
        version = None
        if body.HasField("schema"):
            version = self._register_schema(body.topic, body.schema)
        elif self.schemas.get(body.topic) is not None and self.service.namespace_policies(
            TopicName.get(body.topic).namespace
        ).schema_validation_enforced:
            raise IncompatibleSchema(
                "Producers cannot connect or send message without a schema to topics with a "
                "schema if SchemaValidationEnforced is enabled"
            )
        if body.initial_subscription_name and TopicName.get(body.topic).domain == "persistent":
            # As Pulsar's ServerCnx: the producer's topic gets this durable subscription at
            # the earliest position first, unless it exists (a dead-letter topic's audit).
            self.authorizer.check_topic(self.role, body.topic, "consume")
            with contextlib.suppress(SubscriptionAlreadyExists):
                self.service.create_subscription(body.topic, body.initial_subscription_name,
                                                 MessageId.earliest)
        name = body.producer_name if body.HasField("producer_name") else None
        producer = self.service.create_producer(
            body.topic, name or None, self, address=self.peer, client_version=self.client_version,
            encrypted=body.encrypted,
            access_mode=api.ProducerAccessMode.Name(body.producer_access_mode),
            topic_epoch=body.topic_epoch if body.HasField("topic_epoch") else None,
        )
        self.producers[client_id] = producer.producer_id
        self.producer_ids[producer.producer_id] = client_id
        self._recently_closed.discard(client_id)
        if not producer.ready:
            # WaitForExclusive, in line: Pulsar answers at once that it waits, and again
            # when it gets the topic (a ProducerReady action).
            self._waiting[producer.producer_id] = (body.request_id, version)
        self._producer_success(body.request_id, producer, version)

    def _producer_success(self, request_id: int, producer: Any, version: bytes | None) -> None:
        success = api.CommandProducerSuccess(
            request_id=request_id,
            producer_name=producer.producer_name,
            last_sequence_id=_signed(producer.last_sequence_id),  # int64 on the wire
            producer_ready=producer.ready,
        )
        if version is not None:
            success.schema_version = version
        if producer.ready and producer.topic_epoch is not None:
            success.topic_epoch = producer.topic_epoch
        self._command(_T.PRODUCER_SUCCESS, "producer_success", success)

    def _producer_ready(self, action: ProducerReady) -> None:
        """A waiting producer got the topic: the second PRODUCER_SUCCESS, now ready."""
        pending = self._waiting.get(action.producer_id)
        if pending is None or action.producer_id not in self.service.producers:
            return  # closed since: its ProducerClosed answers the PRODUCER
        del self._waiting[action.producer_id]
        self._producer_success(pending[0], self.service.producer(action.producer_id),
                               pending[1])

    def _send(self, body: api.CommandSend, frame: Frame) -> None:
        client_id = body.producer_id
        core_id = self.producers.get(client_id)
        if core_id is None or (self._waiting and core_id in self._waiting):
            # Pulsar's ServerCnx.handleSend: a SEND to a producer the broker just closed
            # was on its way and is ignored; to any other one that is not ready, it closes
            # the connection.
            if client_id not in self._recently_closed:
                self._close(f"Received message, but the producer is not ready: {client_id}")
            return
        if frame.metadata is None:
            self._send_error(client_id, body.sequence_id, "UnknownError",
                             "SEND without metadata and payload")
            return
        if not frame.checksum_ok:
            self._send_error(client_id, body.sequence_id, "ChecksumError",
                             "the message's checksum does not match; nothing was stored")
            return
        try:
            metadata, in_range = read_pulsar_metadata(frame.metadata)
        except ValueError as exc:
            self._send_error(client_id, body.sequence_id, "UnknownError", f"SEND: {exc}")
            return
        if metadata.sequence_id != body.sequence_id:  # stored as the command says
            metadata = from_pulsar(with_sequence_id(frame.metadata, body.sequence_id))
            in_range = False
        if body.highest_sequence_id > body.sequence_id:
            self._highest_sequence[(core_id, body.sequence_id)] = body.highest_sequence_id
        try:
            # encrypted=None: the core reads the metadata's encryption keys only where the
            # namespace requires encryption.
            self.service.send(core_id, metadata, frame.payload or b"", encrypted=None,
                              in_range=in_range)
        except PulsarLabError as exc:
            self._highest_sequence.pop((core_id, body.sequence_id), None)
            self._send_error(client_id, body.sequence_id, exc.code, str(exc))

    def _close_producer(self, body: api.CommandCloseProducer) -> None:
        core_id = self.producers.pop(body.producer_id, None)
        if core_id is not None:
            self.producer_ids.pop(core_id, None)
            self._waiting.pop(core_id, None)  # a waiting one gives up its place in line
            self.service.close_producer(core_id)
        self._success(body.request_id)

    # -- consumers ------------------------------------------------------------------------

    def _subscribe(self, body: api.CommandSubscribe) -> None:
        client_id = body.consumer_id
        if client_id in self.consumers:
            self._success(body.request_id)  # a repeated SUBSCRIBE: already subscribed
            return
        self.authorizer.check_topic(self.role, body.topic, "consume")
        check_consumers(self.settings, len(self.consumers))
        sub_type = _SUB_TYPES.get(body.subType)
        if sub_type is None:
            raise InvalidArgument(f"unknown subscription type {body.subType}")
        if not body.force_topic_creation:
            self.service.get_topic(body.topic, create=False)
        key_shared_meta = None
        if sub_type is SubType.Key_Shared and body.HasField("keySharedMeta"):
            meta = body.keySharedMeta
            mode = (
                KeySharedMetaMode.STICKY if meta.keySharedMode == api.STICKY
                else KeySharedMetaMode.AUTO_SPLIT
            )
            key_shared_meta = KeySharedMeta(
                mode,
                tuple((r.start, r.end) for r in meta.hashRanges),
                meta.allowOutOfOrderDelivery,
            )
        # A reader's (or an Exclusive/Failover consumer's) key hash ranges, as Pulsar's
        # readers send them: sticky ranges in keySharedMeta.
        key_hash_ranges = None
        if sub_type is not SubType.Key_Shared and body.HasField("keySharedMeta"):
            key_hash_ranges = [(r.start, r.end) for r in body.keySharedMeta.hashRanges] or None
        start_id = None
        inclusive = False
        if body.HasField("start_message_id"):
            start_id, inclusive = _start_message_id(body.start_message_id)
        if body.HasField("schema"):
            self._register_schema(body.topic, body.schema)
        mark = self.service.actions_mark()
        consumer = self.service.subscribe(
            body.topic,
            body.subscription,
            body.consumer_name or None,
            sub_type,
            initial_position_earliest=body.initialPosition == api.CommandSubscribe.Earliest,
            durable=body.durable,
            priority_level=body.priority_level,
            key_shared_meta=key_shared_meta,
            key_hash_ranges=key_hash_ranges,
            start_message_id=start_id,
            start_message_id_inclusive=inclusive,
            batch_index_ack_enabled=True,
            is_reader=not body.durable,
            read_compacted=body.read_compacted,
            conn=self,
            address=self.peer,
            client_version=self.client_version,
        )
        self.consumers[client_id] = consumer.consumer_id
        self.consumer_ids[consumer.consumer_id] = client_id
        self._subscribe_success(body.request_id, consumer.consumer_id, mark)

    def _subscribe_success(self, request_id: int, core_id: int, mark: int) -> None:
        """SUCCESS after what the subscribe queued from ``mark`` on (an ACTIVE_CONSUMER_CHANGE,
        sent while Pulsar adds the consumer) but before the end-of-topic notice it queued:
        Pulsar's consumer hears the end from a read, after its SUBSCRIBE completed."""
        service = self.service
        index = service.find_action(mark, lambda action: type(action) is ReachedEndOfTopic
                                    and action.consumer_id == core_id)
        if index is None:
            self._success(request_id)
            return
        frame = encode_command(_T(type=_T.SUCCESS,
                                  success=api.CommandSuccess(request_id=request_id)))
        if index:
            service.insert_action(index, Reply(self, frame))
        else:  # nothing queued before it
            self._out.append(frame)

    def _core_consumer(self, client_id: int) -> int:
        core_id = self.consumers.get(client_id)
        if core_id is None:
            raise ConsumerNotFound(f"consumer {client_id} is not open on this connection")
        return core_id

    def _flow(self, body: api.CommandFlow) -> None:
        if body.messagePermits:
            self.service.flow(self._core_consumer(body.consumer_id), body.messagePermits)

    def _ack(self, body: api.CommandAck) -> None:
        core_id = self._core_consumer(body.consumer_id)
        ids = body.message_id  # the official client groups up to 1000 in one ACK
        positions = [(mid.ledgerId, mid.entryId) for mid in ids]
        if positions and (  # -1 comes as 2**64 - 1
            max(positions)[0] > _I64_MAX or max(positions, key=_ENTRY_ID)[1] > _I64_MAX
        ):
            positions = [(_signed(ledger), _signed(entry)) for ledger, entry in positions]
        ack_sets: dict[tuple[int, int], tuple[int, int]] = {}
        if self.service.honours_ack_sets(core_id):  # reading each id's ack set costs
            for position, mid in zip(positions, ids, strict=True):
                if mid.ack_set:
                    bits = _words_to_bits(mid.ack_set)
                    size = mid.batch_size if mid.batch_size > 0 else max(bits.bit_length(), 1)
                    ack_sets[position] = (bits, size)
        self.service.ack(
            core_id, positions,
            cumulative=body.ack_type == api.CommandAck.Cumulative,
            ack_sets=ack_sets or None,
        )
        if body.HasField("request_id"):
            self._command(
                _T.ACK_RESPONSE, "ackResponse",
                api.CommandAckResponse(consumer_id=body.consumer_id, request_id=body.request_id),
            )

    def _redeliver(self, body: api.CommandRedeliverUnacknowledgedMessages) -> None:
        core_id = self._core_consumer(body.consumer_id)
        positions = None
        if body.message_ids:
            positions = [(_signed(m.ledgerId), _signed(m.entryId)) for m in body.message_ids]
        # pulsarlab's client names why (nack, ack timeout) and when, for the event stream.
        requested_at = list(body.pulsarlab_requested_at) or None
        if requested_at is not None and len(requested_at) != len(positions or ()):
            requested_at = None
        self.service.redeliver_unacknowledged(
            core_id, positions, reason=body.pulsarlab_reason or "consumer_request",
            requested_at=requested_at,
        )

    def _close_consumer(self, body: api.CommandCloseConsumer) -> None:
        core_id = self.consumers.pop(body.consumer_id, None)
        if core_id is not None:
            self.consumer_ids.pop(core_id, None)
            self.service.close_consumer(core_id)
        self._success(body.request_id)

    def _unsubscribe(self, body: api.CommandUnsubscribe) -> None:
        core_id = self._core_consumer(body.consumer_id)
        self.service.unsubscribe(core_id)
        self.consumers.pop(body.consumer_id, None)
        self.consumer_ids.pop(core_id, None)
        self._success(body.request_id)

    def _seek(self, body: api.CommandSeek) -> None:
        core_id = self._core_consumer(body.consumer_id)
        if body.HasField("message_id"):
            message_id, _ = _start_message_id(body.message_id)
            self.service.seek(core_id, message_id=message_id)
        elif body.HasField("message_publish_time"):
            self.service.seek(core_id, publish_time=body.message_publish_time)
        else:
            raise InvalidArgument("SEEK needs a message id or a publish time")
        # The core disconnected the subscription's consumers; this one hears it before the
        # SUCCESS, and nothing queued for it before the seek reaches it any more.
        self.consumers.pop(body.consumer_id, None)
        self.consumer_ids.pop(core_id, None)
        self._command(
            _T.CLOSE_CONSUMER, "close_consumer",
            api.CommandCloseConsumer(consumer_id=body.consumer_id, request_id=_U64),
        )
        self._success(body.request_id)

    def _get_last_message_id(self, body: api.CommandGetLastMessageId) -> None:
        last = self.service.consumer_last_message_id(self._core_consumer(body.consumer_id))
        md_ledger, md_entry = last.mark_delete_position
        self._command(
            _T.GET_LAST_MESSAGE_ID_RESPONSE, "getLastMessageIdResponse",
            api.CommandGetLastMessageIdResponse(
                request_id=body.request_id,
                last_message_id=api.MessageIdData(
                    ledgerId=last.ledger_id & _U64, entryId=last.entry_id & _U64,
                    partition=last.partition, batch_index=last.batch_index,
                ),
                consumer_mark_delete_position=api.MessageIdData(
                    ledgerId=md_ledger & _U64, entryId=md_entry & _U64, partition=last.partition
                ),
            ),
        )

    def _consumer_stats(self, body: api.CommandConsumerStats) -> None:
        stats = self.service.consumer_stats(self._core_consumer(body.consumer_id))
        self._command(
            _T.CONSUMER_STATS_RESPONSE, "consumerStatsResponse",
            api.CommandConsumerStatsResponse(request_id=body.request_id, address=self.peer,
                                             **stats),
        )


def _request_id(body: Any, field: str) -> int:
    """The request id of a command's body (``_U64`` for one that has none: SEND, FLOW …),
    looked up only for an error answer."""
    return getattr(body, "request_id", _U64) if field != "ack" else _U64


def _pulsar_entry(
    topic: str, position: tuple[int, int], data: bytes, max_size: int
) -> tuple[bytes, bytes]:
    """Pulsar metadata and payload of a stored entry: as stored (what the client sent);
    an entry of the first layout is converted. One that cannot be laid out as Pulsar's (a
    ZeroMQ batch with a garbage payload, a damaged entry) goes out raw, as Pulsar's broker
    sends what it stored: the official client discards (and acks) what it cannot read, so
    the entry is not redelivered forever."""
    try:
        parts = pulsar_parts(data)
        if parts is not None:
            return parts
        md, payload = decode_entry(data)
    except Exception as exc:  # msgpack raises several types on a damaged entry
        log.warning("%s entry %d:%d is unreadable (%s); delivered raw", topic, *position, exc)
        try:
            publish_time = max(0, read_header(data).publish_time)
        except ValueError:
            publish_time = 0
        return raw_to_pulsar(MessageMetadata(publish_time=publish_time), data)
    try:
        return to_pulsar(md, payload, max_size)
    except Exception as exc:  # codecs and protobuf raise their own types on bad input
        log.warning("%s entry %d:%d cannot be laid out for a Pulsar consumer (%s: %s); "
                    "delivered raw", topic, *position, type(exc).__name__, exc)
        return raw_to_pulsar(md, payload)


def _start_message_id(mid: api.MessageIdData) -> tuple[MessageId, bool]:
    """The core id and inclusiveness of a start/seek message id, as Pulsar's broker reads
    it: reading starts AT the id's entry (the batch it is in may be partly unread), and the
    client discards what it should not see (the id itself, unless inclusive)."""
    ledger, entry = _signed(mid.ledgerId), _signed(mid.entryId)
    if ledger < 0 or entry < 0:
        return MessageId.earliest, False
    if ledger == _I64_MAX and entry == _I64_MAX:
        return MessageId.latest, False
    batch = mid.batch_index if mid.HasField("batch_index") else -1
    return MessageId(mid.partition, ledger, entry, batch), True


def topics_list_hash(names: list[str]) -> str:
    """A hash of a topic list, compared by the client to skip unchanged answers."""
    return format(google_crc32c.value("".join(sorted(names)).encode()), "x")


_HANDLERS: dict[int, tuple[Callable[[PulsarSession, Any], None], str]] = {
    _T.PARTITIONED_METADATA: (PulsarSession._partitioned_metadata, "partitionMetadata"),
    _T.LOOKUP: (PulsarSession._lookup, "lookupTopic"),
    _T.AUTH_RESPONSE: (PulsarSession._auth_response, "authResponse"),
    _T.PRODUCER: (PulsarSession._producer, "producer"),
    _T.SEND: (PulsarSession._send, "send"),
    _T.CLOSE_PRODUCER: (PulsarSession._close_producer, "close_producer"),
    _T.SUBSCRIBE: (PulsarSession._subscribe, "subscribe"),
    _T.FLOW: (PulsarSession._flow, "flow"),
    _T.ACK: (PulsarSession._ack, "ack"),
    _T.REDELIVER_UNACKNOWLEDGED_MESSAGES: (
        PulsarSession._redeliver, "redeliverUnacknowledgedMessages"
    ),
    _T.CLOSE_CONSUMER: (PulsarSession._close_consumer, "close_consumer"),
    _T.UNSUBSCRIBE: (PulsarSession._unsubscribe, "unsubscribe"),
    _T.SEEK: (PulsarSession._seek, "seek"),
    _T.GET_LAST_MESSAGE_ID: (PulsarSession._get_last_message_id, "getLastMessageId"),
    _T.CONSUMER_STATS: (PulsarSession._consumer_stats, "consumerStats"),
    _T.GET_TOPICS_OF_NAMESPACE: (PulsarSession._get_topics, "getTopicsOfNamespace"),
    _T.GET_SCHEMA: (PulsarSession._get_schema, "getSchema"),
    _T.GET_OR_CREATE_SCHEMA: (PulsarSession._get_or_create_schema, "getOrCreateSchema"),
}
