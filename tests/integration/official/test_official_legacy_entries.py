"""A data directory written in the first entry layout (msgpack metadata, before issue 24)
is reopened by today's broker: the official client and pulsarlab's client consume what was
stored, beside what is published since in the stored layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from pulsarlab import Broker, Client, ConsumerType, InitialPosition
from pulsarlab.broker import entry

from .conftest import WAIT_MS, drain, pulsar, quiet_logger


def test_a_data_dir_of_the_first_layout_is_served_after_an_upgrade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = str(tmp_path / "data")
    topic = "persistent://public/default/first-layout"
    written: list[int] = []

    def first_layout(metadata: entry.MessageMetadata, payload: bytes) -> bytes:
        data = entry.encode_legacy_entry(metadata, payload)
        written.append(data[0])
        return data

    monkeypatch.setattr("pulsarlab.broker.topic.encode_entry", first_layout)
    with Broker(data_dir) as old:  # the broker before the upgrade
        c = pulsar.Client(old.pulsar_url, logger=quiet_logger())
        try:
            single = c.create_producer(topic, batching_enabled=False)
            for i in range(3):
                single.send(f"s{i}".encode(), partition_key=f"k{i}", properties={"i": str(i)})
            batched = c.create_producer(topic, batching_enabled=True,
                                        batching_max_messages=4,
                                        batching_max_publish_delay_ms=60_000)
            for i in range(4):
                batched.send_async(f"b{i}".encode(), None, partition_key="kb")
            batched.flush()
        finally:
            c.close()
    monkeypatch.undo()
    assert written == [entry.LEGACY_FORMAT_VERSION] * 4  # 3 messages and one batch

    expected = [b"s0", b"s1", b"s2", b"b0", b"b1", b"b2", b"b3", b"new"]
    with Broker(data_dir) as upgraded:
        c = pulsar.Client(upgraded.pulsar_url, logger=quiet_logger())
        try:
            consumer = c.subscribe(topic, "official",
                                   initial_position=pulsar.InitialPosition.Earliest)
            c.create_producer(topic, batching_enabled=False).send(b"new")
            got = drain(consumer, quiet_ms=WAIT_MS // 5)
            assert [m.data() for m in got] == expected
            assert [m.partition_key() for m in got[:4]] == ["k0", "k1", "k2", "kb"]
            assert got[1].properties() == {"i": "1"}
        finally:
            c.close()
        with Client(upgraded.service_url, operation_timeout_seconds=10) as own:
            consumer = own.subscribe(topic, "pulsarlab", consumer_type=ConsumerType.Exclusive,
                                     initial_position=InitialPosition.Earliest)
            got = [consumer.receive(WAIT_MS) for _ in expected]
            consumer.acknowledge_cumulative(got[-1])
            assert [m.data() for m in got] == expected
            assert got[2].properties() == {"i": "2"} and got[5].partition_key() == "kb"
