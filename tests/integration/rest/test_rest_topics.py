"""REST: persistent and non-persistent topics, partitioned topics and their stats."""

from __future__ import annotations

import pytest

from pulsarlab import Client

from ..zmq_pulsar.dealer import wait_until

BASE = "/admin/v2/persistent/public/default"


@pytest.fixture(scope="module")
def client(broker):
    c = Client(broker.service_url)
    yield c
    c.close()


def test_create_list_and_delete_a_topic(rest):
    assert rest.put(f"{BASE}/plain").status == 204
    exists = rest.put(f"{BASE}/plain")
    assert exists.status == 409 and "already exists" in exists.reason
    assert "persistent://public/default/plain" in rest.get(BASE).json
    assert rest.delete(f"{BASE}/plain").status == 204
    assert rest.delete(f"{BASE}/plain").status == 404
    assert rest.get("/admin/v2/persistent/public/nowhere").status == 404
    bad = rest.put(f"{BASE}/bad%20name%20")
    assert bad.status == 412 and "invalid topic name" in bad.reason
    refused = rest.put(f"{BASE}/bad%20topic%21")  # Pulsar's NamedEntity characters
    assert refused.status == 412 and "may only contain letters, digits" in refused.reason
    assert not [t for t in rest.get(BASE).json if "bad" in t]


def test_delete_with_a_connected_consumer_needs_force(rest, client):
    consumer = client.subscribe("persistent://public/default/busy", "s")
    busy = rest.delete(f"{BASE}/busy")
    assert busy.status == 412 and "connected producers or consumers" in busy.reason
    assert rest.delete(f"{BASE}/busy?force=true").status == 204
    # The disconnected consumer subscribes again, as Pulsar's clients do (which makes the
    # topic anew): once it is back and then closed, the topic can go for good.
    wait_until(lambda: rest.get(f"{BASE}/busy/stats").json
               .get("subscriptions", {}).get("s", {}).get("consumers"),
               "the consumer to subscribe again")
    consumer.close()
    assert rest.delete(f"{BASE}/busy?force=true").status == 204
    assert rest.get(f"{BASE}/busy/stats").status == 404


def test_partitioned_topics(rest):
    assert rest.put(f"{BASE}/orders/partitions", 3).status == 204
    assert rest.put(f"{BASE}/orders/partitions", 3).status == 409
    assert rest.put(f"{BASE}/zero/partitions", 0).status == 406
    assert rest.put(f"{BASE}/text/partitions", "three").status == 400
    assert rest.get(f"{BASE}/orders/partitions").json == {"partitions": 3, "deleted": False}
    assert rest.get(f"{BASE}/partitioned").json == ["persistent://public/default/orders"]
    listed = rest.get(BASE).json
    assert [f"persistent://public/default/orders-partition-{i}" for i in range(3)] == [
        t for t in listed if "/orders" in t
    ]
    assert rest.put(f"{BASE}/orders/subscription/billing").status == 204
    assert rest.post(f"{BASE}/orders/partitions", 5).status == 204
    assert rest.get(f"{BASE}/orders/partitions").json == {"partitions": 5, "deleted": False}
    assert rest.get(f"{BASE}/orders-partition-4/subscriptions").json == ["billing"]
    shrink = rest.post(f"{BASE}/orders/partitions", 2)
    assert shrink.status == 422 and "can't be less than the current 5" in shrink.reason
    assert rest.put(f"{BASE}/single").status == 204
    assert rest.post(f"{BASE}/single/partitions", 4).status == 412
    assert rest.delete(f"{BASE}/single/partitions").status == 409  # as Pulsar (conformance)
    stats = rest.get(f"{BASE}/orders/partitioned-stats").json
    assert stats["metadata"] == {"partitions": 5, "deleted": False}
    assert len(stats["partitions"]) == 5
    assert "billing" in stats["subscriptions"]
    # PartitionedTopicStatsImpl: an empty map when the partitions are not asked for
    assert rest.get(f"{BASE}/orders/partitioned-stats?perPartition=false").json[
        "partitions"] == {}
    whole = rest.delete(f"{BASE}/orders")
    assert whole.status == 409 and "delete-partitioned-topic" in whole.reason
    for resource in ("stats", "internalStats"):
        assert rest.get(f"{BASE}/orders/{resource}").status == 404
    assert rest.get(f"{BASE}/orders-partition-0/stats").status == 200
    assert rest.delete(f"{BASE}/orders/partitions").status == 204
    assert rest.get(f"{BASE}/orders/partitions").json == {"partitions": 0, "deleted": False}


