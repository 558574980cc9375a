"""REST over traffic of the official ``pulsar-client``: what pulsar:// stored, admin shows."""

from __future__ import annotations

import json

import pytest

pulsar = pytest.importorskip("pulsar", reason="the official pulsar-client (dev extra) is needed")

BASE = "/admin/v2/persistent/public/default"


@pytest.fixture(scope="module")
def official(broker):
    client = pulsar.Client(broker.pulsar_url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    yield client
    client.close()


def test_examine_a_message_and_a_batch_the_official_client_sent(rest, official):
    topic = "persistent://public/default/official-peek"
    single = official.create_producer(topic, batching_enabled=False, producer_name="solo")
    first = single.send(b"one", properties={"a": "b"}, partition_key="k1",
                        event_timestamp=1_700_000_000_000)
    batched = official.create_producer(topic, batching_enabled=True,
                                       batching_max_publish_delay_ms=5)
    for i in range(3):
        batched.send_async(f"b{i}".encode(), None)
    batched.flush()
    answer = rest.get(f"{BASE}/official-peek/examinemessage?initialPosition=earliest")
    h = answer.headers
    assert answer.body == b"one"
    assert h["X-Pulsar-Message-ID"] == f"{first.ledger_id()}:{first.entry_id()}"
    assert json.loads(h["X-Pulsar-PROPERTY"]) == {"a": "b"}
    assert (h["X-Pulsar-partition-key"], h["X-Pulsar-producer-name"]) == ("k1", "solo")
    assert h["X-Pulsar-event-time"] == "2023-11-14T22:13:20.000Z"
    batch = rest.get(f"{BASE}/official-peek/examinemessage?initialPosition=latest")
    assert batch.headers["X-Pulsar-num-batch-message"] == "3"
    assert all(f"b{i}".encode() in batch.body for i in range(3))  # Pulsar's batch layout
    last = rest.get(f"{BASE}/official-peek/lastMessageId").json
    assert last["entryId"] == first.entry_id() + 1
    single.close()
    batched.close()


def test_a_rest_subscription_and_reset_drive_an_official_consumer(rest, official):
    topic = "persistent://public/default/official-cursor"
    assert rest.put(f"{BASE}/official-cursor").status == 204
    assert rest.put(f"{BASE}/official-cursor/subscription/s",
                    {"ledgerId": -1, "entryId": -1}).status == 204
    producer = official.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode()) for i in range(4)]
    assert rest.post(f"{BASE}/official-cursor/subscription/s/skip/1").status == 204
    consumer = official.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
    got = [consumer.receive(timeout_millis=5000) for _ in range(3)]
    assert [m.data() for m in got] == [b"m1", b"m2", b"m3"]
    for m in got:
        consumer.acknowledge(m)
    stats = rest.get(f"{BASE}/official-cursor/stats").json["subscriptions"]["s"]
    assert stats["consumers"][0]["msgOutCounter"] >= 3
    consumer.close()
    target = {"ledgerId": ids[2].ledger_id(), "entryId": ids[2].entry_id()}
    assert rest.post(f"{BASE}/official-cursor/subscription/s/resetcursor", target).status == 204
    consumer = official.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
    assert consumer.receive(timeout_millis=5000).data() == b"m2"
    consumer.close()
    producer.close()
