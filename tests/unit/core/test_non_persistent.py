"""R-TOPIC non-persistent topics: only connected consumers get messages; nothing is kept."""

import pytest

from pulsarlab.broker import ManualClock, SubType
from pulsarlab.broker.events import EventType

NP = "non-persistent://public/default/ticks"


@pytest.mark.parametrize(
    "sub_type", [SubType.Exclusive, SubType.Failover, SubType.Shared, SubType.Key_Shared]
)
def test_connected_consumers_get_messages_for_every_type(harness, sub_type):
    c = harness.subscribe(NP, "s", "c", sub_type, permits=10)
    msgs = harness.publish(NP, 3, key="k")
    assert harness.take(c) == msgs


def test_messages_before_subscribing_are_missed(harness):
    harness.publish(NP, 3)
    c = harness.subscribe(NP, "s", "c", SubType.Shared, permits=10)
    assert harness.take(c) == []
    later = harness.publish(NP, 1)
    assert harness.take(c) == later


def test_no_permits_means_dropped_not_buffered(harness):
    c = harness.subscribe(NP, "s", "c", SubType.Shared, permits=1)
    msgs = harness.publish(NP, 3)
    assert harness.take(c) == msgs[:1]
    harness.flow(c, 10)
    assert harness.take(c) == []  # the other two were dropped
    assert harness.service.topic_stats(NP)["msgDropCounter"] == 2
    assert harness.events_of(EventType.DROPPED)


def test_no_redelivery_and_nothing_kept(harness):
    c = harness.subscribe(NP, "s", "c", SubType.Shared, permits=10)
    harness.publish(NP, 2)
    harness.take(c)
    harness.service.redeliver_unacknowledged(c.consumer_id)
    harness.drain()
    assert harness.take(c) == []
    assert harness.service.topic_stats(NP)["subscriptions"]["s"]["msgBacklog"] == 0


def test_reconnecting_consumer_starts_from_now(harness):
    c = harness.subscribe(NP, "s", "c", SubType.Exclusive, permits=10)
    harness.close(c)
    harness.publish(NP, 2)
    c2 = harness.subscribe(NP, "s", "c", SubType.Exclusive, permits=10)
    assert harness.take(c2) == []


def test_lost_on_restart(make_harness, durable_storage_factory):
    clock = ManualClock()
    h = make_harness(storage=durable_storage_factory(), clock=clock)
    h.service.create_partitioned_topic(NP, 2)
    h.publish(f"{NP}-partition-0", 1)
    assert NP in h.service.list_topics()
    h.service.close()
    h2 = make_harness(storage=durable_storage_factory(), clock=clock)
    assert h2.service.list_topics() == []
    assert h2.service.get_partitioned_topic_metadata(NP) == 0
