"""The observer hook reports every state change the widgets need, in order."""

from pulsarlab.broker import SubType
from pulsarlab.broker.events import EventType


def test_life_of_a_message_in_events(harness):
    h = harness
    c = h.subscribe("ev", "s", "c", SubType.Shared, permits=10)
    (m,) = h.publish("ev", 1)
    h.take(c)
    h.ack(c, [m])
    h.close(c)
    kinds = [e.type for e in h.events]
    for expected in (
        EventType.TOPIC_CREATED,
        EventType.SUBSCRIPTION_CREATED,
        EventType.CONSUMER_ADDED,
        EventType.FLOW,
        EventType.PUBLISHED,
        EventType.DISPATCHED,
        EventType.ACKED,
        EventType.CURSOR_MOVED,
        EventType.CONSUMER_REMOVED,
    ):
        assert expected in kinds, expected
    order = [k for k in kinds if k in (EventType.PUBLISHED, EventType.DISPATCHED, EventType.ACKED)]
    assert order == [EventType.PUBLISHED, EventType.DISPATCHED, EventType.ACKED]
    dispatched = h.events_of(EventType.DISPATCHED)[0]
    assert dispatched.consumer == "c" and dispatched.data["entries"] == [[m[0], m[1], 0]]
    assert dispatched.to_dict()["type"] == "dispatched"


def test_failing_listener_does_not_break_the_broker(harness):
    def boom(event):
        raise RuntimeError("listener bug")

    harness.service.add_listener(boom)
    c = harness.subscribe("ev2", "s", "c", permits=5)
    assert harness.publish("ev2", 1) == harness.take(c)


def test_redelivery_reason_and_request_times_reach_the_event(harness):
    h = harness
    c = h.subscribe("ev3", "s", "c", SubType.Shared, permits=10)
    (m,) = h.publish("ev3", 1)
    h.take(c)
    h.service.redeliver_unacknowledged(c.consumer_id, [m], reason="nack", requested_at=[123])
    h.drain()
    event = h.events_of(EventType.REDELIVERY_REQUESTED)[-1]
    assert event.data["reason"] == "nack" and event.data["requested_at"] == [123]
    assert event.data["counts"] == [1]


def test_unknown_redelivery_reason_is_refused(harness):
    import pytest

    from pulsarlab.broker.errors import InvalidArgument

    c = harness.subscribe("ev4", "s", "c", SubType.Shared)
    with pytest.raises(InvalidArgument, match="redelivery reason"):
        harness.service.redeliver_unacknowledged(c.consumer_id, reason="because")


def test_dead_letter_and_retry_hops_are_reported(harness):
    from pulsarlab.broker import MessageMetadata

    h = harness
    dlq = h.service.create_producer("t-s-DLQ").producer_id
    retry = h.service.create_producer("t-s-RETRY").producer_id
    props = {"REAL_TOPIC": "persistent://public/default/t", "ORIGIN_MESSAGE_ID": "(1,2,-1,-1)"}
    h.service.send(dlq, MessageMetadata(properties=dict(props)), b"p")
    h.service.send(
        retry,
        MessageMetadata(properties={**props, "RECONSUMETIMES": "1", "DELAY_TIME": "1000"}),
        b"p",
    )
    h.commit()
    (dead,) = h.events_of(EventType.DEAD_LETTERED)
    (retried,) = h.events_of(EventType.RETRIED)
    assert dead.data["origin_message_id"] == "(1,2,-1,-1)"
    assert retried.data["reconsume_times"] == "1" and retried.data["delay_time"] == "1000"



def test_events_are_typed_and_decode_from_their_maps(harness):
    from pulsarlab.broker.events import Dispatched, decode_event

    h = harness
    c = h.subscribe("typed", "s", "c", SubType.Shared, permits=10)
    (m,) = h.publish("typed", 1)
    (dispatched,) = h.events_of(EventType.DISPATCHED)
    assert isinstance(dispatched, Dispatched) and dispatched.entries == [[m[0], m[1], 0]]
    assert decode_event(dispatched.to_dict()) == dispatched
    h.close(c)


def test_a_type_nobody_registered_decodes_to_an_unknown_event():
    """A newer broker's type keeps its name and map; so does a map whose common fields have
    the wrong types (a known type's extra fields are dropped, not refused)."""
    from pulsarlab.broker.events import Acked, UnknownEvent, decode_event

    values = {"type": "poisoned", "time": 7, "topic": "t", "subscription": "s", "x": [1]}
    event = decode_event(values)
    assert isinstance(event, UnknownEvent)
    assert (event.event_type, event.raw, event.time_ms, event.subscription) == (
        "poisoned", values, 7, "s")
    assert event.to_dict() == values
    assert decode_event(event.to_dict()) == event
    for bad in ({"time": "soon"}, {"topic": 3}, {"consumer": ["c"]}, {"time": True}):
        wrong = decode_event({"type": "acked", "time": 1, "topic": "t", **bad})
        assert isinstance(wrong, UnknownEvent) and wrong.event_type == "acked", bad
    assert isinstance(decode_event({"time": 1}), UnknownEvent)
    newer = decode_event({"type": "acked", "time": 1, "topic": "t", "positions": [[1, 2]],
                          "added_in_4_1": True})
    assert newer == Acked(time_ms=1, topic="t", positions=[[1, 2]])


def test_every_event_type_has_its_class():
    """The broker's types and the client's own kinds, each with a class that decodes back
    from its map."""
    from pulsarlab.broker.client.events import ClientEventType
    from pulsarlab.broker.events import decode_event, make_event

    for type_ in EventType:
        event = make_event(type_, 1, "t")
        assert event.type is type_
        assert decode_event(event.to_dict()) == event
    for kind in ClientEventType:
        event = decode_event({"type": str(kind), "time": 1, "topic": "t", "consumer": "c",
                              "positions": [[1, 2]]})
        assert event.type is kind and event.positions == [[1, 2]]
        assert decode_event(event.to_dict()) == event


def test_a_type_has_one_class():
    import pytest

    from pulsarlab.broker.events import BrokerEvent, event_class

    with pytest.raises(ValueError, match="'acked' already has a class"):
        event_class(EventType.ACKED)(type("Again", (BrokerEvent,), {}))
