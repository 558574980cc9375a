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


def _publish_batches(client, topic: str) -> list[str]:
    """Two batches: [k1=a, k2=b, k3=c] and [k1=d, k2=<null>, k4=e]; their message ids."""
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=100,
                                      batching_max_publish_delay_ms=60_000)
    ids: list[str] = []
    for batch in ([("k1", b"a"), ("k2", b"b"), ("k3", b"c")],
                  [("k1", b"d"), ("k2", None), ("k4", b"e")]):
        for key, value in batch:
            producer.send_async(value, lambda _res, mid: ids.append(str(mid)),
                                partition_key=key)
        producer.flush()
    producer.close()
    return ids


@pytest.mark.parametrize("publisher", ["official", "pulsarlab"])
def test_read_compacted_reader_on_batches_sees_the_survivors_at_their_batch_ids(
    broker, client: pulsar.Client, publisher: str
) -> None:
    """Batches in Pulsar's layout (the official client's) and pulsarlab's (its ZeroMQ
    client's, re-laid with the compacted_out marks for pulsar://) read the same."""
    topic = f"persistent://public/default/{unique('compact-batches')}"
    if publisher == "official":
        ids = _publish_batches(client, topic)
    else:
        from pulsarlab.broker.client import Client

        zmq_client = Client(broker.service_url)
        try:
            ids = _publish_batches(zmq_client, topic)
        finally:
            zmq_client.close()
    places = [tuple(i.strip("()").split(",")) for i in ids]  # (ledger, entry, partition, index)
    assert [p[3] for p in places] == ["0", "1", "2"] * 2  # two batches of three
    _rest(broker, "PUT", topic, "compaction")
    stats = _rest(broker, "GET", topic, "internalStats")["compactedLedger"]
    assert stats["entries"] == 2  # both batches kept, rebuilt
    assert stats["compactedOutBatchIndexes"] == {
        ":".join(places[0][:2]): "0b11", ":".join(places[3][:2]): "0b10"}
    reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    seen = []
    while reader.has_message_available():
        msg = reader.read_next(WAIT_MS)
        seen.append((str(msg.message_id()), msg.partition_key(), msg.data()))
    reader.close()
    # The survivors keep their ids. The C++ client under pulsar-client does not read
    # SingleMessageMetadata.compacted_out (its ConsumerImpl hands every slot of a batch
    # over; Java's skips them): the compacted-out slots come as empty messages without a
    # key, as they do from Pulsar itself.
    assert seen == [
        (ids[0], "", b""), (ids[1], "", b""), (ids[2], "k3", b"c"),
        (ids[3], "k1", b"d"), (ids[4], "", b""), (ids[5], "k4", b"e"),
    ]


def test_table_view_on_compacted_batches(broker, client: pulsar.Client) -> None:
    topic = f"persistent://public/default/{unique('compact-batches')}"
    _publish_batches(client, topic)
    _rest(broker, "PUT", topic, "compaction")
    table = client.create_table_view(topic)
    assert {key: table.get(key) for key in ("k1", "k2", "k3", "k4")} == {
        "k1": b"d", "k2": None, "k3": b"c", "k4": b"e"}
    assert len(table) == 3
    table.close()


def test_pulsarlab_client_skips_the_compacted_out_slots_of_a_pulsar_batch(
    broker, client: pulsar.Client
) -> None:
    from pulsarlab.broker.client import Client, MessageId

    topic = f"persistent://public/default/{unique('compact-batches')}"
    ids = _publish_batches(client, topic)
    _rest(broker, "PUT", topic, "compaction")
    zmq_client = Client(broker.service_url)
    try:
        reader = zmq_client.create_reader(topic, MessageId.earliest, is_read_compacted=True)
        seen = []
        while reader.has_message_available():
            msg = reader.read_next(WAIT_MS)
            seen.append((str(msg.message_id()), msg.partition_key(), msg.data()))
    finally:
        zmq_client.close()
    assert seen == [(ids[2], "k3", b"c"), (ids[3], "k1", b"d"), (ids[5], "k4", b"e")]
