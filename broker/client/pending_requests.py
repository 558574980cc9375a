"""Request/response correlation, as the ``pendingRequests`` map of Java's ``ClientCnx``.

A request (LOOKUP, PRODUCER, SUBSCRIBE, SEEK, ...) gets a fresh ``request_id`` and waits
here, under the socket it went out on, for the answer carrying that id. A socket that is
lost answers everything still waiting on it as Pulsar's clients do: an ``ERROR`` with
``ServiceNotReady`` (retriable), so a creation retries and a caller gets one clear error.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from ..pulsar_protocol import PulsarApi_pb2 as pb
from ..pulsar_protocol.framing import Frame, encode_command
from .client_cnx import ClientCnx
from .pulsar_commands import request_id_of

__all__ = ["OnReply", "PendingRequests"]

OnReply = Callable[[Frame], None]
_T = pb.BaseCommand.Type


class PendingRequests:
    """The requests sent and not yet answered, by ``request_id``."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[ClientCnx, OnReply]] = {}

    def send(self, cnx: ClientCnx, command: pb.BaseCommand, field: str,
             on_reply: OnReply) -> None:
        """Queue ``command`` on ``cnx`` (its ``<field>.request_id`` set here) and route its
        answer to ``on_reply``."""
        rid = next(self._ids)
        getattr(command, field).request_id = rid
        self._waiting[rid] = (cnx, on_reply)
        cnx.outbox.append(encode_command(command))

    def expect(self, rid: int, cnx: ClientCnx, on_reply: OnReply) -> None:
        """Wait for one more answer to ``rid`` (a queued WaitForExclusive producer's)."""
        self._waiting[rid] = (cnx, on_reply)

    def answer(self, frame: Frame) -> bool:
        """Hand ``frame`` to the request it answers; whether there was one."""
        rid = request_id_of(frame.command)
        pending = self._waiting.pop(rid, None) if rid is not None else None
        if pending is None:
            return False
        pending[1](frame)
        return True

    def fail(self, cnx: ClientCnx, error: BaseException) -> None:
        """Answer every request waiting on the lost ``cnx`` with ``ServiceNotReady``."""
        lost = [rid for rid, (owner, _) in self._waiting.items() if owner is cnx]
        for rid in lost:
            _, on_reply = self._waiting.pop(rid)
            command = pb.BaseCommand(type=_T.ERROR)
            command.error.request_id = rid
            command.error.error = pb.ServiceNotReady
            command.error.message = str(error)
            on_reply(Frame(command))
