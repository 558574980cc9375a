"""Pulsar's binary protocol over the broker's ZeroMQ ROUTER: one message is one frame, served
by the same PulsarSession as pulsar://; a peer speaking anything else is closed."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator

import msgpack
import pytest

from pulsarlab import Broker
from pulsarlab.broker.client import Client
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.pulsar_protocol.framing import decode_message

from .dealer import CLOSED, QUIET_MS, PulsarDealer, T, command, send_frame, wait_until

_COUNTER = itertools.count()


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_COUNTER)}"


# ``broker``: tests/integration/conftest.py's, one in-memory broker per module.


@pytest.fixture
def dealer(broker: Broker) -> Iterator[PulsarDealer]:
    d = PulsarDealer(broker.service_url)
    yield d
    d.close()


def test_connect_produce_consume_ack_close(broker: Broker, dealer: PulsarDealer) -> None:
    topic = unique("persistent://public/default/zp")
    connected = dealer.connect()
    assert connected.type == T.CONNECTED
    assert connected.connected.max_message_size == broker.settings.max_message_size
    dealer.subscribe(topic, "s", consumer_id=7)
    success = dealer.producer(topic, producer_id=3)
    assert success.producer_name
    (publisher,) = broker.call(lambda s: s.topic_stats(topic))["publishers"]
    assert publisher["address"].startswith("/127.0.0.1:")  # the DEALER's TCP peer
    assert publisher["clientVersion"] == "raw-dealer"
    for seq in range(3):
        dealer.send(send_frame(3, seq, f"m{seq}".encode(), partition_key=f"k{seq}"))
    # Receipts and deliveries interleave (one connection produces and consumes).
    frames = [dealer.recv() for _ in range(6)]
    receipts = [f.command.send_receipt for f in frames if f.command.type == T.SEND_RECEIPT]
    messages = [f for f in frames if f.command.type == T.MESSAGE]
    assert [(r.producer_id, r.sequence_id) for r in receipts] == [(3, 0), (3, 1), (3, 2)]
    assert [f.payload for f in messages] == [b"m0", b"m1", b"m2"]
    assert all(f.checksum_ok for f in messages)
    assert {f.command.message.consumer_id for f in messages} == {7}
    md = api.MessageMetadata.FromString(messages[1].metadata)
    assert md.partition_key == "k1"
    ids = [r.message_id for r in receipts]
    assert [(m.command.message.message_id.ledgerId, m.command.message.message_id.entryId)
            for m in messages] == [(i.ledgerId, i.entryId) for i in ids]
    # Acknowledge them all (with a receipt asked for), then the backlog is empty.
    dealer.send(command(T.ACK, "ack", consumer_id=7, ack_type=api.CommandAck.Individual,
                        message_id=[api.MessageIdData(ledgerId=i.ledgerId, entryId=i.entryId)
                                    for i in ids], request_id=99))
    assert dealer.expect(T.ACK_RESPONSE).ackResponse.request_id == 99
    stats = broker.call(lambda s: s.topic_stats(topic))
    assert stats["subscriptions"]["s"]["msgBacklog"] == 0
    # Close both: the subscription has no consumer left, the topic no producer.
    dealer.send(command(T.CLOSE_PRODUCER, "close_producer", producer_id=3, request_id=100))
    assert dealer.expect(T.SUCCESS).success.request_id == 100
    dealer.send(command(T.CLOSE_CONSUMER, "close_consumer", consumer_id=7, request_id=101))
    assert dealer.expect(T.SUCCESS).success.request_id == 101
    stats = broker.call(lambda s: s.topic_stats(topic))
    assert stats["publishers"] == []
    assert stats["subscriptions"]["s"]["consumers"] == []


def test_the_broker_pings_and_answers_ping(dealer: PulsarDealer) -> None:
    dealer.connect()
    dealer.send(command(T.PING, "ping"))
    dealer.expect(T.PONG)


@pytest.mark.parametrize("bad", [
    b"\x00\x00\x00\x09\x00\x00\x00\x05abcde",  # a BaseCommand that does not parse
    b"\x00\x00\x00\x20\x00\x00\x00\x02\x08\x12",  # a size that is not the message's
    b"\x00\x00",  # shorter than a frame's header
])
def test_a_malformed_frame_gets_error_and_drops_only_that_peer(
    broker: Broker, dealer: PulsarDealer, bad: bytes
) -> None:
    topic = unique("zp-malformed")
    other = PulsarDealer(broker.service_url)
    try:
        other.connect()
        other.subscribe(topic, "s")
        dealer.connect()
        dealer.producer(topic)
        dealer.send(bad)
        error = dealer.expect(T.ERROR).error
        assert "invalid frame" in error.message
        assert dealer.recv() == CLOSED
        # Its producer is gone, and whatever it sends now is dropped unanswered.
        assert broker.call(lambda s: s.topic_stats(topic))["publishers"] == []
        before = broker.dropped_from_refused
        dealer.send(command(T.PING, "ping"))
        assert dealer.recv(QUIET_MS) is None
        wait_until(lambda: broker.call(lambda s: broker.dropped_from_refused) == before + 1,
                   "the dropped message to be counted")
        # Everyone else is still served.
        producer = PulsarDealer(broker.service_url)
        try:
            producer.connect()
            producer.producer(topic)
            producer.send(send_frame(1, 0, b"still-served"))
            producer.expect(T.SEND_RECEIPT)
        finally:
            producer.close()
        assert other.recv().payload == b"still-served"
    finally:
        other.close()


def test_a_message_of_several_parts_is_not_a_frame(dealer: PulsarDealer) -> None:
    dealer.connect()
    dealer.send(command(T.PING, "ping"), b"more")
    error = dealer.expect(T.ERROR).error
    assert "2 parts" in error.message
    assert dealer.recv() == CLOSED


def test_a_command_before_connect_is_refused(dealer: PulsarDealer) -> None:
    dealer.send(command(T.PRODUCER, "producer", topic="t", producer_id=1, request_id=1))
    assert "before CONNECT" in dealer.expect(T.ERROR).error.message
    assert dealer.recv() == CLOSED


def test_an_empty_message_hangs_up_and_frees_the_exclusive_subscription(
    broker: Broker,
) -> None:
    topic = unique("zp-hangup")
    first = PulsarDealer(broker.service_url, identity=b"reused-id")
    first.connect()
    first.subscribe(topic, "s")
    first.send(b"")  # the client hangs up
    wait_until(lambda: broker.call(lambda s: b"reused-id" not in broker.zmq_sessions),
               "the hang-up to end the session")
    first.close()
    # The same routing id may connect again: the hang-up was the client's, not a refusal.
    again = PulsarDealer(broker.service_url, identity=b"reused-id")
    try:
        assert again.connect().type == T.CONNECTED
        again.subscribe(topic, "s")  # Exclusive: free again
    finally:
        again.close()


def test_seek_closes_the_consumer_as_on_pulsar_tcp(broker: Broker, dealer: PulsarDealer) -> None:
    topic = unique("zp-seek")
    dealer.connect()
    dealer.subscribe(topic, "s", consumer_id=1)
    dealer.send(command(T.SEEK, "seek", consumer_id=1, request_id=5,
                        message_id=api.MessageIdData(ledgerId=0, entryId=0)))
    assert dealer.expect(T.CLOSE_CONSUMER).close_consumer.consumer_id == 1
    assert dealer.expect(T.SUCCESS).success.request_id == 5


def test_pulsarlabs_client_and_a_raw_peer_share_the_router(
    broker: Broker, dealer: PulsarDealer
) -> None:
    """pulsarlab's client and a hand-made Pulsar-frame peer are the same kind of peer: each
    one's messages reach the other."""
    topic = unique("persistent://public/default/zp-mixed")
    dealer.connect()
    dealer.subscribe(topic, "raw-side")
    with Client(broker.service_url, operation_timeout_seconds=10) as client:
        consumer = client.subscribe(topic, "client-side")
        producer = client.create_producer(topic)
        producer.send(b"from-client")
        assert dealer.recv().payload == b"from-client"
        dealer.producer(topic, producer_id=1)
        dealer.send(send_frame(1, 0, b"from-raw"))
        dealer.expect(T.SEND_RECEIPT)
        got = [consumer.receive(timeout_millis=10_000).data() for _ in range(2)]
        assert got == [b"from-client", b"from-raw"]


