"""One connection's frames leave in the order the broker produced them.

A command's direct answer (SUCCESS, GET_LAST_MESSAGE_ID_RESPONSE, ...) must not overtake
what the core queued for the same connection earlier in the burst (REACHED_END_OF_TOPIC
from a SUBSCRIBE or an ACK, a CLOSE_CONSUMER from a SEEK, an ACTIVE_CONSUMER_CHANGE from a
SUBSCRIBE), as Pulsar's ServerCnx writes everything to its Netty channel as it happens. A
SUBSCRIBE's own SUCCESS goes before the end notice it produced (Pulsar's consumer hears the
end from a read, after the SUBSCRIBE completed) and after its ACTIVE_CONSUMER_CHANGE (sent
while the consumer is added). Each burst is fed as one read, then committed and handed out,
as the broker's loop does.
"""

from __future__ import annotations

from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.transports import hand_out

from .support import Harness, T, command, send_frame

TOPIC = "persistent://public/default/t"
_SUB = api.CommandSubscribe


def _subscribe(consumer_id: int, request_id: int, subscription: str = "late",
               sub_type: int = _SUB.Exclusive, name: str = "", priority: int = 0) -> bytes:
    return command(T.SUBSCRIBE, "subscribe", topic=TOPIC, subscription=subscription,
                   subType=sub_type, consumer_id=consumer_id, request_id=request_id,
                   consumer_name=name or f"c{consumer_id}", priority_level=priority)


def _terminated_topic(h: Harness):
    s = h.session()
    h.connect(s)
    h.run(s, command(T.PRODUCER, "producer", topic=TOPIC, producer_id=1, request_id=1))
    h.run(s, send_frame(1, 0, b"a"))
    h.service.terminate_topic(TOPIC)
    h.run(s)
    return s


def _kinds(replies: list) -> list[str]:
    return [T.Type.Name(r.type) for r in replies]


def test_the_end_of_topic_comes_before_the_answer_to_a_later_command() -> None:
    # The flaky end-to-end test's burst: a late consumer subscribes at the end of a
    # terminated topic, flows, and asks for the last message id in the same read. Pulsar
    # completes the SUBSCRIBE first (its consumer hears the end from a read, later).
    h = Harness()
    s = _terminated_topic(h)
    burst = (
        _subscribe(7, 10, sub_type=_SUB.Shared)
        + command(T.FLOW, "flow", consumer_id=7, messagePermits=100)
        + command(T.GET_LAST_MESSAGE_ID, "getLastMessageId", consumer_id=7, request_id=11)
    )
    replies = h.run(s, burst)
    assert _kinds(replies) == [
        "SUCCESS", "REACHED_END_OF_TOPIC", "GET_LAST_MESSAGE_ID_RESPONSE"
    ]
    assert replies[0].success.request_id == 10
    assert replies[1].reachedEndOfTopic.consumer_id == 7


def test_the_end_heard_after_the_last_ack_comes_before_a_later_answer() -> None:
    h = Harness()
    s = h.session()
    h.connect(s)
    h.run(s, command(T.PRODUCER, "producer", topic=TOPIC, producer_id=1, request_id=1))
    h.run(s, _subscribe(7, 2, "sub", _SUB.Shared))
    h.run(s, command(T.FLOW, "flow", consumer_id=7, messagePermits=10))
    (message,) = [r for r in h.run(s, send_frame(1, 0, b"a")) if r.type == T.MESSAGE]
    h.service.terminate_topic(TOPIC)
    h.run(s)
    burst = (
        command(T.ACK, "ack", consumer_id=7, ack_type=api.CommandAck.Individual,
                message_id=[message.message.message_id])
        + command(T.GET_LAST_MESSAGE_ID, "getLastMessageId", consumer_id=7, request_id=3)
        + command(T.CONSUMER_STATS, "consumerStats", consumer_id=7, request_id=4)
    )
    assert _kinds(h.run(s, burst)) == [
        "REACHED_END_OF_TOPIC", "GET_LAST_MESSAGE_ID_RESPONSE", "CONSUMER_STATS_RESPONSE"
    ]


def test_a_reader_of_a_terminated_topic_hears_the_end_after_its_success() -> None:
    h = Harness()
    s = _terminated_topic(h)
    burst = (
        command(T.SUBSCRIBE, "subscribe", topic=TOPIC, subscription="reader-1",
                subType=_SUB.Exclusive, consumer_id=8, request_id=20, durable=False,
                start_message_id=api.MessageIdData(ledgerId=(1 << 63) - 1,
                                                   entryId=(1 << 63) - 1))
        + command(T.FLOW, "flow", consumer_id=8, messagePermits=100)
        + command(T.GET_LAST_MESSAGE_ID, "getLastMessageId", consumer_id=8, request_id=21)
    )
    assert _kinds(h.run(s, burst)) == [
        "SUCCESS", "REACHED_END_OF_TOPIC", "GET_LAST_MESSAGE_ID_RESPONSE"
    ]


def test_success_keeps_its_place_behind_actions_of_an_earlier_command() -> None:
    # Two SUBSCRIBEs at the end of a terminated topic in one read: the first one's end
    # notice is queued before the second one's SUCCESS, which is then put in front of its
    # own consumer's notice only.
    h = Harness()
    s = _terminated_topic(h)
    replies = h.run(s, _subscribe(7, 10, "x", _SUB.Shared) + _subscribe(8, 11, "y", _SUB.Shared))
    assert [(T.Type.Name(r.type), r.success.request_id or r.reachedEndOfTopic.consumer_id)
            for r in replies] == [
        ("SUCCESS", 10), ("REACHED_END_OF_TOPIC", 7), ("SUCCESS", 11),
        ("REACHED_END_OF_TOPIC", 8),
    ]


