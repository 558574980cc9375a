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
        self.protocol.handle_actions(self.service.take_actions())

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
    peer.protocol.handle_actions(peer.service.take_actions())
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
    peer.protocol.handle_actions(actions)
    assert [cmd.name for _, cmd in peer.sent] == [
        "SEND_RECEIPT", "MESSAGE", "SEND_RECEIPT", "MESSAGE"]


def _send_frames(header: dict, payloads=(b"p",)) -> list:
    return [wire.pack_header(header), *payloads]


def test_malformed_send_headers_get_one_line_errors_and_the_connection_keeps_serving() -> None:
    """What the SEND fast path does not accept falls to the full check, which names the
    problem in one line; nothing is stored, and the next well-formed SEND goes through."""
    peer = Peer()
    peer.request(b"c1", "CONNECT", 1, client_version="t")
    peer.request(b"c1", "PRODUCER", 2, topic="t", producer_id=1)
    good = {"v": 1, "cmd": "SEND", "rid": 0, "producer_id": 1, "sequence_id": 0, "metadata": {}}
    bad = [
        ({**good, "sequence_id": "0"}, (b"p",), "SEND field 'sequence_id' must be int, not str"),
        ({**good, "metadata": []}, (b"p",), "SEND field 'metadata' must be dict, not list"),
        ({k: v for k, v in good.items() if k != "producer_id"}, (b"p",),
         "SEND is missing field 'producer_id'"),
        ({**good, "v": 2}, (b"p",), "unsupported protocol version 2 (this broker speaks 1)"),
        (good, (), "SEND takes exactly one payload frame, got 0"),
        (good, (b"p", b"q"), "SEND takes exactly one payload frame, got 2"),
    ]
    for header, payloads, message in bad:
        peer.sent.clear()
        peer.protocol.handle([b"c1", *_send_frames(header, payloads)], 0)
        peer.flush()
        [(_, error)] = peer.sent
        assert (error.name, error["code"], error["message"]) == ("ERROR", "InvalidMessage", message)
        assert "\n" not in error["message"]
    peer.sent.clear()
    peer.protocol.handle([b"c1", *_send_frames({**good, "metadata": {"nope": 1}})], 0)
    [(_, error)] = peer.sent  # a send refused like any other: the producer's future fails
    assert (error.name, error["sequence_id"], error["code"], error["message"]) == (
        "SEND_ERROR", 0, "InvalidConfiguration",
        "SEND: unknown metadata field 'nope'; nothing was stored",
    )
    peer.sent.clear()
    peer.protocol.handle([b"c1", b"\xc1garbage", b"p"], 0)
    [(_, error)] = peer.sent
    assert error["message"] == "header frame is not valid msgpack (FormatError)"
    assert peer.service.topics["persistent://public/default/t"].ledger.number_of_entries == 0
    replies = peer.request(b"c1", "SEND", 0, [b"ok"], producer_id=1, sequence_id=5, metadata={})
    assert [(name, cmd["sequence_id"]) for _, name, cmd in replies] == [("SEND_RECEIPT", 5)]


def test_fast_and_checked_sends_and_other_commands_keep_their_order() -> None:
    """Sends taking the fast path (plain headers) and the full check (a request id, extra
    metadata) interleaved with other commands are stored and receipted in arrival order."""
    peer = Peer()
    peer.request(b"c1", "CONNECT", 1, client_version="t")
    peer.request(b"c1", "PRODUCER", 2, topic="t", producer_id=1)
    peer.request(b"c1", "SUBSCRIBE", 3, topic="t", subscription="s", consumer_id=7,
                 sub_type="Shared", initial_position="earliest")
    peer.sent.clear()
    handle = peer.protocol.handle
    for seq in range(6):
        header = {"v": 1, "cmd": "SEND", "rid": 0, "producer_id": 1, "sequence_id": seq,
                  "metadata": {"properties": {"n": str(seq)}} if seq % 2 else {}}
        if seq == 3:
            header["rid"] = 9  # still a SEND, checked the long way
        handle([b"c1", *_send_frames(header, [f"m{seq}".encode()])], 0)
        if seq == 2:
            handle([b"c1", *wire.encode("FLOW", 0, consumer_id=7, permits=100)], 0)
    peer.flush()
    [(_, receipts), (_, message)] = peer.sent
    assert receipts.name == "SEND_RECEIPTS"
    assert [r[0] for r in receipts["receipts"]] == list(range(6))
    assert [e[1] for e in message["entries"]] == list(range(6))
    assert [p[-2:] for p in message.payloads] == [f"m{seq}".encode() for seq in range(6)]


def test_a_failing_delivery_costs_that_client_only(monkeypatch, caplog) -> None:
    """A bug while laying out one client's MESSAGE drops that client (as missed heart-beats
    do), with one log line naming the topic and entries; the others are served."""
    peer = Peer()
    for identity in (b"bad", b"good"):
        peer.request(identity, "CONNECT", 1, client_version="t")
        peer.request(identity, "SUBSCRIBE", 2, topic="t", subscription=identity.decode(),
                     consumer_id=1, sub_type="Shared", initial_position="earliest")
        peer.request(identity, "FLOW", 3, consumer_id=1, permits=10)
    peer.request(b"good", "PRODUCER", 4, topic="t", producer_id=1)
    original = ZmqProtocol._message

    def broken(self, to, entries):
        if to[0].identity == b"bad":
            raise RuntimeError("a bug")
        return original(self, to, entries)

    monkeypatch.setattr(ZmqProtocol, "_message", broken)
    replies = peer.request(b"good", "SEND", 0, [b"x"], producer_id=1, sequence_id=0,
                           metadata={})
    assert sorted((ident, name) for ident, name, _ in replies) == [
        (b"good", "MESSAGE"), (b"good", "SEND_RECEIPT")]
    assert b"bad" not in peer.protocol.connections
    assert b"good" in peer.protocol.connections
    [line] = [r.getMessage() for r in caplog.records if "internal error delivering" in
              r.getMessage()]
    assert "persistent://public/default/t entries [[0, 0]]" in line
    # The dropped client's message goes back to its subscription, not lost.
    sub = peer.service.subscription("t", "bad")
    assert sub.cursor.number_of_entries_in_backlog() == 1
