"""What a consumer sends on its broker's socket, as the ``ClientCnx`` side of Java's
``ConsumerImpl``: ``FLOW``, ``ACK`` and ``REDELIVER_UNACKNOWLEDGED_MESSAGES`` (fire and
forget, from the I/O thread), and the requests ``CLOSE_CONSUMER``, ``UNSUBSCRIBE``, ``SEEK``
and ``GET_LAST_MESSAGE_ID``.

A consumer that is being created again has no socket: what it would fire is dropped (it
sends FLOW again once re-created, and its trackers resend acks and redeliveries), a close
or unsubscribe succeeds at once, and a seek or last-message-id query fails with
``ConnectError``.
"""

from __future__ import annotations

import concurrent.futures
import logging
from typing import Any

from ..pulsar_protocol import PulsarApi_pb2 as pb
from ..pulsar_protocol.framing import Frame, encode_command
from .connection import Command
from .connection_handler import ConnectionHandler
from .exceptions import ConnectError
from .pulsar_commands import batch_id_data, bits_to_words, error_for, id_data, settle_reply, signed

__all__ = ["ConsumerCommands"]

log = logging.getLogger("pulsarlab.client")

_T = pb.BaseCommand.Type


class ConsumerCommands(ConnectionHandler):
    """The consumers' commands."""

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

    def _io_consumer_request(self, name: str, fields: dict[str, Any],
                             future: concurrent.futures.Future) -> None:
        consumer_id = fields["consumer_id"]
        if name in ("CLOSE_CONSUMER", "UNSUBSCRIBE") and self._forget("consumer", consumer_id):
            future.set_result(Command("SUCCESS", 0, {}))
            return
        cnx = self._consumer_cnx.get(consumer_id)
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

            self._requests.send(cnx, command, field, closed)
            return
        if name == "SEEK":
            command.type = _T.SEEK
            command.seek.consumer_id = consumer_id
            if fields.get("message_id") is not None:
                command.seek.message_id.CopyFrom(batch_id_data(fields["message_id"]))
            else:
                command.seek.message_publish_time = fields["publish_time"]
            self._requests.send(cnx, command, "seek", lambda frame: settle_reply(future, frame))
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

        self._requests.send(cnx, command, "getLastMessageId", last)
