"""The Spark source's cluster reader with either Pulsar client (option ``client``), against
brokers in other processes: a pulsarlab broker process (pulsar:// + its admin REST API) and
pulsar-lite (a Pulsar broker not written here; pulsar:// only).

``pulsarlab`` (the default) runs with the official ``pulsar-client`` hidden from Spark's
Python workers (a ``pulsar`` package that fails to import first on their ``PYTHONPATH``) —
and a read asking for the official client there fails, which shows the hiding works.
pulsar-lite has no admin REST API: the driver plans over the binary protocol (no
``admin.url``; batch, partitioned topics, micro-batches); the executors' readers
(:func:`pulsarlab.spark.datasource._read`, what each Spark task runs) are also run here in
this process on a range known from the producer's receipts.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'pulsarlab[spark]')")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'pulsarlab[spark]')")

from cluster_peers import (
    block_official_client,
    broker_process,
    official_blocker_dir,
    pulsar_lite,
)

from pulsarlab import Client, MessageId
from pulsarlab.spark import error_summary, offsets_json
from pulsarlab.spark.datasource import SCHEMA, PulsarDataSource, PulsarPartition, _read
from pulsarlab.spark.positions import Position
from pulsarlab.spark.reading import ReadSettings

from .conftest import unique
from .test_streaming import BatchStore, run_available_now


@pytest.fixture(scope="module")
def process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with broker_process(tmp_path_factory.mktemp("spark-process")) as proc:
        yield proc


@contextlib.contextmanager
def official_hidden_in_workers(spark: Any, scratch: Any) -> Iterator[None]:
    """Spark's Python workers started for the ``pulsar`` source cannot import the official
    client: the source is registered again with ``PYTHONPATH`` led by a blocker directory
    (a registration carries the context's environment to its workers)."""
    sc = spark.sparkContext
    saved = sc.environment.get("PYTHONPATH")
    blocker = str(official_blocker_dir(scratch / "hide-official"))
    sc.environment["PYTHONPATH"] = blocker + (os.pathsep + saved if saved else "")
    try:
        spark.dataSource.register(PulsarDataSource)
        yield
    finally:
        if saved is None:
            sc.environment.pop("PYTHONPATH", None)
        else:
            sc.environment["PYTHONPATH"] = saved
        spark.dataSource.register(PulsarDataSource)


def send(url: str, topic: str, count: int, *, batched: bool) -> list[Any]:
    """``count`` keyed messages with properties (pulsarlab's client); their message ids."""
    client = Client(url, operation_timeout_seconds=10)
    try:
        producer = client.create_producer(topic, batching_enabled=batched,
                                          batching_max_messages=7,
                                          batching_max_publish_delay_ms=5)
        ids: list[Any] = [None] * count

        def settled(i: int) -> Any:
            return lambda result, msg_id: ids.__setitem__(i, msg_id)

        for i in range(count):
            producer.send_async(f"m{i}".encode(), settled(i), partition_key=f"k{i % 3}",
                                properties={"i": str(i)})
        producer.flush()
        producer.close()
        return ids
    finally:
        client.close()


def _rows(rows: list[Any]) -> list[tuple[str, str, dict, str]]:
    return sorted((bytes(r["value"]).decode(), bytes(r["__key"]).decode(),
                   dict(r["__messageProperties"]), r["__topic"]) for r in rows)


def _expected(topic: str, count: int) -> list[tuple[str, str, dict, str]]:
    return sorted((f"m{i}", f"k{i % 3}", {"i": str(i)}, topic) for i in range(count))


@pytest.mark.parametrize("client", ["pulsarlab", "official"])
def test_read_a_broker_process(spark, process, client, tmp_path) -> None:
    topic = f"persistent://public/default/{unique(f'spark-proc-{client}')}"
    send(process.report["pulsar_url"], topic, 30, batched=True)
    reader = (spark.read.format("pulsar").option("service.url", process.report["pulsar_url"])
              .option("admin.url", process.web_url).option("topic", topic))
    if client == "official":
        pytest.importorskip("pulsar", reason="the official pulsar-client (ops extra)")
        rows = reader.option("client", "official").load().collect()
    else:
        with official_hidden_in_workers(spark, tmp_path):
            rows = reader.load().collect()
    assert _rows(rows) == _expected(topic, 30)
    assert len({bytes(r["__messageId"]) for r in rows}) == 30


def test_official_client_hidden_in_workers_is_one_line(spark, process, tmp_path) -> None:
    """The control of the test above: the same hiding makes ``client=official`` fail."""
    topic = unique("spark-proc-hidden")
    send(process.report["pulsar_url"], topic, 1, batched=False)
    with official_hidden_in_workers(spark, tmp_path), pytest.raises(Exception) as failed:
        (spark.read.format("pulsar").option("service.url", process.report["pulsar_url"])
         .option("admin.url", process.web_url).option("topic", topic)
         .option("client", "official").load().collect())
    assert error_summary(failed.value) == (
        "reading a Pulsar cluster from Spark with client=official needs 'pulsar', which is "
        "not installed: pip install 'pulsarlab[ops]'")


def test_client_option_is_checked(spark, process) -> None:
    with pytest.raises(Exception) as bad:
        (spark.read.format("pulsar").option("service.url", process.report["pulsar_url"])
         .option("admin.url", process.web_url).option("topic", "t")
         .option("client", "java").load())
    assert "option 'client' must be pulsarlab or official, not 'java'" in error_summary(
        bad.value)
    with pytest.raises(Exception) as zmq:
        (spark.read.format("pulsar").option("service.url", process.service_url)
         .option("admin.url", process.web_url).option("topic", "t")
         .option("client", "official").load())
    assert "a zmq:// broker" in error_summary(zmq.value)


def _write_and_read_back(spark: Any, url: str, topic: str, tmp_path: Any) -> list[Any]:
    """``df.write`` 20 rows to ``topic`` at ``url`` (workers without the official client);
    read back with pulsarlab's client."""
    frame = spark.createDataFrame(
        [(f"w{i}", f"k{i % 2}", {"i": str(i)}) for i in range(20)],
        "value string, __key string, __messageProperties map<string,string>")
    with official_hidden_in_workers(spark, tmp_path):
        (frame.write.format("pulsar").mode("append").option("service.url", url)
         .option("topic", topic).save())
    client = Client(url, operation_timeout_seconds=10)
    try:
        reader = client.create_reader(topic, MessageId.earliest)
        got = []
        while reader.has_message_available():
            msg = reader.read_next(10_000)
            got.append((msg.data().decode(), msg.partition_key(), msg.properties()))
        return sorted(got)
    finally:
        client.close()


def test_write_to_a_broker_process_and_pulsar_lite(spark, process, lite, tmp_path) -> None:
    """The sink on pulsar:// (pulsarlab's client in every task): all rows, keys, props."""
    expected = sorted((f"w{i}", f"k{i % 2}", {"i": str(i)}) for i in range(20))
    for url in (process.report["pulsar_url"], lite):
        topic = f"persistent://public/default/{unique('spark-sink-cluster')}"
        assert _write_and_read_back(spark, url, topic, tmp_path) == expected, url


@pytest.fixture(scope="module")
def lite() -> Iterator[str]:
    with pulsar_lite() as url:
        yield url


@pytest.fixture(scope="module")
def lite_partitioned() -> Iterator[str]:
    """pulsar-lite creating every topic with 3 partitions."""
    with pulsar_lite(default_partitions=3) as url:
        yield url


@pytest.mark.parametrize("client", ["pulsarlab", "official"])
def test_batch_read_of_pulsar_lite_without_admin_url(spark, lite, client, tmp_path) -> None:
    """No admin REST API: planned over the binary protocol (the planner workers have no
    official client either way), read by either client; a cut by message id reads the rest."""
    topic = f"persistent://public/default/{unique(f'spark-lite-plan-{client}')}"
    ids = send(lite, topic, 30, batched=True)
    reader = spark.read.format("pulsar").option("service.url", lite).option("topic", topic)
    if client == "official":
        pytest.importorskip("pulsar", reason="the official pulsar-client (ops extra)")
        reader = reader.option("client", "official")
    cut = ids[11]
    after = offsets_json({topic: cut})
    with official_hidden_in_workers(spark, tmp_path) if client == "pulsarlab" else (
            contextlib.nullcontext()):
        rows = reader.load().collect()
        rest = reader.option("startingOffsets", after).load().collect()
        empty = (spark.read.format("pulsar").option("service.url", lite)
                 .option("topic", unique("spark-lite-empty")).load().count())
    assert _rows(rows) == _expected(topic, 30)
    assert sorted(bytes(r["value"]).decode() for r in rest) == sorted(
        f"m{i}" for i in range(12, 30))
    assert empty == 0  # an empty (or, here, new) topic reads as empty


def test_partitioned_pulsar_lite_batch_and_micro_batches(spark, lite_partitioned,
                                                         tmp_path) -> None:
    """A partitioned topic on pulsar-lite: one Spark partition per topic partition, then a
    stream read twice from its checkpoint, exactly once, every micro-batch within
    maxOffsetsPerTrigger (pulsar-lite's partitions each keep one ledger, so entries counted
    from the last message id are exact)."""
    url = lite_partitioned
    topic = f"persistent://public/default/{unique('spark-lite-parts')}"
    client = Client(url, operation_timeout_seconds=10)
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(45):
            producer.send(f"m{i}".encode(), partition_key=f"key-{i}")
        df = spark.read.format("pulsar").option("service.url", url).option("topic", topic).load()
        assert df.rdd.getNumPartitions() == 3
        assert sorted(bytes(r["value"]).decode() for r in df.collect()) == sorted(
            f"m{i}" for i in range(45))
        sink = BatchStore()
        checkpoint = str(tmp_path / "checkpoint")
        options = {"topic": topic, "startingOffsets": "earliest", "maxOffsetsPerTrigger": "10"}
        run_available_now(spark, url, checkpoint, sink, **options)
        for i in range(45, 60):
            producer.send(f"m{i}".encode(), partition_key=f"key-{i}")
        run_available_now(spark, url, checkpoint, sink, **options)
        producer.close()
    finally:
        client.close()
    ids = sink.ids()
    assert len(ids) == len(set(ids)) == 60
    assert {t for rows in sink.batches.values() for _, t in rows} == {
        f"{topic}-partition-{i}" for i in range(3)}
    assert len(sink.batches) >= 6
    assert max(len(rows) for rows in sink.batches.values()) <= 10


def test_topics_pattern_on_pulsar_lite_is_one_line(spark, lite) -> None:
    """pulsar-lite does not answer GET_TOPICS_OF_NAMESPACE: the pattern cannot be listed."""
    with pytest.raises(Exception) as failed:
        (spark.read.format("pulsar").option("service.url", lite)
         .option("topicsPattern", "spark-lite-.*").option("connectionTimeoutMs", "1000")
         .load().count())
    assert error_summary(failed.value) == (
        f"no answer from the Pulsar broker at {lite} within 1 s while listing namespace "
        "public/default over the binary protocol (no admin.url): check option 'service.url', "
        "or give the cluster's admin REST API with option 'admin.url'")


@pytest.mark.parametrize("batched", [False, True], ids=["single", "batched"])
@pytest.mark.parametrize("client", ["pulsarlab", "official"])
def test_executor_reader_on_pulsar_lite(lite, client, batched, monkeypatch) -> None:
    if client == "official":
        pytest.importorskip("pulsar", reason="the official pulsar-client (ops extra)")
    topic = f"persistent://public/default/{unique(f'spark-lite-{client}')}"
    count = 400
    ids = send(lite, topic, count, batched=batched)
    if client == "pulsarlab":
        block_official_client(monkeypatch)
    # a small receiver queue: many FLOWs, after which pulsar-lite 0.2 sends some messages
    # again — the reader takes each message once
    settings = ReadSettings(service_url=lite, poll_timeout_ms=10_000,
                            connection_timeout_ms=10_000, receiver_queue_size=5,
                            rows_per_batch=50, fail_on_data_loss=True, client=client)

    def read(start: Position, end_id: Any) -> list[dict[str, Any]]:
        end = Position(end_id.ledger_id(), end_id.entry_id(), -1, end_id.batch_index())
        batches = _read(PulsarPartition(topic, tuple(start), tuple(end), settings), SCHEMA)
        return [row for batch in batches for row in batch.to_pylist()]

    everything = read(Position.earliest(-1), ids[-1])
    assert [r["value"] for r in everything] == [f"m{i}".encode() for i in range(count)]
    assert _rows(everything) == _expected(topic, count)
    # a range ending inside the data, then the rest from there: no gap, no overlap
    first = read(Position.earliest(-1), ids[211])
    cut = ids[211]
    rest = read(Position(cut.ledger_id(), cut.entry_id(), -1, cut.batch_index()), ids[-1])
    assert [r["value"] for r in first] == [f"m{i}".encode() for i in range(212)]
    assert [r["value"] for r in rest] == [f"m{i}".encode() for i in range(212, count)]


def test_client_option_parsing() -> None:
    """Without a SparkSession: the default, the choice, and what reaches the executors."""
    from pulsarlab.spark.datasource import _settings
    from pulsarlab.spark.options import PulsarSparkError, parse_source_options

    def parse(**extra: str) -> Any:
        return parse_source_options({"service.url": "pulsar://h:6650",
                                     "admin.url": "http://h:8080", "topic": "t", **extra},
                                    streaming=False)

    assert parse().client == "pulsarlab"
    assert _settings(parse(Client="OFFICIAL")).client == "official"  # keys and values: any case
    with pytest.raises(PulsarSparkError, match="must be pulsarlab or official, not 'cpp'"):
        parse(client="cpp")


def test_an_entry_sent_again_is_read_once(monkeypatch) -> None:
    """Deterministic twin of the pulsar-lite test: a reader handed entries 0, 1, 0, 1, 2
    (a broker sending again what it already sent) yields each message once, in order."""
    from types import SimpleNamespace

    import pulsarlab.broker.client as client_module
    from pulsarlab.broker.client.entries import EntryBatch
    from pulsarlab.broker.client.exceptions import Timeout

    def entry(entry_id: int) -> EntryBatch:
        meta = SimpleNamespace(properties={}, partition_key=f"k{entry_id}", ordering_key=None,
                               event_time=0, sequence_id=entry_id, null_value=False,
                               publish_time=1, producer_name="p")
        return EntryBatch("persistent://public/default/t", -1, 7, entry_id, meta,
                          f"m{entry_id}".encode(), None, None, 0, None)

    class Reader:
        def __init__(self) -> None:
            self.queue = [entry(0), entry(1), entry(0), entry(1), entry(2)]

        def read_entry(self, timeout_ms: int) -> EntryBatch:
            if not self.queue:
                raise Timeout("nothing")
            return self.queue.pop(0)

        def has_message_available(self) -> bool:
            return bool(self.queue)

        def close(self) -> None:
            pass

    class FakeClient:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def create_reader(self, *args: Any, **kwargs: Any) -> Reader:
            return Reader()

        def close(self) -> None:
            pass

    monkeypatch.setattr(client_module, "Client", FakeClient)
    settings = ReadSettings("pulsar://h:6650", 1000, 1000, 10, 100, True)
    batches = _read(PulsarPartition("persistent://public/default/t", (-1, -1, -1, -1),
                                    (7, 2, -1, -1), settings), SCHEMA)
    rows = [r for b in batches for r in b.to_pylist()]
    assert [(r["value"], r["__key"]) for r in rows] == [(b"m0", b"k0"), (b"m1", b"k1"),
                                                       (b"m2", b"k2")]
