"""Batch reads through the shared SparkSession: rows, schema, partitions, offsets, bad options."""

from __future__ import annotations

import base64
import json
import signal
import socket
import time

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'pulsarlab[spark]')")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'pulsarlab[spark]')")

from pulsarlab.spark import error_summary, offsets_json

from .conftest import produce, unique

STREAMNATIVE_COLUMNS = [
    ("value", "binary"),
    ("__key", "binary"),
    ("__topic", "string"),
    ("__messageId", "binary"),
    ("__publishTime", "timestamp"),
    ("__eventTime", "timestamp"),
    ("__messageProperties", "map<string,string>"),
]


def read(spark, url, **options):
    reader = spark.read.format("pulsar").option("service.url", url)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_batch_read_count_schema_and_values(spark, broker, client):
    topic = unique("batch")
    ids = produce(client, topic, 200)
    df = read(spark, broker.service_url, topic=topic)
    types = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
    assert types[:7] == STREAMNATIVE_COLUMNS
    assert types[7:] == [("__producerName", "string"), ("__sequenceId", "bigint")]
    assert df.count() == 200
    rows = df.orderBy("__sequenceId").collect()
    assert [bytes(r["__messageId"]) for r in rows] == ids
    first = rows[0]
    assert bytes(first["value"]) == b"m0" and bytes(first["__key"]) == b"k0"
    assert first["__topic"] == f"persistent://public/default/{topic}"
    assert first["__messageProperties"] == {"i": "0"}
    assert first["__eventTime"].timestamp() == 1.0  # session time zone is UTC
    assert abs(first["__publishTime"].timestamp() - time.time()) < 600


def test_user_schema_is_a_projection_with_string_columns(spark, broker, client):
    topic = unique("projection")
    produce(client, topic, 5)
    df = (
        spark.read.format("pulsar").schema("value string, __key string, __sequenceId bigint")
        .option("service.url", broker.service_url).option("topic", topic).load()
    )
    assert sorted((r["value"], r["__key"]) for r in df.collect()) == [
        (f"m{i}", f"k{i % 5}") for i in range(5)
    ]


def test_partitioned_topic_gives_one_spark_partition_per_topic_partition(
    spark, broker, client, admin
):
    from pyspark.sql.functions import spark_partition_id

    topic = unique("parts")
    admin.topics.create_partitioned_topic(topic, 3)
    produce(client, topic, 90)
    df = read(spark, broker.service_url, topic=topic)
    assert df.rdd.getNumPartitions() == 3
    placed = df.groupBy(spark_partition_id().alias("pid"), "__topic").count().collect()
    assert len(placed) == 3
    assert len({r.pid for r in placed}) == 3
    assert {r["__topic"] for r in placed} == {
        f"persistent://public/default/{topic}-partition-{i}" for i in range(3)
    }
    assert sum(r["count"] for r in placed) == 90


def test_offsets_json_round_trip(spark, broker, client, admin):
    topic = unique("offsets")
    admin.topics.create_partitioned_topic(topic, 2)
    produce(client, topic, 40)
    url = broker.service_url
    everything = read(spark, url, topic=topic).select("__topic", "__messageId").collect()
    by_partition: dict[str, list[bytes]] = {}
    for row in everything:
        by_partition.setdefault(row["__topic"], []).append(bytes(row["__messageId"]))
    from pulsarlab import MessageId

    cut = {t: MessageId.deserialize(ids[4]) for t, ids in by_partition.items()}
    text = offsets_json(cut)
    head = read(spark, url, topic=topic, endingOffsets=text).collect()
    tail = read(spark, url, topic=topic, startingOffsets=text).collect()
    assert len(head) == 10
    assert len(head) + len(tail) == 40
    assert {bytes(r["__messageId"]) for r in head}.isdisjoint(
        {bytes(r["__messageId"]) for r in tail}
    )
    # the same cut as __messageId cells (base64 of MessageId.serialize())
    cells = json.dumps({t: base64.b64encode(ids[4]).decode() for t, ids in by_partition.items()})
    assert read(spark, url, topic=topic, endingOffsets=cells).count() == 10
    assert read(spark, url, topic=topic, startingOffsets="latest").count() == 0


