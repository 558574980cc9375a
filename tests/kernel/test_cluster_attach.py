"""``%pulsar connect pulsar://…``: the magics on a Pulsar cluster, by pulsarlab's client + REST.

The cluster is a pulsarlab broker's pulsar:// and REST listeners, reached over sockets
exactly as a remote Apache Pulsar cluster would be.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pulsarlab import Broker


@pytest.fixture(scope="module")
def cluster() -> Iterator[Broker]:
    broker = Broker(storage="memory")
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture
def attach(run, runtime, cluster: Broker) -> Iterator[Any]:
    """``attach("--allow-writes")`` connects the magics to the cluster."""

    def connect(*flags: str) -> Any:
        ran = run(f"%pulsar connect {cluster.pulsar_url} --admin-url {cluster.web_url} "
                  + " ".join(flags))
        assert ran.success, ran.out
        return ran

    yield connect
    run("%pulsar stop")


def test_connect_reports_backend_and_is_read_only(run, attach, cluster: Broker) -> None:
    ran = attach()
    assert ran.out.strip() == (f"connected to {cluster.pulsar_url} "
                               f"(admin {cluster.web_url}, read-only)")
    status = run("%pulsar status").value
    assert status["backend"] == "cluster" and status["writes_allowed"] is False
    refused = run("%pulsar produce ro-topic hello")
    assert not refused.success
    assert "would change the cluster" in refused.out and "--allow-writes" in refused.out
    assert "Traceback" not in refused.out
    assert not run("%pulsar reset-cursor ro-topic --sub s --earliest").success
    assert run("%pulsar topics").success  # reading needs no permission
    missing = run("%pulsar stats no-such-topic")
    assert not missing.success and "Traceback" not in missing.out
    assert missing.out.startswith(
        "%pulsar stats: GET persistent/public/default/no-such-topic/stats: 404 ")


def test_produce_consume_peek_stats_with_writes(run, attach) -> None:
    ran = attach("--allow-writes")
    assert "writes allowed" in ran.out
    sent = run("%%pulsar produce orders\none\ntwo\nthree")
    assert sent.success, sent.out
    assert "will send 3 messages to persistent://public/default/orders" in sent.out
    got = run("%pulsar consume orders --sub billing --earliest -n 1 --type key_shared")
    assert got.success, got.out
    assert [m["value"] for m in got.value] == ["one"]
    peeked = run("%pulsar peek orders --sub billing -n 5")
    assert [m["value"] for m in peeked.value] == ["two", "three"]
    assert peeked.value[0]["message_id"].startswith("(")
    stats = run("%pulsar stats orders").value
    assert stats["subscriptions"]["billing"]["msgBacklog"] == 2
    assert run("%pulsar subs orders").value == ["billing"]
    reset = run("%pulsar reset-cursor orders --sub billing --earliest")
    assert reset.success, reset.out
    assert "will reset billing on persistent://public/default/orders to earliest" in reset.out
    assert run("%pulsar stats orders").value["subscriptions"]["billing"]["msgBacklog"] == 3


def test_partitioned_topic_and_policies(run, attach) -> None:
    attach("--allow-writes")
    assert run("%pulsar create parts --partitions 2").success
    assert run("%pulsar produce parts x --count 4").success
    stats = run("%pulsar stats parts").value
    assert len(stats["partitions"]) == 2
    policies = run("%pulsar policies public/default --ttl 120")
    assert policies.success, policies.out
    assert policies.value["message_ttl_in_seconds"] == 120
    run("%pulsar policies public/default --ttl 0")


def test_bad_connect_is_one_line(run, runtime, cluster: Broker) -> None:
    ran = run(f"%pulsar connect {cluster.pulsar_url} --admin-url http://127.0.0.1:1")
    assert not ran.success and "Traceback" not in ran.out
    assert "no admin REST API answered at http://127.0.0.1:1" in ran.out
    ran = run(f"%pulsar connect {cluster.pulsar_url} --events tcp://127.0.0.1:1")
    assert not ran.success and "--events and --curve-server-key are for zmq://" in ran.out
    ran = run("%pulsar connect http://127.0.0.1:1")
    assert not ran.success and "service URL must look like zmq://host:port" in ran.out


def test_token_file_reaches_both_listeners(run, runtime, tmp_path) -> None:
    secured = Broker(storage="memory", authentication_enabled=True).start()
    try:
        path = tmp_path / "token"
        path.write_text(secured.create_token("ops") + "\n")
        denied = run(f"%pulsar connect {secured.pulsar_url} --admin-url {secured.web_url}")
        assert not denied.success and "refused the token" in denied.out
        ran = run(f"%pulsar connect {secured.pulsar_url} --admin-url {secured.web_url} "
                  f"--token-file {path} --allow-writes")
        assert ran.success, ran.out
        assert run("%pulsar produce locked hi").success
        got = run("%pulsar consume locked --sub s --earliest -n 1")
        assert [m["value"] for m in got.value] == ["hi"]
    finally:
        run("%pulsar stop")
        secured.stop()


def test_show_ranges_follows_the_cluster(run, attach) -> None:
    from pulsarlab.widgets.cluster_source import ClusterSource

    attach("--allow-writes")
    run("%pulsar produce shown a --key k1")
    run("%pulsar consume shown --sub ks --type key_shared --earliest -n 1")
    shown = run("%pulsar show ranges shown --sub ks")
    assert shown.success, shown.out
    view = shown.value
    assert isinstance(view.source, ClusterSource)
    assert view.source.poll()
    assert view.source.label in view.children
    assert "cluster stats fetched" in view.source.label.value


def test_browse_and_why_on_a_read_only_cluster(run, attach, cluster: Broker) -> None:
    """Browsing and diagnosing only read (examinemessage, peek, stats): no --allow-writes."""
    from pulsarlab import Client, ConsumerType, InitialPosition

    client = Client(cluster.service_url)
    try:
        producer = client.create_producer("browse-ro")
        for i in range(3):
            producer.send(f'{{"n": {i}}}'.encode(), partition_key=f"k{i}")
        consumer = client.subscribe("browse-ro", "ops", consumer_type=ConsumerType.Shared,
                                    initial_position=InitialPosition.Earliest)
        attach()
        rows = run("%pulsar browse browse-ro --json n=1").value
        assert [(m["key"], m["value"]) for m in rows] == [("k1", {"n": 1})]
        assert run("%pulsar browse browse-ro --latest -n 1").value[0]["key"] == "k2"
        peeked = run("%pulsar browse browse-ro --sub ops --key k0").value
        assert [m["value"] for m in peeked] == [{"n": 0}]  # REST peek has no redelivery count
        why = run("%pulsar why browse-ro --sub ops")
        assert why.success, why.out
        assert "from stats + internal stats + namespace policies" in why.out
        consumer.close()
    finally:
        client.close()
