"""R-FLOW: permits gate dispatch; a batch counts as its number of messages."""

from pulsarlab.broker import SubType
from pulsarlab.broker.events import EventType

T = "flow"


def test_no_permits_no_messages_then_flow_resumes(harness):
    c = harness.subscribe(T, "s", "c", SubType.Exclusive)
    msgs = harness.publish(T, 3)
    assert harness.take(c) == []
    harness.flow(c, 2)
    assert harness.take(c) == msgs[:2]
    harness.flow(c, 5)
    assert harness.take(c) == msgs[2:]
    assert harness.events_of(EventType.FLOW)


def test_read_stops_while_chosen_consumer_has_no_permits(harness):
    c = harness.subscribe(T, "s", "c", SubType.Exclusive, permits=2)
    harness.publish(T, 5)
    cursor = harness.service.topics[f"persistent://public/default/{T}"].subscriptions["s"].cursor
    harness.take(c)
    # Nothing more was read past what the permits allowed.
    assert cursor.read_position[1] == 2


def test_batch_counts_as_its_messages(harness):
    c = harness.subscribe(T, "s", "c", SubType.Shared, permits=10)
    harness.publish(T, 3, batch=4)  # 12 messages in 3 entries
    got = harness.take(c)
    assert len(got) == 3  # the third batch overshoots: a batch is never split
    assert c.permits == 10 - 12
    harness.publish(T, 1)
    assert harness.take(c) == []  # negative permits: nothing more
    harness.flow(c, 3)
    assert len(harness.take(c)) == 1


def test_stats_show_permits(harness):
    c = harness.subscribe(T, "s", "c", SubType.Shared, permits=7)
    stats = harness.service.topic_stats(T)["subscriptions"]["s"]["consumers"][0]
    assert stats["availablePermits"] == 7 and stats["consumerName"] == "c"
    assert c.permits == 7
