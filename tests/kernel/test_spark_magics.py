"""``%pulsar spark`` and ``%%pulsar spark`` without Spark: ``pulsarlab.spark`` is faked.

The session functions of :mod:`pulsarlab.spark` are monkeypatched to hand out a fake
SparkSession that records what the magics ask of it (formats, options, views, SQL,
streaming writers); real Spark is tested with the data source itself.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import pytest

import pulsarlab.spark as pulsar_spark

_ids = itertools.count(1)


class Rows(list):
    """What ``toPandas()`` returns here (pandas is not needed for these tests)."""

    def head(self, n: int) -> Rows:
        return Rows(self[:n])


class SparkFailure(Exception):
    """Stands for a PySpark error (its module makes the magics treat it as one)."""


SparkFailure.__module__ = "pyspark.errors.exceptions.captured"


class FakeFrame:
    def __init__(self, spark: FakeSpark, source: dict[str, Any] | None = None,
                 rows: list[Any] | None = None) -> None:
        self.spark = spark
        self.source = source
        self.rows = rows or []
        self.limited: int | None = None

    def createOrReplaceTempView(self, name: str) -> None:
        self.spark.views[name] = self

    def limit(self, n: int) -> FakeFrame:
        self.spark.limits.append(n)
        return FakeFrame(self.spark, self.source, self.rows[:n])

    def toPandas(self) -> Rows:
        return Rows(self.rows)

    @property
    def writeStream(self) -> FakeWriter:
        return FakeWriter(self.spark, self)


class FakeReader:
    def __init__(self, spark: FakeSpark, streaming: bool) -> None:
        self.spark = spark
        self.info: dict[str, Any] = {"streaming": streaming, "options": {}}

    def format(self, name: str) -> FakeReader:
        self.info["format"] = name
        return self

    def option(self, key: str, value: str) -> FakeReader:
        self.info["options"][key] = value
        return self

    def load(self) -> FakeFrame:
        self.spark.loads.append(self.info)
        return FakeFrame(self.spark, self.info)


class FakeQuery:
    def __init__(self, name: str, info: dict[str, Any]) -> None:
        self.name = name
        self.id = f"query-{next(_ids)}"
        self.info = info
        self.isActive = True
        self.status = {"message": "Waiting for data to arrive", "isDataAvailable": False}
        self.lastProgress = {"batchId": 3, "numInputRows": 7, "processedRowsPerSecond": 70.0}
        self.stops = 0

    def stop(self) -> None:
        self.stops += 1
        self.isActive = False

    def exception(self) -> None:
        return None


class FakeWriter:
    def __init__(self, spark: FakeSpark, frame: FakeFrame) -> None:
        self.spark = spark
        self.info: dict[str, Any] = {"source": frame.source, "options": {}}

    def format(self, name: str) -> FakeWriter:
        self.info["format"] = name
        return self

    def queryName(self, name: str) -> FakeWriter:
        self.info["name"] = name
        return self

    def outputMode(self, mode: str) -> FakeWriter:
        self.info["mode"] = mode
        return self

    def option(self, key: str, value: str) -> FakeWriter:
        self.info["options"][key] = value
        return self

    def trigger(self, **kwargs: Any) -> FakeWriter:
        self.info["trigger"] = kwargs
        return self

    def start(self) -> FakeQuery:
        query = FakeQuery(self.info["name"], self.info)
        self.spark.queries.append(query)
        return query


class FakeSpark:
    version = "4.0.0-fake"

    def __init__(self) -> None:
        self.views: dict[str, FakeFrame] = {}
        self.loads: list[dict[str, Any]] = []
        self.queries: list[FakeQuery] = []
        self.sql_text: list[str] = []
        self.limits: list[int] = []
        self.result_rows: list[Any] = [("a", 1), ("b", 2), ("c", 3)]

    @property
    def read(self) -> FakeReader:
        return FakeReader(self, streaming=False)

    @property
    def readStream(self) -> FakeReader:
        return FakeReader(self, streaming=True)

    def sql(self, text: str) -> FakeFrame:
        if "bogus" in text:
            raise SparkFailure("[TABLE_OR_VIEW_NOT_FOUND] The table bogus cannot be found.\n"
                               "SQLSTATE: 42P01; line 1 pos 14")
        self.sql_text.append(text)
        return FakeFrame(self, rows=list(self.result_rows))


@pytest.fixture
def fake_spark(monkeypatch: pytest.MonkeyPatch, ip) -> FakeSpark:
    spark = FakeSpark()
    calls: dict[str, list[Any]] = {"create": [], "register": [], "stop": []}

    def get_or_create_session(app_name: str = "pulsarlab", master: str = "local[2]",
                              **conf: Any) -> FakeSpark:
        calls["create"].append({"app_name": app_name, "master": master, **conf})
        return spark

    monkeypatch.setattr(pulsar_spark, "get_or_create_session", get_or_create_session)
    monkeypatch.setattr(pulsar_spark, "register", lambda s: calls["register"].append(s))
    monkeypatch.setattr(pulsar_spark, "stop_session", lambda: calls["stop"].append(True))
    spark.calls = calls  # type: ignore[attr-defined]
    yield spark
    ip.user_ns.pop("spark", None)


def test_spark_binds_a_session(run, ip, fake_spark) -> None:
    ran = run("%pulsar spark --master local[1] --conf spark.driver.memory=1g")
    assert ran.success, ran.out
    assert ran.out.strip() == (
        "Spark 4.0.0-fake session ready with the 'pulsar' format; bound to `spark`"
    )
    assert ip.user_ns["spark"] is fake_spark
    assert fake_spark.calls["create"] == [
        {"app_name": "pulsarlab", "master": "local[1]", "spark.driver.memory": "1g"}
    ]
    assert fake_spark.calls["register"] == [fake_spark]

    ran = run("%pulsar spark --stop")
    assert ran.success
    assert fake_spark.calls["stop"] == [True]
    assert "spark" not in ip.user_ns


def test_spark_sql_cell_over_a_topic(run, ip, broker, fake_spark) -> None:
    ran = run("%%pulsar spark my-topic\nselect value, count(*) from my_topic group by value")
    assert ran.success, ran.out
    assert ran.value == [("a", 1), ("b", 2), ("c", 3)]
    assert fake_spark.sql_text == ["select value, count(*) from my_topic group by value"]
    load = fake_spark.loads[-1]
    assert load["format"] == "pulsar" and load["streaming"] is False
    assert load["options"] == {"service.url": broker.service_url,
                               "admin.url": broker.web_url,
                               "topic": "persistent://public/default/my-topic"}
    assert "my_topic" in fake_spark.views
    assert fake_spark.limits == [1001]
    assert ip.user_ns["spark"] is fake_spark  # the cell also binds the session

    ran = run("%%pulsar spark t --view v --limit 2 --starting earliest --ending latest\n"
              "select * from v")
    assert ran.success
    assert ran.value == [("a", 1), ("b", 2)]
    assert ran.out.strip().startswith("showing the first 2 rows (--limit 0 for all)")
    assert fake_spark.loads[-1]["options"]["startingOffsets"] == "earliest"
    assert fake_spark.loads[-1]["options"]["endingOffsets"] == "latest"
    assert "v" in fake_spark.views

    ran = run("%%pulsar spark t --limit 0\nselect * from t")
    assert ran.value == [("a", 1), ("b", 2), ("c", 3)]


@pytest.mark.parametrize("flag", ["", "--client official"])
def test_spark_cell_on_a_cluster_passes_the_client_on(run, runtime, fake_spark, flag) -> None:
    """``%pulsar connect pulsar://… [--client official]``: the executors read with the
    connection's client (the option only when it is not the default)."""
    if flag:
        pytest.importorskip("pulsar", reason="the official pulsar-client (ops extra)")
    from pulsarlab import Broker

    with Broker(storage="memory") as cluster:
        assert run(f"%pulsar connect {cluster.pulsar_url} --admin-url {cluster.web_url} "
                   f"{flag}").success
        try:
            assert run("%%pulsar spark t\nselect * from t").success
        finally:
            run("%pulsar stop")
    options = fake_spark.loads[-1]["options"]
    assert options["service.url"] == cluster.pulsar_url
    assert options.get("client") == ("official" if flag else None)


