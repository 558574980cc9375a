"""Failover switching end to end, as Pulsar 3.3's single-active-consumer dispatcher times it.

The broker's own event stamps (its clock) show the delay between a pick and the rewind that
starts reading; no wall-clock assertion is made in the test. ``ACTIVE_CONSUMER_CHANGE``
frames are read with a raw Pulsar-frame peer over ZeroMQ, whose frames arrive in order.
"""

from __future__ import annotations

import pytest

from pulsarlab import Broker
from pulsarlab.broker.client import Client, ConsumerType, InitialPosition
from pulsarlab.broker.events import EventType

from .client_support import receive_n, unique
from .zmq_pulsar.dealer import PulsarDealer, T, api, send_frame

DELAY_MS = 1000  # Pulsar's default; A joins well within it


@pytest.fixture
def broker():
    with Broker(storage="memory", active_consumer_failover_delay_ms=DELAY_MS) as b:
        yield b


@pytest.fixture
def client(broker):
    c = Client(broker.service_url, operation_timeout_seconds=10)
    yield c
    c.close()


def recorder(broker):
    events = []
    broker.call(lambda service: service.add_listener(events.append))
    return events


def of(events, type_, subscription):
    return [e for e in events if e.type == type_ and e.subscription == subscription]


def test_first_failover_pick_reads_after_the_delay_and_notifies(broker, client):
    events = recorder(broker)
    topic = unique("fo-first")
    producer = client.create_producer(topic)
    for i in range(2):
        producer.send(f"m{i}".encode())
    watcher = PulsarDealer(broker.service_url)
    watcher.connect()
    watcher.subscribe(topic, "fo", sub_type=api.CommandSubscribe.Failover, permits=0,
                      consumer_name="B", priority_level=1,
                      initialPosition=api.CommandSubscribe.Earliest)
    consumer = client.subscribe(topic, "fo", consumer_type=ConsumerType.Failover,
                                consumer_name="A", initial_position=InitialPosition.Earliest)
    # B was picked alone first; A (a higher priority) replaced it while that switch was pending.
    got = receive_n(consumer, 2, ack=False)
    assert [m.data() for m in got] == [b"m0", b"m1"]
    picked = of(events, EventType.ACTIVE_CONSUMER_CHANGED, "fo")
    rewound = of(events, EventType.CURSOR_REWOUND, "fo")
    assert [e.data["active"] for e in picked] == ["B", "A"]
    assert len(rewound) == 1  # one delayed switch, not restarted by A's arrival
    assert rewound[0].time_ms - picked[0].time_ms >= DELAY_MS
    first_dispatch = of(events, EventType.DISPATCHED, "fo")[0]
    assert events.index(first_dispatch) > events.index(rewound[0])
    told = watcher.expect(T.ACTIVE_CONSUMER_CHANGE).active_consumer_change
    assert told.is_active is False  # sent when the switch completed, to every consumer
    watcher.close()


def test_exclusive_consumers_get_no_active_consumer_change(broker):
    topic = unique("ex-silent")
    raw = PulsarDealer(broker.service_url)
    raw.connect()
    raw.producer(topic)
    raw.subscribe(topic, "ex", sub_type=api.CommandSubscribe.Exclusive, permits=10)
    raw.send(send_frame(1, 0, b"x"))
    kinds = []
    while T.MESSAGE not in kinds:
        frame = raw.recv()
        assert frame is not None and frame != "closed", kinds
        kinds.append(frame.command.type)
    assert T.ACTIVE_CONSUMER_CHANGE not in kinds
    raw.close()
