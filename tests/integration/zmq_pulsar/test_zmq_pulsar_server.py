"""R-WIRE: the broker process around the ZeroMQ face keeps serving everyone: rule violations
are one-line errors on one connection, keep-alive frees a silent peer's messages, stats keep
Pulsar's names, the event stream publishes, receipts arrive once each in send order."""

from __future__ import annotations

import itertools

import pytest
import zmq

from pulsarlab import Admin, Broker

from .dealer import PulsarDealer, T, api, command, send_frame

_TOPICS = itertools.count()


@pytest.fixture(scope="module")
def broker():
    with Broker(storage="memory", max_message_size=64 * 1024) as b:
        yield b


def _dealer(broker: Broker) -> PulsarDealer:
    dealer = PulsarDealer(broker.service_url)
    assert dealer.connect().type == T.CONNECTED
    return dealer


def test_unknown_ids_and_rule_violations_are_errors_and_the_peer_goes_on(broker):
    c = _dealer(broker)
    try:
        c.send(command(T.SUBSCRIBE, "subscribe", topic="bad topic/x/y/z", subscription="s",
                       consumer_id=1, request_id=1, subType=api.CommandSubscribe.Shared))
        assert c.expect(T.ERROR).error.error == api.InvalidTopicName
        c.send(command(T.SEEK, "seek", consumer_id=42, request_id=2, message_publish_time=0))
        assert c.expect(T.ERROR).error.error == api.ConsumerNotFound
        c.subscribe(f"ok-{next(_TOPICS)}", "s", sub_type=api.CommandSubscribe.Shared)
        c.send(command(T.PING, "ping"))
        c.expect(T.PONG)
    finally:
        c.close()


def test_stats_use_pulsar_field_names(broker):
    c = _dealer(broker)
    try:
        c.producer("stats-t")
        c.subscribe("stats-t", "s", sub_type=api.CommandSubscribe.Key_Shared,
                    consumer_name="ks-1", permits=0)
        with Admin(broker.web_url) as admin:
            stats = admin.topics.get_stats("stats-t")
            internal = admin.topics.get_internal_stats("stats-t")
    finally:
        c.close()
    sub = stats["subscriptions"]["s"]
    for key in ("type", "msgBacklog", "unackedMessages", "consumersAfterMarkDeletePosition",
                "consumers"):
        assert key in sub
    consumer = sub["consumers"][0]
    for key in ("consumerName", "availablePermits", "unackedMessages", "keyHashRanges"):
        assert key in consumer
    assert consumer["consumerName"] == "ks-1"
    for key in ("ledgers", "cursors", "lastConfirmedEntry"):
        assert key in internal
    for key in ("markDeletePosition", "individuallyDeletedMessages", "readPosition"):
        assert key in internal["cursors"]["s"]


def test_event_stream_publishes_state_changes(broker):
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(broker.events_url)
    c = _dealer(broker)
    try:
        c.producer("events-t")
        seen: list[bytes] = []
        for seq in range(200):  # the SUB joins at some point: publish until an event comes
            c.send(send_frame(1, seq, b"e"))
            c.expect(T.SEND_RECEIPT)
            if sub.poll(50):
                kind, _body = sub.recv_multipart()
                seen.append(kind)
                break
        assert seen, "no event arrived"
    finally:
        sub.close()
        c.close()


def test_call_runs_on_the_broker_thread(broker):
    names = broker.call(lambda service: service.list_topics())
    assert isinstance(names, list)


def test_heartbeat_closes_a_silent_peer_and_redelivers():
    with Broker(storage="memory", keep_alive_interval_seconds=0.2) as b:
        silent = _dealer(b)
        silent.producer("hb")
        silent.subscribe("hb", "s", sub_type=api.CommandSubscribe.Shared, permits=100)
        for seq in range(3):
            silent.send(send_frame(1, seq, b"hb"))
        kinds = []
        while kinds.count(T.MESSAGE) < 3:
            kinds.append(silent.recv().command.type)
        # From now on it reads nothing, so it answers no PING: the broker closes it and its
        # unacked messages go to the other consumer.
        other = _dealer(b)
        other.subscribe("hb", "s", consumer_id=1, sub_type=api.CommandSubscribe.Shared,
                        permits=100)
        received = [other.recv(15_000) for _ in range(3)]
        assert [f.payload for f in received] == [b"hb"] * 3
        other.close()
        silent.close()


def test_failed_start_reports_and_stops_cleanly(broker):
    """A port in use: start() raises, and stop() returns instead of hanging."""
    taken = int(broker.service_url.rsplit(":", 1)[1])
    second = Broker(storage="memory", port=taken)
    with pytest.raises(zmq.ZMQError):
        second.start()
    second.stop(timeout=5)


def test_receipts_of_a_burst_arrive_once_each_in_send_order(broker):
    c = _dealer(broker)
    try:
        c.producer(f"burst-{next(_TOPICS)}")
        for seq in range(200):
            c.send(send_frame(1, seq, b"b"))
        got = [c.expect(T.SEND_RECEIPT).send_receipt.sequence_id for _ in range(200)]
        assert got == list(range(200))  # in order
        c.send(command(T.PING, "ping"))  # answered at once: no receipt came twice before it
        c.expect(T.PONG)
    finally:
        c.close()
