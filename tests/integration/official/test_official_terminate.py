"""The official client on a terminated topic (terminated over REST, as pulsar-admin does).

The C++ core of ``pulsar-client`` 3.x has no handler for REACHED_END_OF_TOPIC: it logs
"Received invalid message from server" and reconnects, as it does against Pulsar 3.3 itself,
so what a test can see through it is the producer side and the reader's end (both in
tests/integration/behaviour/test_producers.py, on every face).
"""

from __future__ import annotations

import json
import urllib.request

from .conftest import WAIT_MS, pulsar, unique


def _rest(broker, method: str, topic: str, resource: str) -> dict:
    path = topic.replace("persistent://", "/admin/v2/persistent/")
    request = urllib.request.Request(f"{broker.web_url}{path}/{resource}", method=method)
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def _terminate(broker, topic: str) -> dict:
    return _rest(broker, "POST", topic, "terminate")


def test_a_consumer_drains_what_was_published_before_the_end(
    broker, client: pulsar.Client
) -> None:
    """REACHED_END_OF_TOPIC reaches this client once it acks, which it answers by
    reconnecting; the messages before the end are all delivered."""
    topic = f"persistent://public/default/{unique('terminated')}"
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(2):
        producer.send(f"m{i}".encode())
    _terminate(broker, topic)
    received = []
    for _ in range(2):
        msg = consumer.receive(WAIT_MS)
        consumer.acknowledge(msg)
        received.append(msg.data())
    assert received == [b"m0", b"m1"]


def test_unload_closes_the_topic_and_the_client_reconnects(broker, client: pulsar.Client) -> None:
    """Admin unload (``PersistentTopic.close``): CLOSE_PRODUCER / CLOSE_CONSUMER, the
    official client reconnects both; the unacked message is delivered again."""
    topic = f"persistent://public/default/{unique('unloaded')}"
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"a")
    assert consumer.receive(WAIT_MS).data() == b"a"  # not acked
    request = urllib.request.Request(
        f"{broker.web_url}{topic.replace('persistent://', '/admin/v2/persistent/')}/unload",
        method="PUT",
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 204
    producer.send(b"b")
    assert sorted(consumer.receive(WAIT_MS).data() for _ in range(2)) == [b"a", b"b"]
