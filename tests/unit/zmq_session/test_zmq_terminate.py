"""A terminated topic over the ZeroMQ protocol: CLOSE_PRODUCER "terminated", the error
code on PRODUCER, REACHED_END_OF_TOPIC to a consumer that consumed everything."""

from __future__ import annotations

from .test_zmq_protocol import Peer

TOPIC = "persistent://public/default/t"


def _with_traffic() -> tuple[Peer, list]:
    peer = Peer()
    peer.request(b"c1", "CONNECT", 1, client_version="t")
    peer.request(b"c1", "PRODUCER", 2, topic=TOPIC, producer_id=1)
    peer.request(b"c1", "SUBSCRIBE", 3, topic=TOPIC, subscription="s", consumer_id=7,
                 sub_type="Shared", initial_position="earliest")
    peer.request(b"c1", "FLOW", 4, consumer_id=7, permits=10)
    replies = peer.request(b"c1", "SEND", 0, [b"hello"], producer_id=1, sequence_id=0,
                           metadata={})
    message = next(cmd for _, name, cmd in replies if name == "MESSAGE")
    return peer, message["entries"]


def test_terminate_over_admin_closes_the_producer_and_refuses_a_new_one() -> None:
    peer, entries = _with_traffic()
    replies = peer.request(b"c1", "ADMIN", 5, op="topics.terminate_topic",
                           args={"topic": TOPIC})
    names = [name for _, name, _ in replies]
    # what the admin call told other clients goes out before its answer
    assert names == ["CLOSE_PRODUCER", "SUCCESS"]
    end = replies[1][2]["result"]
    assert (end["ledgerId"], end["entryId"]) == tuple(entries[0][:2])
    assert replies[0][2]["reason"] == "terminated"
    [(_, name, error)] = peer.request(b"c1", "PRODUCER", 6, topic=TOPIC, producer_id=2)
    assert (name, error["code"]) == ("ERROR", "TopicTerminatedError")


def test_the_consumer_hears_the_end_after_its_ack() -> None:
    peer, entries = _with_traffic()
    peer.service.terminate_topic(TOPIC)
    peer.flush()
    replies = peer.request(b"c1", "ACK", 0, consumer_id=7, positions=[entries[0][:2]])
    assert [(name, cmd["consumer_id"]) for _, name, cmd in replies] == [
        ("REACHED_END_OF_TOPIC", 7)
    ]
