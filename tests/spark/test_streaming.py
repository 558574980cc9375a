"""Structured Streaming from topics: availableNow, restart on a checkpoint, replay, limits.

The sink is idempotent: ``foreachBatch`` stores each micro-batch's message ids under its batch
id, so a replayed batch overwrites itself; the checks then look at every id over all batches.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'pulsarlab[spark]')")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'pulsarlab[spark]')")

from .conftest import produce, unique

TIMEOUT_S = 120


class BatchStore:
    """An idempotent sink: batch id → the (message id, topic) pairs of that batch."""

    def __init__(self, fail_once_at: int | None = None) -> None:
        self.batches: dict[int, list[tuple[bytes, str]]] = {}
        self.attempts: list[tuple[int, list[tuple[bytes, str]]]] = []
        self._fail_once_at = fail_once_at

    def __call__(self, df: Any, batch_id: int) -> None:
        rows = sorted(
            (bytes(r["__messageId"]), r["__topic"])
            for r in df.select("__messageId", "__topic").collect()
        )
        self.attempts.append((batch_id, rows))
        if batch_id == self._fail_once_at:
            self._fail_once_at = None
            raise RuntimeError("the sink failed (on purpose)")
        self.batches[batch_id] = rows

    def ids(self) -> list[bytes]:
        return [mid for rows in self.batches.values() for mid, _ in rows]


def run_available_now(spark, url: str, checkpoint: str, sink: Callable, **options: str) -> Any:
    reader = spark.readStream.format("pulsar").option("service.url", url)
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (
        reader.load().writeStream.foreachBatch(sink)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(TIMEOUT_S), "the availableNow query did not finish"
    return query


def test_available_now_then_more_then_restart_is_exactly_once(
    spark, broker, client, admin, tmp_path
):
    url = broker.service_url
    prefix = unique("stream")
    first_topic = f"{prefix}-a"
    admin.topics.create_partitioned_topic(first_topic, 2)
    produced = produce(client, first_topic, 60)
    sink = BatchStore()
    checkpoint = str(tmp_path / "checkpoint")
    options = {"topicsPattern": f"{prefix}-.*", "startingOffsets": "earliest"}

    q1 = run_available_now(spark, url, checkpoint, sink, **options)
    assert sorted(sink.ids()) == sorted(produced)
    end_offset = q1.lastProgress["sources"][0]["endOffset"]
    offsets = json.loads(end_offset) if isinstance(end_offset, str) else end_offset
    assert sorted(offsets) == [f"persistent://public/default/{first_topic}-partition-{i}"
                               for i in range(2)]
    batches_before = len(sink.batches)

    # more data: on the same partitions and on a topic that did not exist in the first run
    produced += produce(client, first_topic, 40, start=60)
    second_topic = f"{prefix}-b"
    produced += produce(client, second_topic, 50)
    # the checkpoint's offsets are the offsets JSON: a batch read picks up where it stopped
    later = (
        spark.read.format("pulsar").option("service.url", url)
        .option("topicsPattern", f"{prefix}-.*")
        .option("startingOffsets", json.dumps(offsets)).load()
    )
    assert later.count() == 90

    run_available_now(spark, url, checkpoint, sink, maxOffsetsPerTrigger="25", **options)
    ids = sink.ids()
    assert len(ids) == len(set(ids)) == 150  # no duplicates
    assert set(ids) == set(produced)  # no gaps
    new_batches = [rows for bid, rows in sink.batches.items() if bid >= batches_before]
    assert len(new_batches) >= 4
    assert all(len(rows) <= 25 for rows in new_batches)
    second_rows = [t for rows in new_batches for _, t in rows if t.endswith(second_topic)]
    assert len(second_rows) == 50  # a new topic starts at earliest


def test_a_failed_batch_is_replayed_with_the_same_rows(spark, broker, client, admin, tmp_path):
    url = broker.service_url
    topic = unique("replay")
    admin.topics.create_partitioned_topic(topic, 2)
    produced = produce(client, topic, 30)
    sink = BatchStore(fail_once_at=1)
    checkpoint = str(tmp_path / "checkpoint")
    options = {"topic": topic, "startingOffsets": "earliest", "maxOffsetsPerTrigger": "10"}
    with pytest.raises(Exception, match="on purpose"):
        run_available_now(spark, url, checkpoint, sink, **options)
    run_available_now(spark, url, checkpoint, sink, **options)
    tries = [rows for bid, rows in sink.attempts if bid == 1]
    assert len(tries) == 2 and tries[0] == tries[1] and len(tries[0]) == 10
    ids = sink.ids()
    assert len(ids) == len(set(ids)) == 30
    assert set(ids) == set(produced)