def test_seek_closes_every_consumer_of_the_subscription_before_its_success() -> None:
    # Pulsar's PersistentSubscription.resetCursor disconnects the subscription's consumers
    # (CLOSE_CONSUMER to each) and only then completes the SEEK (SUCCESS).
    h = Harness()
    s = h.session()
    h.connect(s)
    h.run(s, _subscribe(1, 1, "shared", _SUB.Shared) + _subscribe(2, 2, "shared", _SUB.Shared))
    replies = h.run(s, command(T.SEEK, "seek", consumer_id=1, request_id=3,
                               message_publish_time=0))
    assert _kinds(replies) == ["CLOSE_CONSUMER", "CLOSE_CONSUMER", "SUCCESS"]
    assert sorted(r.close_consumer.consumer_id for r in replies[:2]) == [1, 2]
    assert replies[2].success.request_id == 3


def test_a_failover_newcomer_hears_who_is_active_before_its_success() -> None:
    # AbstractDispatcherSingleActiveConsumer.addConsumer: the active consumer did not change
    # (the newcomer has a lower priority), so the newcomer is told so (is_active false) while
    # it is added, before the SUBSCRIBE completes with SUCCESS.
    h = Harness()
    s = h.session()
    h.connect(s)
    h.run(s, _subscribe(1, 1, "fo", _SUB.Failover, name="a"))
    h.clock.advance(h.settings.active_consumer_failover_delay_ms)
    h.service.tick()
    h.run(s)
    replies = h.run(s, _subscribe(2, 2, "fo", _SUB.Failover, name="b", priority=1)
                    + command(T.GET_LAST_MESSAGE_ID, "getLastMessageId", consumer_id=2,
                              request_id=3))
    assert _kinds(replies) == [
        "ACTIVE_CONSUMER_CHANGE", "SUCCESS", "GET_LAST_MESSAGE_ID_RESPONSE"
    ]
    change = replies[0].active_consumer_change
    assert (change.consumer_id, change.is_active) == (2, False)


def test_the_first_failover_consumer_gets_success_then_the_delayed_notice() -> None:
    # scheduleReadOnActiveConsumer: a Failover switch waits activeConsumerFailoverDelayTime-
    # Millis (1 s by default) before it notifies, so SUCCESS comes first.
    h = Harness()
    s = h.session()
    h.connect(s)
    assert _kinds(h.run(s, _subscribe(1, 1, "fo", _SUB.Failover))) == ["SUCCESS"]
    h.clock.advance(h.settings.active_consumer_failover_delay_ms)
    h.service.tick()
    replies = h.run(s)
    assert _kinds(replies) == ["ACTIVE_CONSUMER_CHANGE"]
    assert replies[0].active_consumer_change.is_active


def test_without_a_failover_delay_the_notice_comes_before_success() -> None:
    h = Harness(active_consumer_failover_delay_ms=0)
    s = h.session()
    h.connect(s)
    replies = h.run(s, _subscribe(1, 1, "fo", _SUB.Failover))
    assert _kinds(replies) == ["ACTIVE_CONSUMER_CHANGE", "SUCCESS"]


def test_answers_keep_their_order_behind_pending_actions() -> None:
    # Once the core holds an action for the connection, every later answer waits behind
    # it: PING's PONG does not overtake the end notice queued before it.
    h = Harness()
    s = _terminated_topic(h)
    burst = (
        _subscribe(7, 10, sub_type=_SUB.Shared)
        + command(T.FLOW, "flow", consumer_id=7, messagePermits=1)
        + command(T.PING, "ping")
    )
    assert _kinds(h.run(s, burst)) == ["SUCCESS", "REACHED_END_OF_TOPIC", "PONG"]


def test_an_error_that_closes_the_connection_still_goes_out_last() -> None:
    # A broken frame after an answer that waits behind an action: both go out, in order,
    # before the connection closes.
    h = Harness()
    s = _terminated_topic(h)
    s.receive_data(_subscribe(7, 10, sub_type=_SUB.Shared)
                   + command(T.FLOW, "flow", consumer_id=7, messagePermits=1))
    s.receive_data(b"\x00\x00\x00\x05\x00\x00\x00\x09x")  # later in the same burst
    assert s.closed
    frames = [f.command for f in h.frames(s)]
    assert _kinds(frames) == ["SUCCESS", "REACHED_END_OF_TOPIC", "ERROR"]
    assert "invalid frame" in frames[2].error.message


def test_the_broker_hand_out_writes_waiting_answers_in_their_place() -> None:
    # The loop's own hand-out (not the harness's): an answer waiting in the outbox leaves
    # through the session's transport behind the actions queued before it.
    h = Harness()
    s = _terminated_topic(h)
    s.receive_data(_subscribe(7, 10, sub_type=_SUB.Shared)
                   + command(T.GET_LAST_MESSAGE_ID, "getLastMessageId", consumer_id=7,
                             request_id=11))
    assert _kinds([f.command for f in h.frames(s)]) == ["SUCCESS"]  # written at once
    h.service.commit()
    hand_out(h.service.take_actions())
    assert _kinds([f.command for f in h.frames(s)]) == [
        "REACHED_END_OF_TOPIC", "GET_LAST_MESSAGE_ID_RESPONSE"
    ]
