"""The official client on a compacted topic: admin compaction over REST, read_compacted
readers and consumers, and the TableView built on them."""

from __future__ import annotations

import urllib.error

import pytest

from .conftest import WAIT_MS, drain, pulsar, rest, unique


def _rest(broker, method: str, topic: str, resource: str) -> object:
    path = topic.replace("persistent://", "/admin/v2/persistent/")
    return rest(broker, method, f"{path}/{resource}")


def _publish_table(client, topic: str) -> None:
    producer = client.create_producer(topic, batching_enabled=False)
    for key, value in [("k1", b"a"), ("k2", b"b"), ("k1", b"c"), ("k3", b"d"), ("k3", b"e")]:
        producer.send(value, partition_key=key)
    producer.send(None, partition_key="k2")  # a null-value tombstone
    producer.close()


def test_compact_over_rest_and_status(broker, client: pulsar.Client) -> None:
    topic = f"persistent://public/default/{unique('compact')}"
    _publish_table(client, topic)
    assert _rest(broker, "GET", topic, "compaction") == {"status": "NOT_RUN", "lastError": ""}
    assert _rest(broker, "PUT", topic, "compaction") is None
    assert _rest(broker, "GET", topic, "compaction") == {"status": "SUCCESS", "lastError": ""}
    stats = _rest(broker, "GET", topic, "stats")
    assert "__compaction" in stats["subscriptions"]


def test_read_compacted_reader_sees_the_latest_value_per_key_then_the_tail(
    broker, client: pulsar.Client
) -> None:
    topic = f"persistent://public/default/{unique('compact')}"
    _publish_table(client, topic)
    _rest(broker, "PUT", topic, "compaction")
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"f", partition_key="k4")
    reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    seen = []
    while reader.has_message_available():
        msg = reader.read_next(WAIT_MS)
        seen.append((msg.partition_key(), msg.data()))
    assert seen == [("k1", b"c"), ("k3", b"e"), ("k4", b"f")]
    reader.close()
    full = client.create_reader(topic, pulsar.MessageId.earliest)
    count = 0
    while full.has_message_available():
        full.read_next(WAIT_MS)
        count += 1
    assert count == 7
    full.close()


def test_read_compacted_consumer_and_shared_refusal(broker, client: pulsar.Client) -> None:
    topic = f"persistent://public/default/{unique('compact')}"
    _publish_table(client, topic)
    _rest(broker, "PUT", topic, "compaction")
    consumer = client.subscribe(
        topic, unique("sub"), is_read_compacted=True,
        initial_position=pulsar.InitialPosition.Earliest,
    )
    assert [m.data() for m in drain(consumer)] == [b"c", b"e"]
    consumer.close()
    with pytest.raises(pulsar.PulsarException):
        client.subscribe(topic, unique("shared"), consumer_type=pulsar.ConsumerType.Shared,
                         is_read_compacted=True)


def test_table_view_on_a_compacted_topic(broker, client: pulsar.Client) -> None:
    topic = f"persistent://public/default/{unique('compact')}"
    _publish_table(client, topic)
    _rest(broker, "PUT", topic, "compaction")
    table = client.create_table_view(topic)
    assert table.get("k1") == b"c"
    assert table.get("k3") == b"e"
    assert table.get("k2") is None
    table.close()


def test_compaction_of_a_missing_topic_is_404(broker) -> None:
    topic = f"persistent://public/default/{unique('missing')}"
    with pytest.raises(urllib.error.HTTPError) as info:
        _rest(broker, "PUT", topic, "compaction")
    assert info.value.code == 404
