"""The pulsar data source without a SparkSession: options, positions, readers against a broker.

The reader classes are driven the way Spark drives them (pickled between planning and
reading), so these tests pin the properties the Spark tests rely on in well under a second.
"""

from __future__ import annotations

import base64
import json
import pickle

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'pulsarlab[spark]')")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'pulsarlab[spark]')")

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from pulsarlab import MessageId
from pulsarlab.spark import PulsarSparkError, error_summary, offsets_json
from pulsarlab.spark.datasource import (
    SCHEMA,
    PulsarDataSource,
    PulsarPartition,
)
from pulsarlab.spark.options import parse_source_options
from pulsarlab.spark.positions import Position, advance, count_entries, split_budget

from .conftest import produce, unique

URL = "zmq://127.0.0.1:6650"


def _opts(streaming: bool = False, **options: str):
    return parse_source_options({"service.url": URL, **options}, streaming=streaming)


# -- options ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"topic": "a", "topics": "b"}, "exactly one of the options 'topic', 'topics' or"),
        ({"topic": "a", "topicsPattern": "b.*"}, "(got 'topic' and 'topicsPattern')"),
        ({}, "(none was given)"),
        ({"topics": "a,,b"}, "comma-separated list"),
        ({"topicsPattern": "a(("}, "not a valid regular expression"),
        ({"topic": "non-persistent://public/default/x"}, "only persistent topics"),
        ({"topic": "a", "startingOffsets": "{oops"}, "JSON error"),
        ({"topic": "a", "startingOffsets": "[1, 2]"}, "must be a non-empty object"),
        ({"topic": "a", "startingOffsets": '{"b": [1, 2, -1, -1]}'}, "names persistent://"),
        ({"topic": "a", "startingOffsets": '{"a": [1, 2, 3, -1]}'}, "names partition 3"),
        ({"topic": "a", "startingOffsets": '{"a": {"ledger": 1}}'}, "[ledger, entry, partition"),
        ({"topic": "a", "endingOffsets": "earliest"}, "cannot be 'earliest'"),
        ({"topic": "a", "failOnDataLoss": "maybe"}, "must be true or false"),
        ({"topic": "a", "maxOffsetsPerTrigger": "0"}, "positive integer"),
        ({"topic": "a", "startingOffset": "earliest"}, "unknown source option 'startingoffset'"),
        ({"topic": "a", "startingTime": "0"}, "not supported"),
    ],
)
def test_bad_options_raise_one_line_errors(options, message):
    with pytest.raises(PulsarSparkError) as err:
        parse_source_options({"service.url": URL, **options}, streaming=False)
    text = str(err.value)
    assert message in text
    assert "\n" not in text


def test_service_url_is_required_and_checked():
    with pytest.raises(PulsarSparkError, match=r"'service\.url' is required"):
        parse_source_options({"topic": "a"}, streaming=False)
    with pytest.raises(PulsarSparkError, match="must look like zmq://host:port"):
        parse_source_options({"service.url": "http://x", "topic": "a"}, streaming=False)


def test_streaming_refuses_ending_offsets_and_defaults_to_latest():
    with pytest.raises(PulsarSparkError, match="for batch reads"):
        _opts(streaming=True, topic="a", endingOffsets="latest")
    assert _opts(streaming=True, topic="a").starting.kind == "latest"
    assert _opts(topic="a").starting.kind == "earliest"


def test_streamnative_options_are_accepted_and_path_is_a_topic():
    opts = _opts(**{"path": "t", "admin.url": "http://x", "pulsar.client.foo": "1"})
    assert opts.topics == ("persistent://public/default/t",)
    opts = _opts(topics=" a , tenant/ns/b ,a")
    assert opts.topics == ("persistent://public/default/a", "persistent://tenant/ns/b")


def test_offsets_json_formats_and_round_trip():
    mid = MessageId(1, 7, 3, 2, 5)
    text = offsets_json({
        "t-partition-1": mid,
        "t-partition-0": [7, 9, 0, -1],
        "t-partition-2": "latest",
    })
    data = json.loads(text)
    assert list(data) == sorted(data)
    assert data["persistent://public/default/t-partition-1"] == [7, 3, 1, 2]
    spec = _opts(topic="t", startingOffsets=text).starting
    assert spec.for_partition("persistent://public/default/t-partition-1") == Position(7, 3, 1, 2)
    assert spec.for_partition("persistent://public/default/t-partition-2") == "latest"
    assert spec.for_partition("persistent://public/default/t-partition-9") == "earliest"
    serialized = base64.b64encode(mid.serialize()).decode()
    spec = _opts(topic="t", startingOffsets=json.dumps({"t-partition-1": serialized})).starting
    assert spec.for_partition("persistent://public/default/t-partition-1") == Position(7, 3, 1, 2)
    spec = _opts(topic="t", endingOffsets='{"t-partition-0": [4, 5]}').ending
    assert spec.for_partition("persistent://public/default/t-partition-0") == Position(4, 5, 0, -1)


