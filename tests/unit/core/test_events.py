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
