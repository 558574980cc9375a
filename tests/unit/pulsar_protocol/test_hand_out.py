"""One outbound path: each core action goes to the connection it is addressed to, and that
connection's own transport writes it; an action for no connection is dropped."""

from __future__ import annotations

from typing import Any

from pulsarlab.broker.actions import ProducerClosed, SendReceipts
from pulsarlab.broker.pulsar_protocol import PulsarSession
from pulsarlab.broker.transports import hand_out

from .support import Harness, T, command


class Recorder:
    """A transport that records which sessions it was asked to write."""

    def __init__(self) -> None:
        self.flushed: list[PulsarSession] = []

    def flush(self, session: PulsarSession) -> None:
        self.flushed.append(session)


def _session_with_producer(h: Harness, sender: Recorder, topic: str) -> tuple[Any, int]:
    session = h.session()
    session.sender = sender
    h.connect(session)
    session.receive_data(command(T.PRODUCER, "producer", topic=topic, producer_id=1,
                                 request_id=1))
    session.data_to_send()
    return session, session.producers[1]


def test_each_action_reaches_its_own_connection_through_its_own_transport() -> None:
    h = Harness()
    tcp, zmq = Recorder(), Recorder()
    a, a_producer = _session_with_producer(h, tcp, "ta")
    b, b_producer = _session_with_producer(h, zmq, "tb")
    actions = [
        SendReceipts(a_producer, a, -1, [(0, 1, 0)]),
        SendReceipts(b_producer, b, -1, [(0, 2, 0)]),
        ProducerClosed(8, None, "terminated"),  # nobody's: dropped
        SendReceipts(a_producer, a, -1, [(1, 1, 2)]),
        SendReceipts(0, None, -1, [(0, 0, 0)]),  # nobody's: dropped
    ]
    hand_out(actions)
    assert tcp.flushed == [a] and zmq.flushed == [b]  # once each, by their own transport
    receipts_a = h.frames(a)
    assert [f.command.send_receipt.sequence_id for f in receipts_a] == [0, 1]
    assert [f.command.send_receipt.sequence_id for f in h.frames(b)] == [0]
