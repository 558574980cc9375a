"""Transports: the codecs that carry Pulsar frames between sockets and sessions.

Every client connection is one sans-I/O :class:`~..pulsar_protocol.PulsarSession` (the
ServerCnx); a transport only moves its bytes. :mod:`.tcp` carries them over plain TCP
sockets with Pulsar's length framing (pulsar://, pulsar+ssl://), :mod:`.zmq` one frame
per ZeroMQ message over the broker's ROUTER socket. What a session queues leaves through the
transport that owns it (its :attr:`~..pulsar_protocol.PulsarSession.sender`): the loop
hands each core action to the connection it is addressed to, and that connection's own
transport writes it — no transport routes for another.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from ..pulsar_protocol import PulsarSession

__all__ = ["CommandSender", "SessionTransport", "hand_out"]


class CommandSender(Protocol):
    """What owns a session's socket: writes out what the session queued."""

    def flush(self, session: PulsarSession) -> None:
        """Write the session's queued frames; close its connection if it closed."""


class SessionTransport:
    """What every transport shares: its sessions by route, and the turns the loop runs
    over all of them."""

    sessions: dict[bytes, PulsarSession]

    def flush(self, session: PulsarSession) -> None:
        raise NotImplementedError

    def ping(self, keep_alive_ms: int) -> None:
        """A keep-alive turn for every connection (PING, or close a silent one)."""
        for session in list(self.sessions.values()):
            session.ping(keep_alive_ms)
            self.flush(session)

    def check_authentication(self) -> None:
        """The periodic credentials check: AUTH_CHALLENGE for expired tokens."""
        for session in list(self.sessions.values()):
            session.check_authentication()
            self.flush(session)


def hand_out(actions: Iterable[Any]) -> None:
    """Each core action to the connection it is addressed to, then each touched session's
    frames out through its own transport. A session's answers that waited behind actions
    queued before them (:class:`~..pulsar_protocol.session.Reply`) are among them, in their
    place. An action for no connection (a core call from REST or a test) is dropped."""
    touched: dict[PulsarSession, None] = {}
    for action in actions:
        conn = action.conn
        if conn is not None:
            conn.handle_action(action)
            touched[conn] = None
    for session in touched:
        session.sender.flush(session)
