"""Creating producers and consumers on their broker, and again after a loss, with back-off,
as Java's ``ConnectionHandler`` and ``Backoff``.

A producer or consumer is looked up (:mod:`.lookup_service`) and created (``PRODUCER`` or
``SUBSCRIBE``) on the socket of the broker owning its topic. A retriable error is tried
again after 100 ms, doubling to 30 s, within the operation timeout the first time and for
as long as it stays open once it existed. A lost socket, or the broker's
``CLOSE_PRODUCER``/``CLOSE_CONSUMER``, closes it with reason ``"reconnect"``: it creates
itself again (a new lookup, a new socket). One closed by the application while being
created again is closed on the broker when the broker's answer comes (no ghost consumer).
"""

from __future__ import annotations

import concurrent.futures
import logging
import secrets
from typing import Any

from ..pulsar_protocol import PulsarApi_pb2 as pb
from ..pulsar_protocol.framing import Frame
from .client_cnx import ClientCnx
from .connection import Command, now_ms
from .exceptions import AlreadyClosed, ConnectError
from .inbound_commands import InboundCommands
from .lookup_service import LookupService
from .pulsar_commands import error_for, producer_command, subscribe_command

__all__ = ["BACKOFF_INITIAL_MS", "BACKOFF_MAX_MS", "ConnectionHandler"]

log = logging.getLogger("pulsarlab.client")

BACKOFF_INITIAL_MS = 100
BACKOFF_MAX_MS = 30_000
# Errors after which creating a producer/consumer is tried again (Java's retriable ones).
_RETRIABLE = frozenset({"ServiceUnitNotReady", "BrokerMetadataError", "ConnectError",
                        "NotConnected", "Timeout", "TooManyLookupRequestException"})
# ... and, re-creating one the broker may still hold (the old connection not yet seen
# closed), these.
_RETRIABLE_AGAIN = _RETRIABLE | {"ProducerBusy", "ConsumerBusy"}
_T = pb.BaseCommand.Type


class ConnectionHandler(LookupService, InboundCommands):
    """Which socket each producer and consumer is on, and getting it one."""

    def _init_handles(self) -> None:
        self._producer_cnx: dict[int, ClientCnx] = {}
        self._consumer_cnx: dict[int, ClientCnx] = {}
        self._created: set[tuple[str, int]] = set()  # producers/consumers once created
        # Closed by the application while being created again: when the broker's answer
        # comes, the broker-side one is closed instead of kept (no ghost consumer).
        self._abandoned: set[tuple[str, int]] = set()

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

        def looked_up(cnx: ClientCnx | None, err: BaseException | None) -> None:
            if err is not None or cnx is None:
                retry_or_fail(err or ConnectError("lookup failed"))
                return
            if kind == "producer":
                command, field = producer_command(fields), "producer"
            else:
                command, field = subscribe_command(fields), "subscribe"
            self._requests.send(cnx, command, field, lambda frame: created(cnx, frame))

        def created(cnx: ClientCnx, frame: Frame) -> None:
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
                self._requests.expect(cmd.producer_success.request_id, cnx,
                                      lambda f: created(cnx, f))
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

    def _close_on_broker(self, cnx: ClientCnx, kind: str, ident: int) -> None:
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
        self._requests.send(cnx, command, field, lambda frame: None)

    def _forget(self, kind: str, ident: int) -> bool:
        """The application closed a producer or consumer with no socket (it is being
        created again, or never was): the broker's answer to its creation, if one comes,
        closes it there. Whether it had none."""
        cnxs = self._producer_cnx if kind == "producer" else self._consumer_cnx
        if ident in cnxs:
            return False
        if (kind, ident) in self._created:  # being created again
            self._abandoned.add((kind, ident))
        self._created.discard((kind, ident))
        return True

    def _cnx_lost(self, cnx: ClientCnx) -> None:
        for producer_id in list(cnx.producers):
            self._producer_lost(cnx, producer_id)
        for consumer_id in list(cnx.consumers):
            self._consumer_lost(cnx, consumer_id)

    def _producer_lost(self, cnx: ClientCnx, producer_id: int) -> None:
        """The broker closed the producer, or its socket is gone: it creates itself again."""
        cnx.producers.discard(producer_id)
        self._producer_cnx.pop(producer_id, None)
        self._push(self._producers, "CLOSE_PRODUCER", producer_id=producer_id,
                   reason="reconnect")

    def _consumer_lost(self, cnx: ClientCnx, consumer_id: int) -> None:
        cnx.consumers.discard(consumer_id)
        self._consumer_cnx.pop(consumer_id, None)
        self._push(self._consumers, "CLOSE_CONSUMER", consumer_id=consumer_id,
                   reason="reconnect")
