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


def test_pulsar_fields_that_follow_policies_and_acks(broker, rest):
    """TopicStatsImpl / SubscriptionStatsImpl fields tools read (tests/conformance compares
    the full key sets with real Pulsar): de-duplication status and the backlog quota follow
    the namespace's policies, non-contiguous deleted ranges the cursor's acks."""
    ns = "/admin/v2/namespaces/public/fields"
    assert rest.put(ns).status == 204
    assert rest.post(f"{ns}/deduplication", True).status == 204
    assert rest.post(f"{ns}/backlogQuota", {"limitSize": 4096,
                                            "policy": "producer_exception"}).status == 204
    topic = "persistent://public/fields/t"
    with Client(broker.service_url, operation_timeout_seconds=10) as client:
        consumer = client.subscribe(topic, "s", consumer_type=ConsumerType.Shared)
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(5):
            producer.send(f"m{i}".encode())
        got = [consumer.receive(timeout_millis=5000) for _ in range(5)]
        consumer.acknowledge(got[1])
        consumer.acknowledge(got[3])
        consumer.close()  # its grouped acks are sent first; the durable cursor keeps them
        stats = rest.get("/admin/v2/persistent/public/fields/t/stats").json
    assert stats["deduplicationStatus"] == "Enabled"
    assert (stats["backlogQuotaLimitSize"], stats["backlogQuotaLimitTime"]) == (4096, -1)
    sub = stats["subscriptions"]["s"]
    assert sub["nonContiguousDeletedMessagesRanges"] == 2  # {1} and {3} above mark-delete
    assert stats["nonContiguousDeletedMessagesRanges"] == 2
    # the closed consumer's three unacked messages wait in the Shared dispatcher's replay set
    assert (sub["durable"], sub["isReplicated"], sub["msgInReplay"]) == (True, False, 3)
    assert stats["publishers"][0]["supportsPartialProducer"] is False
    # this broker is the 3.3 line: 4.0's draining-hash and throttling fields are not there
    assert "drainingHashesCount" not in sub
    assert "dispatchThrottledMsgEventsByTopicLimit" not in sub


def test_the_4_0_line_adds_its_fields_as_zeros_off_key_shared():
    from pulsarlab import Broker

    from .conftest import Rest

    with Broker(storage="memory", pulsar_version="4.0") as newer, \
            Client(newer.service_url, operation_timeout_seconds=10) as client:
        client.subscribe("persistent://public/default/v40", "s",
                         consumer_type=ConsumerType.Shared)
        stats = Rest(newer.web_url).get(f"{BASE}/v40/stats").json
    sub = stats["subscriptions"]["s"]
    assert sub["drainingHashesCount"] == sub["consumers"][0]["drainingHashesCount"] == 0
    assert sub["dispatchThrottledBytesEventsByBrokerLimit"] == 0
    assert stats["deduplicationStatus"] == "Disabled" and stats["backlogQuotaLimitSize"] == -1


def test_partitioned_stats_add_up_publishers_by_index(broker, rest):
    """PartitionedTopicStatsImpl.add: publishers summed by their place in each partition's
    list (rates only, no names), timestamps not carried, ``partitions`` {} unless asked."""
    assert rest.put(f"{BASE}/byindex/partitions", 2).status == 204
    with Client(broker.service_url, operation_timeout_seconds=10) as client:
        producer = client.create_producer("persistent://public/default/byindex")
        client.subscribe("persistent://public/default/byindex", "s")
        producer.send(b"x")
        whole = rest.get(f"{BASE}/byindex/partitioned-stats?perPartition=false").json
    assert whole["partitions"] == {} and whole["metadata"]["deleted"] is False
    assert [sorted(p) for p in whole["publishers"]] == [sorted(
        ["msgRateIn", "msgThroughputIn", "averageMsgSize", "chunkedMessageRate", "producerId",
         "supportsPartialProducer"])]
    assert whole["subscriptions"]["s"]["lastConsumedFlowTimestamp"] == 0
    assert whole["subscriptions"]["s"]["consumers"][0]["avgMessagesPerEntry"] == 0
