"""Rules the msgpack wire once had its own way, as every transport now serves them (one
session): GetLastMessageId gives the last batch's index, a repeated SUBSCRIBE succeeds, a
SEEK disconnects the subscription's consumers."""

from __future__ import annotations

from .support import Harness, T, command, send_frame


def _subscribed(h: Harness):
    s = h.session()
    h.connect(s)
    h.run(s, command(T.PRODUCER, "producer", topic="t", producer_id=1, request_id=1))
    h.run(s, command(T.SUBSCRIBE, "subscribe", topic="t", subscription="s", consumer_id=3,
                     request_id=2, subType=0))
    return s


def test_last_message_id_names_the_last_batch_index() -> None:
    h = Harness()
    s = _subscribed(h)
    h.run(s, send_frame(1, 0, b"batch", num_messages_in_batch=3))
    (reply,) = h.run(s, command(T.GET_LAST_MESSAGE_ID, "getLastMessageId", consumer_id=3,
                                request_id=4))
    last = reply.getLastMessageIdResponse.last_message_id
    assert (last.entryId, last.batch_index) == (0, 2)


def test_a_repeated_subscribe_succeeds() -> None:
    h = Harness()
    s = _subscribed(h)
    (reply,) = h.run(s, command(T.SUBSCRIBE, "subscribe", topic="t", subscription="s",
                                consumer_id=3, request_id=5, subType=0))
    assert (reply.type, reply.success.request_id) == (T.SUCCESS, 5)
    assert len(h.service.consumers) == 1


def test_seek_disconnects_the_subscriptions_consumers() -> None:
    h = Harness()
    s = _subscribed(h)
    other = h.session()
    h.connect(other)
    h.run(s, command(T.SUBSCRIBE, "subscribe", topic="t", subscription="shared",
                     consumer_id=8, request_id=5, subType=1))
    h.run(other, command(T.SUBSCRIBE, "subscribe", topic="t", subscription="shared",
                         consumer_id=1, request_id=2, subType=1))
    replies = h.run(s, command(T.SEEK, "seek", consumer_id=8, request_id=6,
                               message_publish_time=0))
    assert [(r.type, r.close_consumer.consumer_id) for r in replies] == [
        (T.CLOSE_CONSUMER, 8), (T.SUCCESS, 0)]
    (closed,) = h.run(other)
    assert (closed.type, closed.close_consumer.consumer_id) == (T.CLOSE_CONSUMER, 1)
