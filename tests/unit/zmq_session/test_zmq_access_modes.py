"""Producer access modes and SENDs to producers that are not ready, over ZeroMQ frames:
the same core rules as pulsar:// (the msgpack wire answers a waiting producer's PRODUCER
once, when it gets the topic)."""

from __future__ import annotations

from .test_zmq_protocol import Peer


def _connected(*identities: bytes) -> Peer:
    peer = Peer()
    for identity in identities:
        peer.request(identity, "CONNECT", 1, client_version="t")
    return peer


def test_access_modes_are_enforced_with_the_epoch() -> None:
    peer = _connected(b"a", b"b")
    [(_, name, ok)] = peer.request(b"a", "PRODUCER", 2, topic="t", producer_id=1,
                                   access_mode="Exclusive")
    assert (name, ok["topic_epoch"]) == ("PRODUCER_SUCCESS", 0)
    [(_, name, error)] = peer.request(b"b", "PRODUCER", 3, topic="t", producer_id=1)
    assert (name, error["code"]) == ("ERROR", "ProducerBusy")
    [(_, name, error)] = peer.request(b"b", "PRODUCER", 4, topic="t", producer_id=1,
                                      access_mode="Exclusive")
    assert (name, error["code"]) == ("ERROR", "ProducerFenced")
    [(_, name, error)] = peer.request(b"b", "PRODUCER", 5, topic="t", producer_id=1,
                                      access_mode="Sole")
    assert (name, error["code"]) == ("ERROR", "InvalidConfiguration")


def test_wait_for_exclusive_is_answered_when_the_holder_leaves() -> None:
    peer = _connected(b"a", b"b")
    peer.request(b"a", "PRODUCER", 2, topic="t", producer_id=1, access_mode="Exclusive")
    assert peer.request(b"b", "PRODUCER", 9, topic="t", producer_id=4,
                        access_mode="WaitForExclusive") == []
    peer.request(b"a", "CLOSE_PRODUCER", 3, producer_id=1)
    [ok] = [c for i, c in peer.sent if i == b"b"]
    assert (ok.name, ok.request_id, ok["producer_id"], ok["topic_epoch"]) == (
        "PRODUCER_SUCCESS", 9, 4, 1)
    replies = peer.request(b"b", "SEND", 0, [b"x"], producer_id=4, sequence_id=0, metadata={})
    assert [name for _, name, _ in replies] == ["SEND_RECEIPT"]


def test_a_fenced_waiter_gets_producer_fenced() -> None:
    peer = _connected(b"a", b"b", b"c")
    peer.request(b"a", "PRODUCER", 2, topic="t", producer_id=1, access_mode="Exclusive")
    peer.request(b"b", "PRODUCER", 7, topic="t", producer_id=1, access_mode="WaitForExclusive")
    peer.request(b"c", "PRODUCER", 3, topic="t", producer_id=1,
                 access_mode="ExclusiveWithFencing")
    got = {(i, c.name, c.get("code"), c.request_id) for i, c in peer.sent}
    assert got == {(b"c", "PRODUCER_SUCCESS", None, 3), (b"a", "CLOSE_PRODUCER", None, 0),
                   (b"b", "ERROR", "ProducerFenced", 7)}


def test_a_send_to_an_unknown_producer_closes_the_connection() -> None:
    peer = _connected(b"a")
    [(_, name, error)] = peer.request(b"a", "SEND", 5, [b"x"], producer_id=3, sequence_id=0,
                                      metadata={})
    assert (name, error["code"]) == ("ERROR", "NotAllowedError")
    assert b"a" not in peer.protocol.connections
    [(_, name, error)] = peer.request(b"a", "FLOW", 6, consumer_id=1, permits=1)
    assert error["code"] == "NotConnected"


def test_a_send_to_a_producer_the_broker_just_closed_is_refused_without_closing() -> None:
    peer = _connected(b"a")
    peer.request(b"a", "PRODUCER", 2, topic="t", producer_id=1)
    peer.service.terminate_topic("t")
    peer.flush()
    [(_, name, error)] = peer.request(b"a", "SEND", 5, [b"x"], producer_id=1, sequence_id=0,
                                      metadata={})
    assert (name, error["code"]) == ("SEND_ERROR", "ProducerNotFound")
    assert b"a" in peer.protocol.connections
