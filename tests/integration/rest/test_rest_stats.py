"""Topic stats over REST after real traffic: counters that survive a closed consumer, rates
once a stats interval closes, and the sums of a partitioned topic's stats."""

from __future__ import annotations

from pulsarlab import Client, ConsumerType

BASE = "/admin/v2/persistent/public/default"


def test_counters_rates_and_partitioned_sums(broker, rest):
    topic = "persistent://public/default/summed"
    assert rest.put(f"{BASE}/summed/partitions", 2).status == 204
    with Client(broker.service_url, operation_timeout_seconds=10) as client:
        consumer = client.subscribe(topic, "s", consumer_type=ConsumerType.Shared)
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(6):
            producer.send(f"m{i}".encode(), partition_key=f"k{i}")
        for _ in range(6):
            consumer.acknowledge(consumer.receive(timeout_millis=5000))
        broker.submit(lambda service: service.update_rates()).result(10)
        live = rest.get(f"{BASE}/summed/partitioned-stats").json
        producer.close()
        consumer.close()  # the subscription keeps what its consumers received
    parts = live["partitions"].values()
    assert live["msgRateIn"] == sum(p["msgRateIn"] for p in parts) > 0  # rates: live producers
    assert live["averageMsgSize"] == live["msgThroughputIn"] / live["msgRateIn"] > 0
    assert live["subscriptions"]["s"]["msgRateOut"] > 0
    # a partition's consumer has the client's socket and version, as Pulsar's; the summed
    # ones leave them out, as Pulsar's ConsumerStatsImpl.add does (tests/conformance)
    consumer = next(iter(parts))["subscriptions"]["s"]["consumers"][0]
    assert consumer["address"].startswith("/127.0.0.1:")
    assert consumer["clientVersion"].startswith("pulsarlab")
    assert "address" not in live["subscriptions"]["s"]["consumers"][0]
    stats = rest.get(f"{BASE}/summed/partitioned-stats").json
    parts = stats["partitions"].values()
    assert stats["msgInCounter"] == sum(p["msgInCounter"] for p in parts) == 6
    assert stats["msgOutCounter"] == 6 and stats["bytesOutCounter"] > 0
    sub = stats["subscriptions"]["s"]
    assert sub["msgOutCounter"] == 6 and sub["consumers"] == []
    one = rest.get(f"{BASE}/summed-partition-0/stats").json
    assert one["subscriptions"]["s"]["msgOutCounter"] == one["msgInCounter"]