def test_spark_cell_errors(run, broker, fake_spark) -> None:
    ran = run("%%pulsar spark t\nselect * from bogus")
    assert ran.success is False
    assert ran.out.strip() == (
        "%%pulsar spark: [TABLE_OR_VIEW_NOT_FOUND] The table bogus cannot be found."
    )
    ran = run("%%pulsar spark t\n   \n")
    assert ran.success is False
    assert ran.out.strip() == "%%pulsar spark: the cell is the Spark SQL query, and it is empty"
    ran = run("%%pulsar spark\nselect 1")
    assert ran.success is False
    assert ran.out.strip() == ("%%pulsar spark: the following arguments are required: TOPIC "
                               "(see %%pulsar spark --help)")


def test_spark_cell_needs_a_broker(run, runtime, fake_spark) -> None:
    ran = run("%%pulsar spark t\nselect 1")
    assert ran.success is False
    assert ran.out.strip() == ("%%pulsar spark: no broker: run %pulsar start (or %pulsar "
                               "connect zmq://host:port) first")


def test_stream_start_status_stop(run, broker, fake_spark) -> None:
    ran = run("%pulsar spark stream start clicks --sink memory --name clicks_table")
    assert ran.success, ran.out
    assert ran.out.strip() == (
        "streaming query clicks_table started: persistent://public/default/clicks → memory "
        "table clicks_table (spark.table('clicks_table'))"
    )
    query = fake_spark.queries[-1]
    assert query.info["format"] == "memory"
    assert query.info["mode"] == "append"
    assert query.info["trigger"] == {"processingTime": "1 seconds"}
    assert query.info["source"]["streaming"] is True
    assert query.info["source"]["options"]["topic"] == "persistent://public/default/clicks"
    checkpoint = query.info["options"]["checkpointLocation"]
    assert os.path.isdir(checkpoint)

    again = run("%pulsar spark stream start clicks --name clicks_table")
    assert again.success is False
    assert again.out.strip() == (
        "%pulsar spark: a streaming query named clicks_table is already running"
    )

    run("%pulsar spark stream start other --sink console --available-now")
    console = fake_spark.queries[-1]
    assert console.info["name"] == "other" and console.info["format"] == "console"
    assert console.info["trigger"] == {"availableNow": True}

    status = run("%pulsar spark stream status clicks_table")
    assert status.success
    assert status.value == {
        "name": "clicks_table", "id": query.id, "state": "active",
        "message": "Waiting for data to arrive", "batch": 3, "rows_last_batch": 7,
        "rows_per_second": 70.0,
    }
    every = run("%pulsar spark stream status --watch 0.1")
    assert [s["name"] for s in every.value] == ["clicks_table", "other"]

    ran = run("%pulsar spark stream stop clicks_table")
    assert ran.out.strip() == "stopped streaming query clicks_table"
    assert query.stops == 1
    assert not os.path.exists(checkpoint)

    ran = run("%pulsar stop")  # stopping the broker stops the remaining queries
    assert "stopped streaming query other" in ran.out
    assert console.stops == 1
    assert run("%pulsar spark stream status").value == []
    assert run("%pulsar spark stream stop").out.strip() == "no streaming query to stop"


def test_stream_name_must_be_an_identifier(run, broker, fake_spark) -> None:
    ran = run("%pulsar spark stream start t --name 'not ok'")
    assert ran.success is False
    assert ran.out.strip() == (
        "%pulsar spark: --name must be an identifier (a table name), not 'not ok'"
    )


def test_unexpected_spark_start_failure_is_one_line(run, monkeypatch, fake_spark) -> None:
    def broken(**kwargs: Any) -> None:
        raise SparkFailure("[JAVA_GATEWAY_EXITED] Java gateway process exited.\nmore detail")

    monkeypatch.setattr(pulsar_spark, "get_or_create_session", broken)
    ran = run("%pulsar spark")
    assert ran.success is False
    assert ran.out.strip() == "%pulsar spark: [JAVA_GATEWAY_EXITED] Java gateway process exited."
