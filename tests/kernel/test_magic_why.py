"""``%pulsar why``: a stuck subscription on a broker running in the kernel, explained."""

from __future__ import annotations

import time

import pytest

import pulsarlab
from pulsarlab.diagnosis import Diagnosis


def _until(check, what: str, timeout: float = 30.0):
    """Poll ``check`` until it returns something truthy (delivery is asynchronous)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_why_names_a_full_receiver_queue(run, broker) -> None:
    client = pulsarlab.Client(broker.service_url)
    try:
        consumer = client.subscribe("stuck", "s", consumer_type=pulsarlab.ConsumerType.Shared,
                                    receiver_queue_size=2, consumer_name="never-receives")
        produced = run("%pulsar produce stuck hello --count 10")
        assert produced.success, produced.out
        admin = broker.admin().topics

        def queue_full():
            subs = admin.get_stats("stuck")["subscriptions"]["s"]
            return subs["consumers"][0]["availablePermits"] == 0
        _until(queue_full, "the receiver queue to fill")
        ran = run("%pulsar why stuck --sub s")
        assert ran.success, ran.out
        d = ran.value
        assert isinstance(d, Diagnosis) and d.codes == ["receiver-queue-full"]
        assert d.source.endswith("the pulsarlab core's exact state")  # in-kernel broker
        assert "never-receives has 0 available permits" in d.findings[0].text
        assert "notebooks/08-redelivery.ipynb" in ran.out
        one = run("%pulsar why stuck --sub s --consumer never-receives")
        assert one.value.codes == ["receiver-queue-full"]
        consumer.close()
    finally:
        client.close()


def test_why_errors_are_one_line(run, broker) -> None:
    run("%pulsar produce t2 x")
    missing = run("%pulsar why t2 --sub nope")
    assert missing.value.codes == ["no-subscription"]
    run("%pulsar consume t2 --sub s --earliest -n 1 --timeout 300")
    ghost = run("%pulsar why t2 --sub s --consumer ghost")
    assert not ghost.success
    assert "%pulsar why: subscription 's' has no consumer 'ghost'" in ghost.out
    usage = run("%pulsar why t2")
    assert not usage.success and "--sub" in usage.out


def test_browse_pages_and_filters_read_only(run, broker) -> None:
    run("""%pulsar produce orders '{"id":1,"tier":"gold"}' --key a --property source=web""")
    run("""%pulsar produce orders '{"id":2,"tier":"basic"}' --key b""")
    run("%pulsar produce orders plain --key a")
    ran = run("%pulsar browse orders -n 2")
    assert ran.success, ran.out
    assert [m["key"] for m in ran.value] == ["a", "b"]
    assert ran.value[0]["value"] == {"id": 1, "tier": "gold"}
    assert ran.value[0]["publish_time"].endswith("Z")
    assert "from the earliest, page 0" in ran.out
    assert [m["value"] for m in run("%pulsar browse orders -n 2 --page 1").value] == ["plain"]
    assert run("%pulsar browse orders --latest -n 1").value[0]["value"] == "plain"
    assert [m["value"]["id"] for m in run("%pulsar browse orders --json tier=basic").value] == [2]
    assert len(run("%pulsar browse orders --key a").value) == 2
    assert len(run("%pulsar browse orders --property source=web").value) == 1
    assert run("%pulsar browse orders --grep lain").value[0]["value"] == "plain"
    widget = run("%pulsar browse orders --widget -n 2").value
    assert [m["key"] for m in widget.rows] == ["a", "b"]
    assert broker.admin().topics.get_subscriptions("orders") == []  # nothing subscribed
    bad = run("%pulsar browse orders --since soon")
    assert not bad.success and "%pulsar browse: not a time: 'soon'" in bad.out


def test_show_lag_polls_the_stats(run, broker) -> None:
    run("%pulsar produce lagging x --count 3")
    run("%pulsar consume lagging --sub s --earliest -n 1 --timeout 300")
    run("%pulsar produce lagging y --count 4")
    ran = run("%pulsar show lag lagging --sub s")
    assert ran.success, ran.out
    view = ran.value
    assert type(view).__name__ == "BacklogView" and view.running
    samples = _until(lambda: list(view.lag.samples), "the first stats poll")
    assert samples[0].backlog == 6  # 3 sent, 1 consumed and acked, 4 more sent
    assert run("%pulsar status").value["live_views"] >= 1
    run("%pulsar stop")
    assert not view.running


def test_browse_decodes_an_avro_topic_the_official_client_wrote(run, broker) -> None:
    pulsar = pytest.importorskip("pulsar", reason="the official pulsar-client (ops extra)")
    from pulsar.schema import AvroSchema, Integer, Record, String

    class Parcel(Record):
        parcel_id = String()
        weight = Integer()

    client = pulsar.Client(broker.broker.pulsar_url,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer("parcels", schema=AvroSchema(Parcel))
        producer.send(Parcel(parcel_id="p-1", weight=3))
    finally:
        client.close()
    ran = run("%pulsar browse parcels --json weight=3")
    assert ran.success, ran.out
    assert [m["value"] for m in ran.value] == [{"parcel_id": "p-1", "weight": 3}]
    widget = run("%pulsar browse parcels --widget").value
    assert widget.rows[0]["value"] == {"parcel_id": "p-1", "weight": 3}