def test_stats_internal_stats_and_last_message_id(rest, client):
    topic = "persistent://public/default/measured"
    consumer = client.subscribe(topic, "watch")
    producer = client.create_producer(topic, producer_name="writer")
    ids = [producer.send(f"m{i}".encode()) for i in range(3)]
    stats = rest.get(f"{BASE}/measured/stats").json
    assert stats["msgInCounter"] == 3
    assert stats["publishers"][0]["producerName"] == "writer"
    sub = stats["subscriptions"]["watch"]
    for field in ("type", "msgBacklog", "unackedMessages", "msgOutCounter", "isDurable",
                  "consumers", "msgDelayed"):
        assert field in sub
    assert {"consumerName", "availablePermits", "unackedMessages", "msgOutCounter"} <= set(
        sub["consumers"][0]
    )
    internal = rest.get(f"{BASE}/measured/internalStats").json
    assert internal["numberOfEntries"] == 3
    assert internal["lastConfirmedEntry"] == f"{ids[-1].ledger_id()}:{ids[-1].entry_id()}"
    assert set(internal["cursors"]["watch"]) >= {"markDeletePosition", "readPosition",
                                                 "individuallyDeletedMessages"}
    last = rest.get(f"{BASE}/measured/lastMessageId").json
    assert last == {"ledgerId": ids[-1].ledger_id(), "entryId": ids[-1].entry_id(),
                    "partitionIndex": -1, "batchIndex": -1, "batchSize": 0}
    assert rest.get(f"{BASE}/measured/subscriptions").json == ["watch"]
    assert rest.put(f"{BASE}/measured/unload").status == 204
    assert rest.put(f"{BASE}/ghost/unload").status == 404
    for resource in ("stats", "internalStats", "lastMessageId", "subscriptions"):
        missing = rest.get(f"{BASE}/ghost/{resource}")
        # Pulsar's wording (PersistentTopicsBase.getTopicNotFoundErrorMessage)
        assert (missing.status, missing.reason) == (
            404, "Topic persistent://public/default/ghost not found")
    consumer.close()
    producer.close()


def test_last_message_id_names_the_largest_batch_index(rest, client):
    # Pulsar reads the last entry and answers its largest batch index (size - 1), -1 for a
    # single message: a reader's hasMessageAvailable compares against it.
    topic = "persistent://public/default/batched-last"
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=4,
                                      batching_max_publish_delay_ms=60_000)
    for i in range(4):
        producer.send_async(f"b{i}".encode(), None)
    producer.flush()
    last = rest.get(f"{BASE}/batched-last/lastMessageId").json
    assert last["batchIndex"] == 3
    plain = client.create_producer(topic, batching_enabled=False)
    single = plain.send(b"one")
    assert rest.get(f"{BASE}/batched-last/lastMessageId").json == {
        "ledgerId": single.ledger_id(), "entryId": single.entry_id(), "partitionIndex": -1,
        "batchIndex": -1, "batchSize": 0}
    producer.close()
    plain.close()


def test_non_persistent_topics(rest, client):
    base = "/admin/v2/non-persistent/public/default"
    assert rest.put(f"{base}/live").status == 204
    assert rest.get(base).json == ["non-persistent://public/default/live"]
    assert "non-persistent://public/default/live" not in rest.get(BASE).json
    assert rest.put(f"{base}/fan/partitions", 2).status == 204
    assert rest.get(f"{base}/partitioned").json == ["non-persistent://public/default/fan"]
    assert rest.get(f"{base}/live/stats").json["msgInCounter"] == 0
    assert rest.delete(f"{base}/live").status == 204
    assert rest.delete(f"{base}/fan/partitions").status == 204
