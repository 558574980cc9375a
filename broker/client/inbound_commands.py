"""What the brokers send, as the ``handle*`` methods of Java's ``ClientCnx``.

A read's frames are handled in order: a burst's ``MESSAGE``\\ s reach each consumer as one
list (one queue hand-over, not one per entry); receipts, send errors and the broker's
notices (``CLOSE_PRODUCER``, ``CLOSE_CONSUMER``, ``ACTIVE_CONSUMER_CHANGE``,
``REACHED_END_OF_TOPIC``) go to their producer's or consumer's ``on_<name>`` as a
:class:`~.connection.Command`; ``CONNECTED``, ``PING`` and ``AUTH_CHALLENGE`` are the
socket's own; anything else answers a request (:mod:`.pending_requests`).
"""

from __future__ import annotations

import logging
from typing import Any

from ..pulsar_protocol import PulsarApi_pb2 as pb
from ..pulsar_protocol.framing import MAX_FRAME_OVERHEAD, Frame, encode_command
from .client_cnx import ClientCnx
from .connection import Command
from .connection_pool import ConnectionPool
from .exceptions import AuthenticationError, AuthorizationError, ConnectError
from .pulsar_commands import error_for, signed, words_to_bits

__all__ = ["InboundCommands"]

log = logging.getLogger("pulsarlab.client")

_T = pb.BaseCommand.Type
Deliveries = dict[int, list[tuple[tuple, bytes, bytes]]]


class InboundCommands(ConnectionPool):
    """Hands what a broker sent to its producer, consumer, request or socket."""

    def _producer_lost(self, cnx: ClientCnx, producer_id: int) -> None:
        """The broker closed the producer (or its socket is gone)."""

    def _consumer_lost(self, cnx: ClientCnx, consumer_id: int) -> None:
        """The broker closed the consumer (or its socket is gone)."""

    def _handle_frames(self, cnx: ClientCnx, frames: list[Frame]) -> None:
        deliveries: Deliveries = {}
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

    def _deliver(self, deliveries: Deliveries) -> None:
        for consumer_id, entries in deliveries.items():
            handler = self._consumers.get(consumer_id)
            if handler is None:
                continue
            try:
                handler.on_entries(entries)
            except Exception:
                log.exception("error delivering messages to consumer %d", consumer_id)

    @staticmethod
    def _push(handlers: dict[int, Any], name: str, **fields: Any) -> None:
        """Hand a push to its producer's or consumer's ``on_<name>`` (if it is still open)."""
        ident = fields.get("producer_id", fields.get("consumer_id"))
        handler = handlers.get(ident)
        if handler is not None:
            getattr(handler, f"on_{name.lower()}")(Command(name, 0, fields))

    def _dispatch_frame(self, cnx: ClientCnx, frame: Frame) -> None:
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
            self._connected(cnx, cmd.connected)
            return
        if t == _T.AUTH_CHALLENGE:
            cnx.outbox.append(encode_command(self._auth_response()))
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
        if not self._requests.answer(frame) and t == _T.ERROR:
            log.warning("broker error: %s: %s", pb.ServerError.Name(cmd.error.error),
                        cmd.error.message)

    def _connected(self, cnx: ClientCnx, connected: Any) -> None:
        """CONNECTED: the socket is ready, with the broker's largest message size."""
        cnx.ready = True
        if connected.max_message_size > 0:
            cnx.max_message_size = connected.max_message_size
            cnx.decoder.max_frame_size = cnx.max_message_size + MAX_FRAME_OVERHEAD
            if cnx.url == self.service_url:
                self.max_message_size = cnx.max_message_size
        waiting, cnx.waiting = cnx.waiting, []
        for on_ready in waiting:
            on_ready(None)
