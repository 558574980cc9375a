"""Ops against real Pulsar (issue 25, item 5): Spark's ``pulsar`` source with ``service.url``
``pulsar://…`` and ``admin.url`` reads real Apache Pulsar 3.3 / 4.0 as it reads pulsarlab's
listeners (tests/spark/test_cluster_source.py is the full set against pulsarlab alone), the
executors reading with pulsarlab's client (the default) and with the official one.

One small batch read per release line: the SparkSession is slow to start on 2 cores.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest
from spark.conftest import spark  # noqa: F401  (the shared SparkSession fixture)

from .conftest import Pair, Target


def _read(session: Any, target: Target, topic: str,
          client: str) -> list[tuple[str, str, dict, str]]:
    """Send 12 keyed messages with the official client, read them back with Spark (the
    executors reading with ``client``)."""
    import pulsar

    app = pulsar.Client(target.service_url, logger=logging.getLogger("tests.ops.spark"))
    try:
        producer = app.create_producer(topic, batching_enabled=True, batching_max_messages=5,
                                       batching_max_publish_delay_ms=5)
        for i in range(12):
            producer.send_async(f"m{i}".encode(), None, partition_key=f"k{i % 3}",
                                properties={"i": str(i)})
        producer.flush()
        producer.close()
    finally:
        app.close()
    rows = (session.read.format("pulsar").option("service.url", target.service_url)
            .option("admin.url", target.web_url).option("topic", topic)
            .option("client", client).load().collect())
    return sorted((r["value"].decode(), r["__key"].decode(), dict(r["__messageProperties"]),
                   r["__topic"]) for r in rows)


@pytest.mark.parametrize("client", ["pulsarlab", "official"])
def test_spark_cluster_read(line: Pair, spark: Any, client: str) -> None:  # noqa: F811
    topic = f"persistent://public/default/ops-spark-{uuid.uuid4().hex[:8]}"
    real = _read(spark, line.real, topic, client)
    assert [v for v, *_ in real] == sorted(f"m{i}" for i in range(12))
    assert ("m7", "k1", {"i": "7"}, topic) in real
    assert _read(spark, line.lab, topic, client) == real
