"""A terminated topic over pulsar:// with bytes: CLOSE_PRODUCER, TopicTerminatedError on
PRODUCER and SEND, REACHED_END_OF_TOPIC once a consumer acknowledged everything."""

from __future__ import annotations

from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api

from .support import Harness, T, command, send_frame

TOPIC = "persistent://public/default/t"


def _session_with_traffic():
    h = Harness()
    s = h.session()
    h.connect(s)
    h.run(s, command(T.PRODUCER, "producer", topic=TOPIC, producer_id=1, request_id=1))
    h.run(s, command(T.SUBSCRIBE, "subscribe", topic=TOPIC, subscription="sub",
                     subType=api.CommandSubscribe.Shared, consumer_id=7, request_id=2))
    h.run(s, command(T.FLOW, "flow", consumer_id=7, messagePermits=10))
    replies = h.run(s, send_frame(1, 0, b"a")) + h.run(s, send_frame(1, 1, b"b"))
    ids = [r.message.message_id for r in replies if r.type == T.MESSAGE]
    return h, s, ids


def test_terminate_closes_the_producer_and_refuses_a_new_one() -> None:
    h, s, _ids = _session_with_traffic()
    end = h.service.terminate_topic(TOPIC)
    replies = h.run(s)
    assert [(r.type, r.close_producer.producer_id) for r in replies] == [(T.CLOSE_PRODUCER, 1)]
    (reply,) = h.run(s, command(T.PRODUCER, "producer", topic=TOPIC, producer_id=2,
                                request_id=3))
    assert reply.type == T.ERROR and reply.error.error == api.TopicTerminatedError
    assert "terminated" in reply.error.message
    assert h.service.last_message_id(TOPIC) == end


def test_a_send_on_a_terminated_ledger_gets_topic_terminated_error() -> None:
    h, s, _ids = _session_with_traffic()
    h.service.get_topic(TOPIC).ledger.terminate(h.clock.now_ms())  # a send racing terminate
    (reply,) = h.run(s, send_frame(1, 2, b"c"))
    assert reply.type == T.SEND_ERROR
    assert (reply.send_error.sequence_id, reply.send_error.error) == (2, api.TopicTerminatedError)


def test_the_consumer_hears_the_end_after_acking_everything() -> None:
    h, s, ids = _session_with_traffic()
    h.service.terminate_topic(TOPIC)
    h.run(s)
    replies = h.run(s, command(T.ACK, "ack", consumer_id=7, ack_type=api.CommandAck.Individual,
                               message_id=[ids[0]]))
    assert [r.type for r in replies] == []
    replies = h.run(s, command(T.ACK, "ack", consumer_id=7, ack_type=api.CommandAck.Individual,
                               message_id=[ids[1]]))
    assert [(r.type, r.reachedEndOfTopic.consumer_id) for r in replies] == [
        (T.REACHED_END_OF_TOPIC, 7)
    ]


def test_a_reader_subscribing_at_the_end_hears_it_at_once() -> None:
    h, s, _ids = _session_with_traffic()
    h.service.terminate_topic(TOPIC)
    h.run(s)
    replies = h.run(s, command(T.SUBSCRIBE, "subscribe", topic=TOPIC, subscription="reader-x",
                               subType=api.CommandSubscribe.Exclusive, consumer_id=8,
                               request_id=4, durable=False))
    assert [r.type for r in replies] == [T.SUCCESS, T.REACHED_END_OF_TOPIC]
    assert replies[1].reachedEndOfTopic.consumer_id == 8