def test_a_peer_of_the_old_msgpack_wire_is_closed_with_one_log_line(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    """The msgpack command wire is gone: its CONNECT (a msgpack map) gets the close notice
    and one log line naming the problem, what the peer sends next is dropped, and everyone
    else is served on."""
    topic = unique("zp-old-wire")
    old = PulsarDealer(broker.service_url)
    other = PulsarDealer(broker.service_url)
    try:
        other.connect()
        other.subscribe(topic, "s")
        with caplog.at_level(logging.INFO, logger="pulsarlab.broker.zmq"):
            old.send(msgpack.packb({"v": 1, "cmd": "CONNECT", "rid": 1, "client_version": "0.1"}))
            assert old.recv() == CLOSED
            before = broker.dropped_from_refused
            old.send(msgpack.packb({"v": 1, "cmd": "PING", "rid": 2}))
            assert old.recv(QUIET_MS) is None
            wait_until(lambda: broker.call(lambda s: broker.dropped_from_refused) == before + 1,
                       "the old peer's next message to be dropped")
        lines = [r.getMessage() for r in caplog.records if "not a Pulsar frame" in r.getMessage()]
        assert len(lines) == 1 and "first byte 0x84" in lines[0], lines
        assert broker.call(lambda s: len(broker.zmq_sessions)) >= 1  # the other one's
        other.producer(topic)
        other.send(send_frame(1, 0, b"still-served"))
        other.expect(T.SEND_RECEIPT)
        assert other.recv().payload == b"still-served"
    finally:
        old.close()
        other.close()


def test_a_vanished_peer_releases_its_consumer_at_once(broker: Broker) -> None:
    """A DEALER whose socket closes without hanging up (a crash) ends its session as soon
    as its TCP connection closes, not two keep-alive periods later."""
    topic = unique("zp-vanished")
    first = PulsarDealer(broker.service_url)
    first.connect()
    first.subscribe(topic, "s")
    first.close()  # no empty message: the TCP connection just closes
    wait_until(lambda: broker.call(lambda s: not s.topic_stats(topic)["subscriptions"]["s"]
                                   ["consumers"]),
               "the closed socket's consumer to be released")
    second = PulsarDealer(broker.service_url)
    try:
        second.connect()
        second.subscribe(topic, "s")  # Exclusive: free again
    finally:
        second.close()


def test_keep_alive_closes_a_silent_peer_and_keeps_one_that_answers() -> None:
    with Broker(storage="memory", keep_alive_interval_seconds=0.2) as b:
        silent = PulsarDealer(b.service_url)
        answering = PulsarDealer(b.service_url)
        try:
            silent.connect()
            silent.subscribe("keep-alive", "silent")
            answering.connect()
            answering.subscribe("keep-alive", "answering")

            def silent_gone() -> bool:
                assert answering.recv(20) is None  # PINGs answered; nothing else comes
                return b.call(lambda s: not s.topic_stats("keep-alive")["subscriptions"]
                              ["silent"]["consumers"])

            wait_until(silent_gone, "the silent peer to be closed")
            answering.send(command(T.PING, "ping"))
            answering.expect(T.PONG)
            assert b.call(lambda s: len(s.topic_stats("keep-alive")["subscriptions"]
                                        ["answering"]["consumers"])) == 1
            # The silent peer was pinged, then told its connection is closed.
            frames = []
            while silent.sock.poll(QUIET_MS):
                frames.append(silent.sock.recv())
            assert frames[-1] == b""
            pinged = [decode_message(f, 1 << 30).command.type for f in frames[:-1]]
            assert pinged and set(pinged) == {T.PING}
        finally:
            silent.close()
            answering.close()


def test_a_peer_taking_over_a_routing_id_does_not_inherit_its_session(broker: Broker) -> None:
    """Without authentication ZeroMQ hands a routing id over to the newest peer claiming
    it; the broker's session stays with the TCP socket its CONNECT came over, so the new
    peer starts unconnected and the old session (its producer) ends."""
    topic = unique("zp-takeover")
    victim = PulsarDealer(broker.service_url, identity=b"taken-id")
    victim.connect()
    victim.producer(topic, producer_id=1)
    thief = PulsarDealer(broker.service_url, identity=b"taken-id")
    try:
        thief.send(send_frame(1, 0, b"not yours"))
        error = thief.expect(T.ERROR).error
        assert "before CONNECT" in error.message
        assert thief.recv() == CLOSED
        stats = broker.call(lambda s: s.topic_stats(topic))
        assert stats["publishers"] == []
        assert stats["msgInCounter"] == 0
    finally:
        victim.close()
        thief.close()
