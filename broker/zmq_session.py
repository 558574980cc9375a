"""The ZeroMQ side of the broker as a sans-I/O protocol: commands in, frames out.

:class:`ServerCnx` is one client connection's state (a DEALER identity: handshake, role,
the client's producer and consumer ids mapped to the core's). :class:`ZmqProtocol` owns the
connections and turns decoded ZeroMQ commands (:mod:`.wire`) into core calls and the core's
actions into frames; it never touches a socket: frames leave through the ``send`` callable
the shell gives it (:class:`~.server.Broker` writes them to its ROUTER socket; tests collect
them). Its sibling for Pulsar's binary protocol is :class:`~.pulsar_protocol.PulsarSession`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import zmq

from . import wire
from .actions import (
    ActiveConsumerChange,
    ConsumerClosed,
    Deliver,
    ProducerClosed,
    ProducerReady,
    ReachedEndOfTopic,
    SendError,
    SendReceipt,
)
from .admin_handler import AdminHandler
from .consumer import KeySharedMeta, KeySharedMetaMode, SubType
from .entry import FLAG_PULSAR_BATCH, MessageMetadata, decode_entry, encode_legacy_entry
from .errors import AuthenticationError, ConsumerNotFound, InvalidArgument, PulsarLabError
from .limits import check_connections, check_consumers, check_producers
from .message_id import MessageId
from .producer_access import ProducerAccessMode, RecentlyClosed, waiting_refused
from .pulsar_protocol.metadata import pulsar_entry_for_zmq, raw_for_zmq
from .security import Authenticator
from .service import BrokerService
from .settings import BrokerSettings
from .transports.zmq import peer_address as _peer_address
from .transports.zmq import source_fd as _source_fd

log = logging.getLogger("pulsarlab.broker.server")

__all__ = ["SERVER_VERSION", "ServerCnx", "ZmqProtocol"]

SERVER_VERSION = "pulsarlab-0.1"
_MAX_IGNORED = 100_000  # refused identities remembered (oldest forgotten first)
_HANDLERS = {name: f"_cmd_{name.lower()}" for name in wire.CLIENT_COMMANDS}
_Frame = zmq.Frame


@dataclass(eq=False)
class ServerCnx:
    """One client connection (a DEALER identity) and what it opened."""

    identity: bytes
    connected: bool = False
    role: str | None = None  # the token's subject when authentication is on
    fd: int | None = None  # its TCP socket (authentication on: dropped when that closes)
    last_seen_ms: int = 0
    address: str = ""  # the client's /host:port, for stats
    client_version: str = ""  # as its CONNECT gave it, for stats
    producers: dict[int, int] = field(default_factory=dict)  # client id -> core id
    consumers: dict[int, int] = field(default_factory=dict)  # client id -> core id
    consumer_ids: dict[int, int] = field(default_factory=dict)  # core id -> client id
    producer_ids: dict[int, int] = field(default_factory=dict)  # core id -> client id
    # WaitForExclusive producers in line: core id -> the PRODUCER's request id, answered
    # when the producer gets the topic (the msgpack wire has one answer per request).
    waiting: dict[int, int] = field(default_factory=dict)
    recently_closed: RecentlyClosed = field(default_factory=RecentlyClosed)


class ZmqProtocol:
    """ZeroMQ commands -> core calls, core actions -> frames, for every connection."""

    def __init__(
        self,
        service: BrokerService,
        settings: BrokerSettings,
        authenticator: Authenticator,
        *,
        send: Callable[[ServerCnx, list], None],
        flush: Callable[[], None],
        now_ms: Callable[[], int],
        open_connections: Callable[[], int] | None = None,
    ) -> None:
        """``send(conn, frames)`` writes frames to a connection; ``flush()`` has the shell
        hand out the core's pending actions now (ADMIN needs that); ``open_connections()``
        counts every client connection the broker serves (for ``max_connections``)."""
        self.service = service
        self.settings = settings
        self.authenticator = authenticator
        self.admin = AdminHandler(service)
        self.connections: dict[bytes, ServerCnx] = {}
        self._ignored: dict[bytes, int] = {}  # refused identities -> when (frames dropped)
        self.dropped_from_refused = 0  # messages dropped from refused connections
        self._send = send
        self._flush = flush
        self._now_ms = now_ms
        self._open_connections = open_connections or (lambda: len(self.connections))
        self._header_frame: Any = None
        self._connect_frame: Any = None  # the CONNECT being handled (its socket's address)

    def serves(self, identity: bytes) -> bool:
        """Whether messages from ``identity`` are this protocol's (a connection, or one
        refused and ignored)."""
        return identity in self.connections or identity in self._ignored

    def forget_refused(self, before_ms: int) -> None:
        """Stop ignoring identities refused before ``before_ms``."""
        if self._ignored:
            self._ignored = {i: t for i, t in self._ignored.items() if t > before_ms}

    def _reply_error(self, conn: ServerCnx, request_id: int, code: str, message: str) -> None:
        self._send(conn, wire.encode("ERROR", request_id, code=code, message=message))

    def handle(self, frames: list, now_ms: int, header_frame: Any = None) -> None:
        """One message read from the ROUTER: the identity frame, then the command's.

        ``now_ms`` is when its burst was read (the connection's "last seen");
        ``header_frame`` the received header frame when the shell wants CONNECT to record
        which TCP socket a connection came over (authentication on).
        """
        if len(frames) < 2:
            log.warning("dropped a message with no header frame")
            return
        identity = frames[0]
        self._header_frame = header_frame
        conn = self.connections.get(identity)
        if conn is None:
            if identity in self._ignored:
                self.dropped_from_refused += 1
                return  # refused once already: everything else it sends is dropped
            conn = ServerCnx(identity)
            self.connections[identity] = conn
        conn.last_seen_ms = now_ms
        send = None
        try:
            header = wire.unpack_header(frames[1])
            if conn.connected and len(frames) == 3:
                send = wire.send_fields(header)  # the hot path: a well-formed SEND
            if send is None:
                command = wire.validate(header, frames[1:], wire.CLIENT_COMMANDS)
        except wire.ProtocolError as exc:
            if not conn.connected and self.authenticator.enabled:
                self._refuse(conn, exc.request_id, AuthenticationError(
                    "authentication required: the first message must be CONNECT with a token"
                ))
                return
            log.info("protocol error from a client: %s", exc)
            self._reply_error(conn, exc.request_id, "InvalidMessage", str(exc))
            return
        if send is not None:
            name = "SEND"
            request_id = send[0]
        else:
            name = command.name
            request_id = command.request_id
            if name == "SEND" and conn.connected:
                handler = self._cmd_send
            else:
                if not conn.connected and name != "CONNECT" and self.authenticator.enabled:
                    self._refuse(conn, request_id, AuthenticationError(
                        f"authentication required: {name} before CONNECT"
                    ))
                    return
                if name == "PONG":
                    return
                if name == "PING":
                    self._send(conn, wire.encode("PONG", request_id))
                    return
                if name == "CONNECT":
                    self._connect_frame = frames[1]
                if name != "CONNECT" and not conn.connected:
                    self._reply_error(
                        conn, request_id, "NotConnected",
                        f"{name} before CONNECT: send CONNECT first",
                    )
                    return
                handler = getattr(self, _HANDLERS[name])
        try:
            if send is not None:
                self._publish(conn, send, frames[2])
            else:
                handler(conn, command)
        except PulsarLabError as exc:
            self._reply_error(conn, request_id, exc.code, str(exc))
        except wire.ProtocolError as exc:
            self._reply_error(conn, request_id, "InvalidMessage", str(exc))
        except (ValueError, TypeError, KeyError) as exc:
            self._reply_error(
                conn, request_id, "InvalidMessage", f"{name}: {type(exc).__name__}: {exc}"
            )
        except Exception as exc:  # a bug must cost one request, never the broker
            log.exception("internal error while handling %s", name)
            self._reply_error(
                conn, request_id, "UnknownError",
                f"{name}: internal error ({type(exc).__name__}); the broker logged it",
            )

    def _success(self, conn: ServerCnx, command: wire.Command, result: Any = None) -> None:
        if command.request_id or result is not None:
            self._send(conn, wire.encode("SUCCESS", command.request_id, result=result))

    def _refuse(self, conn: ServerCnx, request_id: int, exc: PulsarLabError) -> None:
        """Send one ERROR, forget the connection and drop what it sends from now on."""
        self._reply_error(conn, request_id, exc.code, str(exc))
        self.service.close_connection(conn)
        self.connections.pop(conn.identity, None)
        if len(self._ignored) >= _MAX_IGNORED:
            del self._ignored[next(iter(self._ignored))]
        self._ignored[conn.identity] = self._now_ms()
        log.info("refused a client: %s", exc)

    def _cmd_connect(self, conn: ServerCnx, command: wire.Command) -> None:
        try:
            if not conn.connected:
                check_connections(self.settings, self._open_connections())
            if self.authenticator.enabled:
                method = command.get("auth_method_name")
                conn.role = (
                    self.authenticator.authenticate(command.get("auth_token")) if not method
                    else self.authenticator.authenticate_command(
                        method, str(command.get("auth_data") or "").encode()).role
                )
                conn.fd = _source_fd(self._header_frame)
        except PulsarLabError as exc:
            self._refuse(conn, command.request_id, exc)
            return
        conn.connected = True
        version = command.get("client_version")
        conn.client_version = version if isinstance(version, str) else ""
        conn.address = _peer_address(self._connect_frame)
        self._connect_frame = None
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

    def _cmd_producer(self, conn: ServerCnx, command: wire.Command) -> None:
        client_id = command["producer_id"]
        if client_id in conn.producers:
            raise InvalidArgument(f"producer id {client_id} is already in use on this connection")
        self.service.authorizer.check_topic(conn.role, command["topic"], "produce")
        check_producers(self.settings, len(conn.producers))
        producer = self.service.create_producer(
            command["topic"], command.get("producer_name"), conn,
            address=conn.address, client_version=conn.client_version,
            access_mode=command.get("access_mode") or ProducerAccessMode.Shared,
            topic_epoch=command.get("topic_epoch"),
        )
        conn.producers[client_id] = producer.producer_id
        conn.producer_ids[producer.producer_id] = client_id
        conn.recently_closed.discard(client_id)
        if producer.ready:
            self._producer_success(conn, command.request_id, client_id, producer)
        else:
            conn.waiting[producer.producer_id] = command.request_id

    def _producer_success(self, conn: ServerCnx, request_id: int, client_id: int,
                          producer: Any) -> None:
        self._send(
            conn,
            wire.encode(
                "PRODUCER_SUCCESS",
                request_id,
                producer_id=client_id,
                producer_name=producer.producer_name,
                last_sequence_id=producer.last_sequence_id,
                topic_epoch=producer.topic_epoch,
            ),
        )

    def _cmd_send(self, conn: ServerCnx, command: wire.Command) -> None:
        fields = command.fields
        self._publish(
            conn,
            (command.request_id, fields["producer_id"], fields["sequence_id"], fields["metadata"]),
            command.payloads[0],
        )

    def _publish(self, conn: ServerCnx, send: tuple[int, int, int, dict], payload: Any) -> None:
        """A SEND's message, from its checked ``(request_id, producer_id, sequence_id,
        metadata)``, to the core."""
        request_id, client_id, sequence_id, meta = send
        core_id = conn.producers.get(client_id)
        if core_id is None or core_id in conn.waiting:
            self._send_to_closed_producer(conn, request_id, client_id, sequence_id)
            return
        try:
            # A SEND that is not valid is answered with SEND_ERROR, as any refused send.
            if meta:
                try:
                    metadata = MessageMetadata.from_dict(meta)
                except (TypeError, ValueError) as exc:
                    raise InvalidArgument(f"SEND: {exc}; nothing was stored") from None
            else:
                metadata = MessageMetadata()  # nothing to check
            metadata.sequence_id = sequence_id
            payload = payload.bytes if type(payload) is _Frame else bytes(payload)
            self.service.send(core_id, metadata, payload)
        except PulsarLabError as exc:
            self._send(
                conn,
                wire.encode(
                    "SEND_ERROR", request_id, producer_id=client_id,
                    sequence_id=sequence_id, code=exc.code, message=str(exc),
                ),
            )

    def _send_to_closed_producer(self, conn: ServerCnx, request_id: int, client_id: int,
                                 sequence_id: int) -> None:
        """Pulsar's ServerCnx.handleSend for a producer that is not ready: the connection is
        closed, unless the broker had just closed that producer (the SEND was on its way).
        Pulsar's client re-sends its pending messages when it re-creates the producer, so
        Pulsar ignores that SEND; the msgpack wire's client re-sends on this SEND_ERROR."""
        if client_id in conn.recently_closed:
            self._send(
                conn,
                wire.encode(
                    "SEND_ERROR", request_id, producer_id=client_id,
                    sequence_id=sequence_id, code="ProducerNotFound",
                    message=f"producer {client_id} was closed by the broker",
                ),
            )
            return
        reason = f"Received message, but the producer is not ready: {client_id}"
        log.info("closing a ZeroMQ connection: %s", reason)
        self._reply_error(conn, request_id, "NotAllowedError", f"{reason}; connection closed")
        self._drop(conn)

    def _cmd_close_producer(self, conn: ServerCnx, command: wire.Command) -> None:
        client_id = command["producer_id"]
        core_id = conn.producers.pop(client_id, None)
        if core_id is not None:
            conn.producer_ids.pop(core_id, None)
            conn.waiting.pop(core_id, None)  # a waiting one gives up its place in line
            self.service.close_producer(core_id)
        self._success(conn, command)

    def _cmd_subscribe(self, conn: ServerCnx, command: wire.Command) -> None:
        client_id = command["consumer_id"]
        if client_id in conn.consumers:
            # As Pulsar's ServerCnx: a repeated SUBSCRIBE (a client retrying after a
            # time-out) finds its consumer already subscribed and succeeds.
            name = self.service.consumer_stats(conn.consumers[client_id])["consumerName"]
            self._send(conn, wire.encode("SUCCESS", command.request_id, result=name))
            return
        self.service.authorizer.check_topic(conn.role, command["topic"], "consume")
        check_consumers(self.settings, len(conn.consumers))
        try:
            sub_type = SubType(command["sub_type"])
        except ValueError:
            raise InvalidArgument(f"unknown subscription type {command['sub_type']!r}") from None
        key_shared_meta = None
        if sub_type is SubType.Key_Shared:
            mode = command.get("key_shared_mode") or "AUTO_SPLIT"
            try:
                ks_mode = KeySharedMetaMode(mode)
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
            read_compacted=bool(command.get("read_compacted", False)),
            conn=conn,
            address=conn.address,
            client_version=conn.client_version,
        )
        conn.consumers[client_id] = consumer.consumer_id
        conn.consumer_ids[consumer.consumer_id] = client_id
        self._send(conn, wire.encode("SUCCESS", command.request_id, result=consumer.consumer_name))

    def _cmd_flow(self, conn: ServerCnx, command: wire.Command) -> None:
        self.service.flow(self._core_consumer(conn, command), command["permits"])
        self._success(conn, command)

    def _cmd_ack(self, conn: ServerCnx, command: wire.Command) -> None:
        core_id = self._core_consumer(conn, command)
        position_list = wire.position_list
        positions = [
            (p[0], p[1])  # position_list()'s common case, without a call per position
            if type(p) is list and len(p) == 2 and type(p[0]) is int and type(p[1]) is int
            else position_list(p)
            for p in command["positions"]
        ]
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
        self.service.ack(
            core_id, positions, cumulative=bool(command.get("cumulative", False)), ack_sets=ack_sets
        )
        self._success(conn, command)

    def _cmd_redeliver_unacknowledged(self, conn: ServerCnx, command: wire.Command) -> None:
        core_id = self._core_consumer(conn, command)
        positions = command.get("positions")
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

    def _cmd_close_consumer(self, conn: ServerCnx, command: wire.Command) -> None:
        client_id = command["consumer_id"]
        core_id = conn.consumers.pop(client_id, None)
        if core_id is not None:
            conn.consumer_ids.pop(core_id, None)
            self.service.close_consumer(core_id)
        self._success(conn, command)

    def _cmd_unsubscribe(self, conn: ServerCnx, command: wire.Command) -> None:
        core_id = self._core_consumer(conn, command)
        self.service.unsubscribe(core_id)
        client_id = conn.consumer_ids.pop(core_id, None)
        if client_id is not None:
            conn.consumers.pop(client_id, None)
        self._success(conn, command)

    def _cmd_seek(self, conn: ServerCnx, command: wire.Command) -> None:
        core_id = self._core_consumer(conn, command)
        mid = command.get("message_id")
        if mid is not None:
            if len(mid) != 4 or not all(isinstance(v, int) for v in mid):
                raise InvalidArgument("message_id must be [ledger, entry, partition, batch]")
            position = self.service.seek(core_id, message_id=MessageId(mid[2], mid[0], mid[1],
                                                                       mid[3]))
        elif command.get("publish_time") is not None:
            position = self.service.seek(core_id, publish_time=command["publish_time"])
        else:
            raise InvalidArgument("SEEK needs message_id or publish_time")
        # The core disconnected the subscription's consumers (Pulsar's rule); this one hears
        # it before the SUCCESS, which names the position it subscribes again from, and
        # nothing queued for it before the seek reaches it any more.
        client_id = command["consumer_id"]
        conn.consumers.pop(client_id, None)
        conn.consumer_ids.pop(core_id, None)
        self._send(conn, wire.encode("CLOSE_CONSUMER", 0, consumer_id=client_id, reason="seek"))
        self._send(conn, wire.encode("SUCCESS", command.request_id, result=list(position)))

    def _cmd_get_last_message_id(self, conn: ServerCnx, command: wire.Command) -> None:
        last = self.service.consumer_last_message_id(self._core_consumer(conn, command))
        result = [last.ledger_id, last.entry_id, last.partition, last.batch_index]
        self._send(
            conn,
            wire.encode(
                "SUCCESS", command.request_id, result=result,
                mark_delete_position=list(last.mark_delete_position),
            ),
        )

    def _cmd_partitioned_metadata(self, conn: ServerCnx, command: wire.Command) -> None:
        self.service.authorizer.check_topic(conn.role, command["topic"], "lookup")
        n = self.service.get_partitioned_topic_metadata(command["topic"])
        self._send(conn, wire.encode("SUCCESS", command.request_id, result=n))

    def _cmd_get_topics(self, conn: ServerCnx, command: wire.Command) -> None:
        self.service.authorizer.check(conn.role, command["namespace"], "consume")
        names = self.service.list_topics(
            command["namespace"], bool(command.get("include_system", False))
        )
        self._send(conn, wire.encode("SUCCESS", command.request_id, result=names))

    def _cmd_admin(self, conn: ServerCnx, command: wire.Command) -> None:
        self.service.authorizer.check_admin(conn.role, command["op"], command.get("args") or {})
        result = self.admin.call(command["op"], command.get("args") or {})
        self._flush()  # what the call told other clients (unload, terminate) goes out first
        self._send(conn, wire.encode("SUCCESS", command.request_id, result=result))

    def _core_consumer(self, conn: ServerCnx, command: wire.Command) -> int:
        client_id = command["consumer_id"]
        core_id = conn.consumers.get(client_id)
        if core_id is None:
            raise ConsumerNotFound(f"consumer {client_id} is not open on this connection")
        return core_id

    def handle_actions(self, actions: list) -> None:
        """Frames for the core's actions to this protocol's connections, in order.

        Consecutive receipts for one producer travel as one ``SEND_RECEIPTS`` message, and
        consecutive deliveries to one consumer as one ``MESSAGE`` (the dispatcher hands
        entries out in turns of a few at a time; the frames need not follow them).
        """
        connections = self.connections
        # The one message being gathered: receipts for (conn, producer) or entries for
        # (conn, consumer); sent as soon as any other action comes, so every push keeps
        # the order the core queued it in.
        receipts: list[tuple[int, int, int, int]] = []
        receipts_to: tuple[ServerCnx, int] | None = None
        delivered: list = []
        delivered_to: tuple[ServerCnx, int, str] | None = None
        # The (connection, core producer id) of the receipt just gathered: the next receipt
        # of the same producer, the common case, is gathered without any lookup.
        receipt_conn: Any = None
        receipt_producer = 0
        for action in actions:
            if (
                type(action) is SendReceipt and action[1] is receipt_conn
                and action[0] == receipt_producer
            ):
                receipts.append(action[2:])  # (sequence_id, ledger_id, entry_id, partition)
                continue
            receipt_conn = None
            conn = action.conn
            if conn.identity not in connections:
                continue
            kind = type(action)
            if kind is SendReceipt:
                client_id = conn.producer_ids.get(action.producer_id)
                if client_id is None:
                    continue
                if delivered:
                    self._send_delivered(delivered_to, delivered)
                    delivered = []
                    delivered_to = None
                if receipts_to is None or receipts_to[0] is not conn or receipts_to[1] != client_id:
                    if receipts:
                        self._send_receipts(receipts_to, receipts)
                        receipts = []
                    receipts_to = (conn, client_id)
                receipts.append(action[2:])
                receipt_conn, receipt_producer = conn, action.producer_id
                continue
            if kind is Deliver:
                client_id = conn.consumer_ids.get(action.consumer_id)
                if client_id is None:
                    continue
                if receipts:
                    self._send_receipts(receipts_to, receipts)
                    receipts = []
                    receipts_to = None
                if (
                    delivered_to is None or delivered_to[0] is not conn
                    or delivered_to[1] != client_id
                ):
                    if delivered:
                        self._send_delivered(delivered_to, delivered)
                        delivered = []
                    delivered_to = (conn, client_id, action.topic)
                delivered += action.entries
                continue
            # Keep every push in the order the core queued it.
            if receipts:
                self._send_receipts(receipts_to, receipts)
                receipts = []
                receipts_to = None
            if delivered:
                self._send_delivered(delivered_to, delivered)
                delivered = []
                delivered_to = None
            if isinstance(action, SendError):
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
            elif isinstance(action, ProducerClosed):
                self._producer_closed(conn, action)
            elif isinstance(action, ProducerReady):
                request_id = conn.waiting.get(action.producer_id)
                client_id = conn.producer_ids.get(action.producer_id)
                # Closed since, its ProducerClosed answers the PRODUCER.
                if (request_id is not None and client_id is not None
                        and action.producer_id in self.service.producers):
                    del conn.waiting[action.producer_id]
                    self._producer_success(conn, request_id, client_id,
                                           self.service.producer(action.producer_id))
            elif isinstance(action, ReachedEndOfTopic):
                client_id = conn.consumer_ids.get(action.consumer_id)
                if client_id is not None:
                    self._send(
                        conn, wire.encode("REACHED_END_OF_TOPIC", 0, consumer_id=client_id)
                    )
        if receipts:
            self._send_receipts(receipts_to, receipts)
        if delivered:
            self._send_delivered(delivered_to, delivered)

    def _producer_closed(self, conn: ServerCnx, action: ProducerClosed) -> None:
        """CLOSE_PRODUCER for a producer the broker closed; a waiting one's PRODUCER is
        answered with the error instead."""
        client_id = conn.producer_ids.pop(action.producer_id, None)
        if client_id is None:
            return
        conn.producers.pop(client_id, None)
        request_id = conn.waiting.pop(action.producer_id, None)
        if request_id is not None:
            error = waiting_refused(action.reason)
            self._reply_error(conn, request_id, error.code, str(error))
            return
        conn.recently_closed.add(client_id)
        self._send(
            conn, wire.encode("CLOSE_PRODUCER", 0, producer_id=client_id, reason=action.reason)
        )

    def _send_delivered(self, to: tuple[ServerCnx, int, str] | None, entries: list) -> None:
        """One MESSAGE with ``entries`` (:class:`DeliveredEntry`) for one consumer.

        The header map is built directly: the same frame as :func:`wire.encode` gives,
        without its keyword-argument detour. A failure here costs this connection only.
        """
        assert to is not None
        try:
            self._message(to, entries)
        except Exception:  # a bug must cost this connection, never the broker
            log.exception("internal error delivering %s entries %s; dropping the client",
                          to[2], [list(e.position) for e in entries[:10]])
            self._drop(to[0])

    def _drop(self, conn: ServerCnx) -> None:
        """Forget a connection the broker can no longer serve (as after missed heart-beats):
        its consumers' unacked messages go to others, its next command finds no session."""
        self.connections.pop(conn.identity, None)
        self.service.close_connection(conn)

    def _message(self, to: tuple[ServerCnx, int, str], entries: list) -> None:
        conn, client_id, topic = to
        # Unpacked by position, not by name: a tuple's fields read faster that way.
        header = wire.pack_header({
            "v": wire.PROTOCOL_VERSION, "cmd": "MESSAGE", "rid": 0, "consumer_id": client_id,
            "entries": [
                (ledger_id, entry_id, partition, redelivery_count, ack_set)
                for (ledger_id, entry_id), partition, redelivery_count, _, ack_set in entries
            ],
        })
        frames = [header]
        frames += [
            _zmq_layout(data, topic, position, self.settings.max_message_size)
            if data[1] & FLAG_PULSAR_BATCH else data
            for position, _, _, data, _ in entries
        ]
        self._send(conn, frames)

    def _send_receipts(
        self, to: tuple[ServerCnx, int] | None, receipts: list[tuple[int, int, int, int]]
    ) -> None:
        assert to is not None
        try:
            self._receipts(to, receipts)
        except Exception:  # a bug must cost this connection, never the broker
            log.exception("internal error sending %d receipts; dropping the client",
                          len(receipts))
            self._drop(to[0])

    def _receipts(self, to: tuple[ServerCnx, int], receipts: list[tuple[int, int, int, int]]
                  ) -> None:
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


def _zmq_layout(
    data: bytes, topic: str, position: tuple[int, int], max_size: int
) -> bytes:
    """An entry holding a batch in Pulsar's layout, re-laid for a ZeroMQ consumer; one
    that cannot be (encrypted, corrupt) goes as one raw message (:func:`raw_for_zmq`)."""
    try:
        metadata, payload = decode_entry(data)
    except Exception as exc:  # msgpack raises several types on a damaged entry
        log.warning("%s entry %d:%d is unreadable (%s); delivered as stored", topic, *position,
                    exc)
        return data
    try:
        metadata, payload = pulsar_entry_for_zmq(metadata, payload, max_size)
    except Exception as exc:  # codecs and protobuf raise their own types on bad input
        log.warning("%s entry %d:%d: a pulsar:// batch that cannot be re-laid for a ZeroMQ "
                    "consumer (%s: %s); delivered as one raw message", topic, *position,
                    type(exc).__name__, exc)
        metadata, payload = raw_for_zmq(metadata, payload)
    return encode_legacy_entry(metadata, payload)


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
