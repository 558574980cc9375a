"""R-MULTI end to end: a list of topics, and a pattern that picks up topics created later."""

from __future__ import annotations

import re
import time

from pulsarlab.broker.client import InitialPosition, Timeout

from .client_support import WAIT_MS, receive_n, unique

EARLIEST = InitialPosition.Earliest


def test_list_of_topics(client):
    topics = [unique("multi-a"), unique("multi-b")]
    consumer = client.subscribe(topics, "sub", initial_position=EARLIEST)
    for t in topics:
        producer = client.create_producer(t)
        for i in range(3):
            producer.send(f"{t}/{i}".encode())
    got = receive_n(consumer, 6, ack=False)
    for m in got:
        consumer.acknowledge(m.message_id())  # acks by id find their topic
    by_topic: dict = {}
    for m in got:
        by_topic.setdefault(m.topic_name(), []).append(m.data())
    assert {t.rsplit("/", 1)[-1] for t in by_topic} == set(topics)
    for t in topics:  # order holds within a topic
        assert by_topic[f"persistent://public/default/{t}"] == [f"{t}/{i}".encode()
                                                                 for i in range(3)]


def test_pattern_picks_up_new_topics(broker, client):
    prefix = unique("pattern")
    client.create_producer(f"{prefix}-one").send(b"one")
    client.create_producer(unique("unrelated")).send(b"nope")
    consumer = client.subscribe(re.compile(f"{prefix}-.*"), "sub", initial_position=EARLIEST,
                                pattern_auto_discovery_period=1)
    assert consumer.receive(WAIT_MS).data() == b"one"
    producer = client.create_producer(f"{prefix}-two")  # created after the subscription
    deadline = time.monotonic() + 10
    got = None
    while got is None and time.monotonic() < deadline:
        producer.send(b"two")
        try:
            got = consumer.receive(500)
        except Timeout:
            continue
    assert got is not None and got.data() == b"two"
    assert got.topic_name().endswith(f"{prefix}-two")


def test_full_name_pattern(client):
    prefix = unique("fullpat")
    client.create_producer(f"{prefix}-x").send(b"x")
    consumer = client.subscribe(re.compile(f"persistent://public/default/{prefix}-.*"), "sub",
                                initial_position=EARLIEST)
    assert consumer.receive(WAIT_MS).data() == b"x"