def test_error_summary_finds_the_line_in_a_wrapped_traceback():
    wrapped = RuntimeError(
        "[PYTHON_DATA_SOURCE_ERROR] Failed: Traceback (most recent call last):\n  File x\n"
        "pulsarlab.spark.options.PulsarSparkError: option 'topic' is bad\n SQLSTATE: 38000"
    )
    assert error_summary(wrapped) == "option 'topic' is bad"
    assert error_summary(ValueError("plain\nmore")) == "plain"


# -- positions ----------------------------------------------------------------------------------


def test_position_order_and_entry_counting():
    ledgers = [(3, 10), (5, 4)]
    earliest = Position.earliest(0)
    latest = Position(5, 3, 0, -1)
    assert earliest.key < Position(3, 0, 0, 0).key < Position(3, 0, 0, 1).key
    assert Position(3, 0, 0, 5).key < Position(3, 0, 0, -1).key < Position(3, 1, 0, -1).key
    assert count_entries(earliest, latest, ledgers) == 14
    assert count_entries(Position(3, 9, 0, -1), latest, ledgers) == 4
    assert count_entries(Position(3, 8, 0, 2), latest, ledgers) == 6  # rest of (3, 8) + 5
    assert count_entries(latest, latest, ledgers) == 0
    assert advance(earliest, 10, latest, ledgers) == Position(3, 9, 0, -1)
    assert advance(earliest, 11, latest, ledgers) == Position(5, 0, 0, -1)
    assert advance(earliest, 99, latest, ledgers) == latest
    assert advance(Position(3, 8, 0, 2), 1, latest, ledgers) == Position(3, 8, 0, -1)
    assert advance(Position(3, 8, 0, 2), 2, latest, ledgers) == Position(3, 9, 0, -1)


def test_budget_split_is_proportional_deterministic_and_exact():
    assert split_budget({"a": 5, "b": 5}, 20) == {"a": 5, "b": 5}
    shares = split_budget({"a": 90, "b": 9, "c": 1}, 10)
    assert sum(shares.values()) == 10
    assert shares["a"] == 9
    assert split_budget({"b": 1, "a": 1}, 1) == {"a": 1, "b": 0}


# -- readers against a broker --------------------------------------------------------------------


def _rows(reader, partitions) -> list[tuple]:
    import pyarrow as pa

    out = []
    for part in partitions:
        for batch in reader.read(pickle.loads(pickle.dumps(part))):
            assert isinstance(batch, pa.RecordBatch)
            out.extend(zip(*(batch.column(i).to_pylist() for i in range(batch.num_columns)),
                           strict=True))
    return out


def test_batch_reader_pickles_and_partitions_carry_the_range(broker, client):
    topic = unique("units-batch")
    ids = produce(client, topic, 12)
    ds = PulsarDataSource({"service.url": broker.service_url, "topic": topic})
    reader = ds.reader(SCHEMA)
    shipped = pickle.loads(pickle.dumps(reader))  # Spark pickles the reader before partitions()
    parts = reader.partitions()
    assert [type(p) for p in parts] == [PulsarPartition]
    rows = _rows(shipped, parts)
    assert [r[3] for r in rows] == ids
    from pyspark.sql.pandas.types import to_arrow_schema

    batch = next(iter(shipped.read(parts[0])))
    assert batch.schema == to_arrow_schema(SCHEMA, timezone="UTC")
    row = rows[0]
    assert row[0] == b"m0" and row[1] == b"k0" and row[2].endswith(topic)
    assert row[4].tzinfo is not None and row[5].timestamp() == 1.0
    assert row[6] == [("i", "0")]


def test_batched_entries_and_positions_inside_a_batch(broker, client):
    topic = unique("units-batched")
    sent = []
    with client.create_producer(topic, batching_enabled=True, batching_max_messages=4,
                                batching_max_publish_delay_ms=1000) as p:
        for i in range(10):
            p.send_async(f"b{i}".encode(), lambda res, mid: sent.append(mid))
        p.flush()
    ids = sorted(sent)
    assert {m.batch_index() for m in ids} == {0, 1, 2, 3}
    cut = ids[5]  # inside the second entry
    options = {"service.url": broker.service_url, "topic": topic}
    first = PulsarDataSource({**options, "endingOffsets": offsets_json({topic: cut})})
    second = PulsarDataSource({**options, "startingOffsets": offsets_json({topic: cut})})
    head = _rows(first.reader(SCHEMA), first.reader(SCHEMA).partitions())
    tail = _rows(second.reader(SCHEMA), second.reader(SCHEMA).partitions())
    assert [r[0] for r in head] == [f"b{i}".encode() for i in range(6)]
    assert [r[0] for r in tail] == [f"b{i}".encode() for i in range(6, 10)]
    # Columns built per entry: ids (one buffer per record batch) as MessageId.serialize(),
    # no properties as empty maps, each message's own sequence id.
    assert [r[3] for r in head + tail] == [m.serialize() for m in ids]
    assert all(r[6] == [] for r in head + tail)
    assert [r[8] for r in head + tail] == sorted(r[8] for r in head + tail)


