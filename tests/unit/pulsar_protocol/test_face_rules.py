"""The rules both faces share, over pulsar:// bytes (their ZeroMQ twins are in
tests/unit/zmq_session/test_zmq_face_rules.py): GetLastMessageId gives the last batch's
index, a repeated SUBSCRIBE succeeds."""

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
