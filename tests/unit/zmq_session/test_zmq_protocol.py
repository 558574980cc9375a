"""The ZeroMQ protocol driven with frames, no sockets: handshake, produce, deliver."""

from __future__ import annotations

from pulsarlab.broker import BrokerService, BrokerSettings, ManualClock, wire
from pulsarlab.broker.security import Authenticator
from pulsarlab.broker.storage import MemoryStorage
from pulsarlab.broker.zmq_session import ZmqProtocol


class Peer:
    """A protocol on a core, and what it sent to each identity, decoded."""

    def __init__(self, **settings) -> None:
        self.settings = BrokerSettings.from_kwargs(**settings)
        self.clock = ManualClock()
        self.service = BrokerService(MemoryStorage(), self.clock, self.settings)
        self.sent: list[tuple[bytes, wire.Command]] = []
        self.protocol = ZmqProtocol(
            self.service, self.settings, Authenticator(self.settings),
            send=lambda conn, frames: self.sent.append(
                (conn.identity, wire.decode(frames, wire.BROKER_COMMANDS))
            ),
            flush=self.flush, now_ms=self.clock.now_ms,
        )

    def flush(self) -> None:
        self.service.commit()
        self.protocol.handle_actions(self.service.take_actions(), foreign=lambda a: None)

    def request(self, identity: bytes, name: str, request_id: int, payloads=(), **fields):
        self.sent.clear()
        frames = wire.encode(name, request_id, list(payloads), **fields)
        self.protocol.handle([identity, *frames], self.clock.now_ms())
        self.flush()
        return [(ident, cmd.name, cmd) for ident, cmd in self.sent]


def test_connect_produce_and_deliver_over_frames() -> None:
    peer = Peer()
    [(_, name, _)] = peer.request(b"c1", "CONNECT", 1, client_version="t")
    assert name == "CONNECTED"
    assert peer.request(b"c1", "PRODUCER", 2, topic="t", producer_id=1)[0][1] \
        == "PRODUCER_SUCCESS"
    peer.request(b"c1", "SUBSCRIBE", 3, topic="t", subscription="s", consumer_id=7,
                 sub_type="Shared", initial_position="earliest")
    peer.request(b"c1", "FLOW", 4, consumer_id=7, permits=10)
    replies = peer.request(b"c1", "SEND", 0, [b"hello"], producer_id=1, sequence_id=0,
                           metadata={})
    assert [name for _, name, _ in replies] == ["SEND_RECEIPT", "MESSAGE"]
    message = replies[1][2]
    assert message["consumer_id"] == 7
    assert message.payloads and len(message.payloads) == 1


def test_commands_before_connect_and_unknown_consumers_get_errors() -> None:
    peer = Peer()
    [(_, name, error)] = peer.request(b"c1", "FLOW", 1, consumer_id=1, permits=1)
    assert (name, error["code"]) == ("ERROR", "NotConnected")
    peer.request(b"c1", "CONNECT", 2, client_version="t")
    [(_, name, error)] = peer.request(b"c1", "FLOW", 3, consumer_id=1, permits=1)
    assert (name, error["code"]) == ("ERROR", "ConsumerNotFound")
    others = peer.request(b"other", "CONNECT", 4, client_version="t")
    assert others[0][1] == "CONNECTED"  # other connections are unaffected


def test_a_bad_token_is_refused_once_then_ignored() -> None:
    peer = Peer(authentication_enabled=True)
    [(_, name, error)] = peer.request(b"c1", "CONNECT", 1, client_version="t", auth_token="nope")
    assert (name, error["code"]) == ("ERROR", "AuthenticationError")
    assert peer.request(b"c1", "PING", 2) == []
    assert peer.protocol.dropped_from_refused == 1


def test_deliveries_to_one_consumer_travel_as_one_message_in_core_order() -> None:
    """The dispatcher hands 50 entries out in turns of 20; the consumer gets one MESSAGE
    with all 50, in order. A receipt queued between two deliveries stays between them."""
    peer = Peer()
    peer.request(b"c1", "CONNECT", 1, client_version="t")
    peer.request(b"c1", "PRODUCER", 2, topic="t", producer_id=1)
    peer.request(b"c1", "SUBSCRIBE", 3, topic="t", subscription="s", consumer_id=7,
                 sub_type="Shared", initial_position="earliest")
    for seq in range(50):
        frames = wire.encode("SEND", 0, [b"m%d" % seq], producer_id=1, sequence_id=seq,
                             metadata={})
        peer.protocol.handle([b"c1", *frames], peer.clock.now_ms())
    peer.service.commit()
    peer.protocol.handle_actions(peer.service.take_actions(), foreign=lambda a: None)
    peer.sent.clear()
    replies = peer.request(b"c1", "FLOW", 4, consumer_id=7, permits=100)
    messages = [cmd for _, name, cmd in replies if name == "MESSAGE"]
    assert len(messages) == 1
    assert [e[1] for e in messages[0]["entries"]] == list(range(50))
    assert len(messages[0].payloads) == 50

    service = peer.service
    actions = []
    for seq in (50, 51):
        frames = wire.encode("SEND", 0, [b"late"], producer_id=1, sequence_id=seq, metadata={})
        peer.protocol.handle([b"c1", *frames], peer.clock.now_ms())
        service.commit()
        actions += service.take_actions()
    # The core's order: receipt 50, delivery 50, receipt 51, delivery 51.
    assert [type(a).__name__ for a in actions] == [
        "SendReceipt", "Deliver", "SendReceipt", "Deliver"]
    peer.sent.clear()
    peer.protocol.handle_actions(actions, foreign=lambda a: None)
    assert [cmd.name for _, cmd in peer.sent] == [
        "SEND_RECEIPT", "MESSAGE", "SEND_RECEIPT", "MESSAGE"]
