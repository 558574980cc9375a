"""What a producer sends on its broker's socket: ``SEND`` and ``CLOSE_PRODUCER``, as the
``ClientCnx`` side of Java's ``ProducerImpl``.

``SEND`` carries one entry (a message, a batch or a chunk) with Pulsar's ``MessageMetadata``;
a producer that is being created again has no socket, and sends what is pending once it is
back (:mod:`.connection_handler`).
"""

from __future__ import annotations

import concurrent.futures

from ..entry import MessageMetadata
from ..format.metadata import pulsar_metadata
from ..pulsar_protocol import PulsarApi_pb2 as pb
from ..pulsar_protocol.framing import encode_payload_command
from .connection import Command
from .connection_handler import ConnectionHandler
from .pulsar_commands import settle_reply

__all__ = ["ProducerCommands"]

_MASK64 = (1 << 64) - 1
_T = pb.BaseCommand.Type


class ProducerCommands(ConnectionHandler):
    """The producers' commands."""

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

    def _io_close_producer(self, producer_id: int, future: concurrent.futures.Future) -> None:
        if self._forget("producer", producer_id):
            future.set_result(Command("SUCCESS", 0, {}))
            return
        cnx = self._producer_cnx.pop(producer_id)
        self._created.discard(("producer", producer_id))
        cnx.producers.discard(producer_id)
        command = pb.BaseCommand(type=_T.CLOSE_PRODUCER)
        command.close_producer.producer_id = producer_id
        self._requests.send(cnx, command, "close_producer",
                            lambda frame: settle_reply(future, frame))
