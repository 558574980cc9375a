"""The rules both faces share, over ZeroMQ frames (their pulsar:// twins are in
tests/unit/pulsar_protocol/test_face_rules.py): GetLastMessageId gives the last batch's
index, a repeated SUBSCRIBE succeeds, a SEEK disconnects the subscription's consumers."""

from __future__ import annotations

from .test_zmq_protocol import Peer


def _subscribed() -> Peer:
    peer = Peer()
    peer.request(b"c", "CONNECT", 1, client_version="t")
    peer.request(b"c", "PRODUCER", 2, topic="t", producer_id=1)
    peer.request(b"c", "SUBSCRIBE", 3, topic="t", subscription="s", consumer_id=7,
                 sub_type="Exclusive", consumer_name="me")
    return peer


def test_last_message_id_names_the_last_batch_index() -> None:
    peer = _subscribed()
    peer.request(b"c", "SEND", 0, [b"batch"], producer_id=1, sequence_id=0,
                 metadata={"num_messages_in_batch": 3})
    [(_, name, reply)] = peer.request(b"c", "GET_LAST_MESSAGE_ID", 4, consumer_id=7)
    assert name == "SUCCESS"
    _ledger, entry, partition, batch_index = reply["result"]
    assert (entry, partition, batch_index) == (0, -1, 2)


def test_a_repeated_subscribe_succeeds() -> None:
    peer = _subscribed()
    [(_, name, reply)] = peer.request(b"c", "SUBSCRIBE", 5, topic="t", subscription="s",
                                      consumer_id=7, sub_type="Exclusive")
    assert (name, reply["result"]) == ("SUCCESS", "me")
    assert len(peer.service.consumers) == 1


def test_seek_disconnects_the_subscriptions_consumers_and_names_the_next_position() -> None:
    peer = _subscribed()
    peer.request(b"d", "CONNECT", 1, client_version="t")
    peer.request(b"c", "SUBSCRIBE", 5, topic="t", subscription="shared", consumer_id=8,
                 sub_type="Shared")
    peer.request(b"d", "SUBSCRIBE", 2, topic="t", subscription="shared", consumer_id=1,
                 sub_type="Shared")
    for sequence_id in range(2):
        peer.request(b"c", "SEND", 0, [b"m"], producer_id=1, sequence_id=sequence_id,
                     metadata={})
    replies = peer.request(b"c", "SEEK", 6, consumer_id=8, message_id=[0, 1, -1, -1])
    got = [(ident, name, cmd.get("consumer_id"), cmd.get("reason"), cmd.get("result"))
           for ident, name, cmd in replies]
    assert got == [(b"c", "CLOSE_CONSUMER", 8, "seek", None),
                   (b"c", "SUCCESS", None, None, [0, 1]),
                   (b"d", "CLOSE_CONSUMER", 1, "seek", None)]
    [(_, _, error)] = peer.request(b"c", "FLOW", 7, consumer_id=8, permits=1)
    assert error["code"] == "ConsumerNotFound"
