"""``service.url`` ``pulsar://…`` + ``admin.url``: reading a Pulsar cluster like StreamNative's
connector, with pulsarlab's client's Reader on the executors (the default; the official
client: test_cluster_clients.py) and the admin REST API on the driver — or, without
``admin.url``, the binary protocol; the official client sends. The cluster is a pulsarlab
broker's pulsar:// and REST listeners, over sockets.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from pulsarlab.spark import error_summary

from .conftest import unique
from .test_streaming import BatchStore, run_available_now

pulsar = pytest.importorskip("pulsar")


@pytest.fixture(scope="module")
def official(broker) -> Iterator[Any]:
    client = pulsar.Client(broker.pulsar_url, logger=_quiet())
    yield client
    client.close()


def _quiet() -> Any:
    import logging

    return logging.getLogger("tests.official")


def send(client: Any, topic: str, count: int, *, start: int = 0, batched: bool = False,
         keys: int = 5) -> None:
    producer = client.create_producer(topic, batching_enabled=batched,
                                      batching_max_messages=10, batching_max_publish_delay_ms=5)
    for i in range(start, start + count):
        producer.send_async(f"m{i}".encode(), None, partition_key=f"k{i % keys}",
                            properties={"i": str(i)})
    producer.flush()
    producer.close()


def cluster_read(spark, broker, **options: str) -> Any:
    reader = (spark.read.format("pulsar").option("service.url", broker.pulsar_url)
              .option("admin.url", broker.web_url))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_batch_read_values_keys_properties(spark, broker, official):
    topic = unique("cluster-batch")
    send(official, topic, 30)
    rows = cluster_read(spark, broker, topic=topic).orderBy("__publishTime").collect()
    assert sorted(r["value"].decode() for r in rows) == sorted(f"m{i}" for i in range(30))
    by_value = {r["value"].decode(): r for r in rows}
    assert by_value["m7"]["__key"] == b"k2"
    assert by_value["m7"]["__messageProperties"] == {"i": "7"}
    assert by_value["m7"]["__topic"] == f"persistent://public/default/{topic}"
    assert len({bytes(r["__messageId"]) for r in rows}) == 30


def test_batched_messages_and_ending_offsets(spark, broker, official):
    topic = unique("cluster-batched")
    send(official, topic, 40, batched=True)
    df = cluster_read(spark, broker, topic=topic)
    assert df.count() == 40
    # the last id of an earlier read, as endingOffsets JSON: read through that message
    ids = sorted(
        (r["__messageId"] for r in df.collect()),
        key=lambda b: (int.from_bytes(b[0:8], "big"), int.from_bytes(b[8:16], "big"),
                       int.from_bytes(b[20:24], "big", signed=True)),
    )
    cut = ids[24]
    ledger, entry = int.from_bytes(cut[0:8], "big"), int.from_bytes(cut[8:16], "big")
    index = int.from_bytes(cut[20:24], "big", signed=True)
    ending = json.dumps({f"persistent://public/default/{topic}": [ledger, entry, -1, index]})
    assert cluster_read(spark, broker, topic=topic, endingOffsets=ending).count() == 25
    starting = ending
    assert cluster_read(spark, broker, topic=topic, startingOffsets=starting).count() == 15


def test_partitioned_topic_one_spark_partition_each(spark, broker, official):
    topic = unique("cluster-parts")
    with pulsar_admin(broker) as admin:
        admin.topics.create_partitioned_topic(f"persistent://public/default/{topic}", 3)
    send(official, topic, 45, keys=45)  # enough keys to reach every partition
    df = cluster_read(spark, broker, topic=topic)
    assert df.rdd.getNumPartitions() == 3
    assert df.count() == 45
    assert df.select("__topic").distinct().count() == 3


def test_streaming_restart_is_exactly_once(spark, broker, official, tmp_path):
    topic = unique("cluster-stream")
    send(official, topic, 20)
    sink = BatchStore()
    checkpoint = str(tmp_path / "checkpoint")
    options = {"topic": topic, "startingOffsets": "earliest", "admin.url": broker.web_url}
    run_available_now(spark, broker.pulsar_url, checkpoint, sink, **options)
    assert len(sink.ids()) == 20
    send(official, topic, 15, start=20)
    run_available_now(spark, broker.pulsar_url, checkpoint, sink, **options)
    ids = sink.ids()
    assert len(ids) == len(set(ids)) == 35


def test_planned_over_the_binary_protocol_without_admin_url(spark, broker, official):
    """No ``admin.url``: the namespace listing (GET_TOPICS_OF_NAMESPACE), partitioned
    metadata and last message ids come over pulsar:// (pulsarlab's client on the driver)."""
    prefix = unique("cluster-binary")
    with pulsar_admin(broker) as admin:
        admin.topics.create_partitioned_topic(f"persistent://public/default/{prefix}-a", 3)
    send(official, f"{prefix}-a", 45, keys=45)
    send(official, f"{prefix}-b", 5, batched=True)
    df = (spark.read.format("pulsar").option("service.url", broker.pulsar_url)
          .option("topicsPattern", f"{prefix}-.*").load())
    assert df.rdd.getNumPartitions() == 4
    rows = df.collect()
    assert sorted(r["value"].decode() for r in rows) == sorted(
        [f"m{i}" for i in range(45)] + [f"m{i}" for i in range(5)])
    assert {r["__topic"] for r in rows} == {
        *(f"persistent://public/default/{prefix}-a-partition-{i}" for i in range(3)),
        f"persistent://public/default/{prefix}-b"}


def test_cluster_options_are_checked(spark, broker):
    with pytest.raises(Exception) as down:
        cluster_read(spark, broker, topic="t", **{"admin.url": "http://127.0.0.1:1"}).count()
    assert "no answer from the admin REST API at http://127.0.0.1:1" in error_summary(down.value)


def pulsar_admin(broker) -> Any:
    from pulsarlab.cluster import RestAdmin

    class _Closing:
        def __enter__(self) -> RestAdmin:
            return RestAdmin(broker.web_url)

        def __exit__(self, *exc: object) -> None:
            return None

    return _Closing()