def test_topics_list_and_pattern(spark, broker, client, admin):
    prefix = unique("pat")
    produce(client, f"{prefix}-a", 3)
    produce(client, f"{prefix}-b", 4)
    produce(client, unique("other"), 5)
    url = broker.service_url
    listed = read(spark, url, topics=f"{prefix}-a, {prefix}-b")
    assert listed.count() == 7
    pattern = read(spark, url, topicsPattern=f"{prefix}-.*")
    assert pattern.count() == 7
    full = read(spark, url, topicsPattern=f"persistent://public/default/{prefix}-b")
    assert full.count() == 4


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"topic": "a", "topics": "a,b"},
         "give exactly one of the options 'topic', 'topics' or 'topicsPattern' (got 'topic' and"),
        ({"topics": "a", "topicsPattern": "a.*"}, "(got 'topics' and 'topicsPattern')"),
        ({}, "(none was given)"),
        ({"topic": "a", "startingOffsets": "{not json"},
         "option 'startingOffsets' must be 'earliest', 'latest' or a JSON object"),
        ({"topic": "a", "endingOffsets": '{"elsewhere": [1, 2]}'},
         "option 'endingOffsets' names persistent://public/default/elsewhere, which is not one"),
        ({"topic": "a", "startingOffsets": '{"a": "yesterday"}'}, "base64 serialized MessageId"),
        ({"topic": "a", "pollTimeout": "5"}, "unknown source option 'polltimeout'"),
    ],
)
def test_bad_options_fail_at_load_with_one_line(spark, broker, options, message):
    with pytest.raises(Exception) as err:
        read(spark, broker.service_url, **options)  # load() checks the options
    line = error_summary(err.value)
    assert message in line
    assert "\n" not in line


def test_offsets_naming_a_missing_partition_fail_at_planning(spark, broker, admin):
    topic = unique("missing-part")
    admin.topics.create_partitioned_topic(topic, 2)
    bad = json.dumps({f"{topic}-partition-7": [1, 1]})
    with pytest.raises(Exception) as err:
        read(spark, broker.service_url, topic=topic, startingOffsets=bad).count()
    assert "which is not a partition of the topics read" in error_summary(err.value)


def test_unreachable_broker_fails_after_a_bounded_wait(spark):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    began = time.monotonic()
    with pytest.raises(Exception) as err:
        read(spark, f"zmq://127.0.0.1:{port}", topic="t", connectionTimeoutMs="1000").count()
    assert time.monotonic() - began < 30
    line = error_summary(err.value)
    expected = (f"no pulsarlab broker at zmq://127.0.0.1:{port} runs on this machine: give "
                "its admin REST API with option 'admin.url'")
    assert line.startswith(expected)


def test_a_broker_that_stops_answering_fails_after_a_bounded_wait(spark, tmp_path):
    from faults.support import BrokerProcess

    other = BrokerProcess(tmp_path / "data").start()
    other.proc.send_signal(signal.SIGSTOP)  # alive, registered, silent
    try:
        began = time.monotonic()
        with pytest.raises(Exception) as err:
            read(spark, other.service_url, topic="t", connectionTimeoutMs="1000").count()
        assert time.monotonic() - began < 30
        assert error_summary(err.value).startswith(
            f"no answer from the admin REST API at {other.web_url} while ")
    finally:
        other.proc.send_signal(signal.SIGCONT)
        other.stop()


def test_the_session_is_reused_and_registration_is_idempotent(spark):
    from pulsarlab.spark import get_or_create_session, register

    assert get_or_create_session() is spark
    register(spark)
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.ui.enabled") == "false"
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