def test_stream_reader_offsets_limits_and_replay(broker, client, admin):
    topic = unique("units-stream")
    admin.topics.create_partitioned_topic(topic, 2)
    produce(client, topic, 40)
    ds = PulsarDataSource(
        {"service.url": broker.service_url, "topic": topic, "startingOffsets": "earliest",
         "maxOffsetsPerTrigger": "15"}
    )
    driver = ds.streamReader(SCHEMA)
    executor = pickle.loads(pickle.dumps(ds.streamReader(SCHEMA)))
    start = driver.initialOffset()
    assert all(v[:2] == [-1, -1] for v in start.values()) and len(start) == 2
    assert driver.getDefaultReadLimit() == ReadMaxRows(15)
    end = driver.latestOffset(start, ReadMaxRows(15))
    parts = driver.partitions(start, end)
    assert len(parts) == 2
    first = _rows(executor, parts)
    assert len(first) == 15
    assert _rows(executor, driver.partitions(start, end)) == first  # a replay reads the same
    everything = driver.latestOffset(end, ReadAllAvailable())
    rest = _rows(executor, driver.partitions(end, everything))
    assert len(rest) == 25
    assert {r[3] for r in first}.isdisjoint({r[3] for r in rest})
    assert driver.latestOffset(everything, ReadAllAvailable()) is everything
    driver.prepareForTriggerAvailableNow()
    produce(client, topic, 6, start=40)
    import time

    time.sleep(0.3)  # past the metadata cache
    assert driver.latestOffset(everything, ReadAllAvailable()) == everything
    driver.stop()


def test_data_loss_is_reported(broker, client, admin):
    topic = unique("units-loss")
    produce(client, topic, 3)
    full = f"persistent://public/default/{topic}"
    ds = PulsarDataSource({"service.url": broker.service_url, "topic": topic,
                           "startingOffsets": "earliest"})
    reader = ds.streamReader(SCHEMA)
    start = {full: [10**6, 5, -1, -1]}  # a position the topic never reached
    with pytest.raises(PulsarSparkError, match="data loss"):
        reader.latestOffset(start, ReadAllAvailable())
    lenient = PulsarDataSource({"service.url": broker.service_url, "topic": topic,
                                "failOnDataLoss": "false"}).streamReader(SCHEMA)
    end = lenient.latestOffset(start, ReadAllAvailable())
    rows = _rows(lenient, lenient.partitions(start, end))
    assert len(rows) == 3  # the recreated-topic case reads from earliest


def test_unknown_partition_in_offsets_and_missing_topic(broker, client, admin):
    topic = unique("units-known")
    admin.topics.create_partitioned_topic(topic, 2)
    bad = PulsarDataSource({"service.url": broker.service_url, "topic": topic,
                            "startingOffsets": json.dumps({f"{topic}-partition-5": [1, 1]})})
    with pytest.raises(PulsarSparkError, match="not a partition of the topics read"):
        bad.reader(SCHEMA).partitions()
    missing = PulsarDataSource({"service.url": broker.service_url, "topic": unique("nope")})
    with pytest.raises(PulsarSparkError, match="does not exist"):
        missing.reader(SCHEMA).partitions()
    # a streaming query may start before its topic exists
    stream = missing.streamReader(SCHEMA)
    start = stream.initialOffset()
    assert stream.latestOffset(start, ReadAllAvailable()) is start


def test_autoregistration_module_exposes_the_source():
    from pyspark.sql.datasource import DataSource

    import pyspark_pulsarlab

    assert issubclass(pyspark_pulsarlab.DefaultSource, DataSource)
    assert pyspark_pulsarlab.DefaultSource.name() == "pulsar"


def test_importing_the_package_does_not_import_pyspark():
    import subprocess
    import sys

    code = (
        "import sys, pulsarlab.spark as s; assert callable(s.get_or_create_session);"
        "print('pyspark' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_session_settings_follow_the_master():
    from pulsarlab.spark.session import _local_cores

    assert _local_cores("local[2]") == 2
    assert _local_cores("local") == 1
    assert _local_cores("local[*]") >= 1
    assert _local_cores("local[3, 2]") == 3
    assert _local_cores("spark://host:7077") == 2
