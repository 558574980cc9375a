"""Writing DataFrames to topics: batch writes, routing by ``__topic``, streaming writes."""

from __future__ import annotations

import datetime

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'pulsarlab[spark]')")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'pulsarlab[spark]')")

from pulsarlab import MessageId, Timeout
from pulsarlab.spark import error_summary

from .conftest import produce, unique


def read_all(client, topic: str) -> list:
    out = []
    with client.create_reader(topic, MessageId.earliest) as reader:
        while True:
            try:
                out.append(reader.read_next(500))
            except Timeout:
                return out


def test_batch_write_sends_value_key_properties_and_event_time(spark, broker, client):
    topic = unique("sink")
    when = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.UTC)
    df = spark.createDataFrame(
        [(f"v{i}", f"k{i}", {"n": str(i)}, when) for i in range(50)],
        "value string, __key string, __messageProperties map<string,string>, __eventTime timestamp",
    )
    (df.write.format("pulsar").mode("append")
     .option("service.url", broker.service_url).option("topic", topic).save())
    messages = read_all(client, topic)
    assert sorted(m.data() for m in messages) == sorted(f"v{i}".encode() for i in range(50))
    one = next(m for m in messages if m.data() == b"v7")
    assert one.partition_key() == "k7"
    assert one.properties() == {"n": "7"}
    assert one.event_timestamp() == int(when.timestamp() * 1000)


def test_rows_go_to_their_topic_column(spark, broker, client):
    a, b = unique("route-a"), unique("route-b")
    df = spark.createDataFrame(
        [(bytes([i]), a if i % 2 else b) for i in range(10)], "value binary, __topic string"
    )
    df.write.format("pulsar").mode("append").option("service.url", broker.service_url).save()
    assert len(read_all(client, a)) == 5
    assert len(read_all(client, b)) == 5


@pytest.mark.parametrize(
    ("mode", "columns", "message"),
    [
        ("overwrite", "value string", "mode('overwrite') is not supported"),
        ("append", "payload string", "needs a 'value' column"),
        ("append", "value int", "column 'value' must be binary or string"),
    ],
)
def test_bad_writes_fail_with_one_line(spark, broker, mode, columns, message):
    df = spark.createDataFrame([], columns)
    with pytest.raises(Exception) as err:
        (df.write.format("pulsar").mode(mode).option("service.url", broker.service_url)
         .option("topic", "t").save())
    assert message in error_summary(err.value)


def test_stream_from_a_topic_to_a_topic(spark, broker, client, tmp_path):
    source, target = unique("pipe-in"), unique("pipe-out")
    produce(client, source, 30)
    query = (
        spark.readStream.format("pulsar").option("service.url", broker.service_url)
        .option("topic", source).option("startingOffsets", "earliest").load()
        .selectExpr("upper(cast(value as string)) AS value", "__key", "__messageProperties")
        .writeStream.format("pulsar").option("service.url", broker.service_url)
        .option("topic", target).option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True).start()
    )
    assert query.awaitTermination(120)
    messages = read_all(client, target)
    assert sorted(m.data() for m in messages) == sorted(f"M{i}".encode() for i in range(30))
    assert {m.partition_key() for m in messages} == {f"k{i}" for i in range(5)}
