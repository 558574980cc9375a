"""Ops mode (``%pulsar connect pulsar://…``) with either Pulsar client, over sockets to brokers
in other processes: a pulsarlab broker process (its pulsar:// and REST listeners) and
pulsar-lite (a Pulsar broker not written here; pulsar:// only, it has no admin REST API).

``pulsarlab`` runs with the official ``pulsar-client`` made unavailable (``import pulsar``
fails), as where it is not installed; ``official`` is ``--client official``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from cluster_peers import block_official_client, broker_process, pulsar_lite

from pulsarlab.cluster import ClusterConnection


@pytest.fixture(scope="module")
def process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with broker_process(tmp_path_factory.mktemp("ops-process")) as proc:
        yield proc


@pytest.fixture(scope="module")
def lite() -> Iterator[str]:
    with pulsar_lite() as url:
        yield url


@pytest.fixture(params=["pulsarlab", "official"])
def client_flag(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The ``--client`` flag of the test's connect ("" for the default, pulsarlab's)."""
    if request.param == "official":
        pytest.importorskip("pulsar", reason="the official pulsar-client (ops extra)")
        return "--client official"
    block_official_client(monkeypatch)
    return ""


def _client_type(runtime: Any) -> str:
    return type(runtime.client()).__module__.split(".")[0]


def test_ops_session_on_a_broker_process(run, runtime, process, client_flag) -> None:
    url, web = process.report["pulsar_url"], process.web_url
    ran = run(f"%pulsar connect {url} --admin-url {web} --allow-writes {client_flag}")
    assert ran.success, ran.out
    try:
        official = bool(client_flag)
        assert ran.out.strip() == (f"connected to {url} (admin {web}, writes allowed"
                                   + (", official client)" if official else ")"))
        status = run("%pulsar status").value
        assert status["client"] == ("official" if official else "pulsarlab")
        topic = f"ops-proc-{'official' if official else 'lab'}"
        sent = run(f"%%pulsar produce {topic}\none\ntwo\nthree")
        assert sent.success, sent.out
        assert _client_type(runtime) == ("pulsar" if official else "pulsarlab")
        got = run(f"%pulsar consume {topic} --sub billing --earliest -n 1 --type key_shared")
        assert got.success, got.out
        assert [m["value"] for m in got.value] == ["one"]
        assert [m["value"] for m in run(f"%pulsar peek {topic} --sub billing -n 5").value] \
            == ["two", "three"]
        assert run(f"%pulsar stats {topic}").value["subscriptions"]["billing"][
            "msgBacklog"] == 2
        assert run(f"%pulsar reset-cursor {topic} --sub billing --earliest").success
        again = run(f"%pulsar consume {topic} --sub billing -n 3 --type key_shared")
        assert [m["value"] for m in again.value] == ["one", "two", "three"]
        browsed = run(f"%pulsar browse {topic} --latest -n 1")
        assert [m["value"] for m in browsed.value] == ["three"]
        assert run(f"%pulsar create {topic}-parts --partitions 2").success
        assert run(f"%pulsar produce {topic}-parts x --count 4").success
        parts = run(f"%pulsar consume {topic}-parts --sub s --earliest -n 4 --type shared")
        assert [m["value"] for m in parts.value] == ["x"] * 4
        why = run(f"%pulsar why {topic} --sub billing")
        assert why.success and "Traceback" not in why.out
    finally:
        run("%pulsar stop")


def test_official_client_missing_is_one_line(run, runtime, process, monkeypatch) -> None:
    block_official_client(monkeypatch)
    ran = run(f"%pulsar connect {process.report['pulsar_url']} --admin-url "
              f"{process.web_url} --client official")
    assert not ran.success and "Traceback" not in ran.out
    assert "needs 'pulsar', which is not installed: pip install 'pulsarlab[ops]'" in ran.out
    assert run("%pulsar status").value["state"] == "none"


def test_client_choice_is_checked(run, runtime, process) -> None:
    ran = run(f"%pulsar connect {process.service_url} --client official")
    assert not ran.success and "Traceback" not in ran.out
    assert "a zmq:// broker is reached with pulsarlab's client" in ran.out
    ran = run(f"%pulsar connect {process.report['pulsar_url']} --client other")
    assert not ran.success and "invalid choice: 'other'" in ran.out


def test_produce_and_consume_on_pulsar_lite(run, runtime, lite, client_flag,
                                            monkeypatch) -> None:
    """pulsar-lite has no admin REST API, so the connect check (one REST call) is skipped
    here; the magics that only use the client — produce, consume — work on it."""
    monkeypatch.setattr(ClusterConnection, "check", lambda self, timeout_s: None)
    ran = run(f"%pulsar connect {lite} --allow-writes {client_flag}")
    assert ran.success, ran.out
    try:
        topic = f"ops-lite-{'official' if client_flag else 'lab'}"
        assert run(f"%%pulsar produce {topic}\na\nb\nc").success
        assert run(f"%pulsar produce {topic} keyed --key k1 --count 2").success
        assert _client_type(runtime) == ("pulsar" if client_flag else "pulsarlab")
        got = run(f"%pulsar consume {topic} --sub s --earliest -n 2 --type failover")
        assert got.success, got.out
        assert [m["value"] for m in got.value] == ["a", "b"]
        rest = run(f"%pulsar consume {topic} --sub s -n 3 --type failover")
        assert [(m["value"], m["key"]) for m in rest.value] == [
            ("c", None), ("keyed", "k1"), ("keyed", "k1")]
        stats = run(f"%pulsar stats {topic}")  # no REST API on pulsar-lite: one line
        assert not stats.success and "Traceback" not in stats.out
    finally:
        run("%pulsar stop")


def test_open_connection_client_choice(monkeypatch) -> None:
    """Without a broker: the default, the choice, and the refusals, each one line."""
    from pulsarlab.cluster import open_connection
    from pulsarlab.extras import MissingDependency

    conn = open_connection("pulsar://h:6650")
    assert conn.client_name == "pulsarlab" and conn.describe()["client"] == "pulsarlab"
    assert conn.api.__name__ == "pulsarlab.broker.client"
    assert open_connection("zmq://h:6650").describe()["client"] == "pulsarlab"
    with pytest.raises(ValueError, match="the client is pulsarlab or official, not 'cpp'"):
        open_connection("pulsar://h:6650", client="cpp")
    with pytest.raises(ValueError, match="a zmq:// broker is reached with pulsarlab's client"):
        open_connection("zmq://h:6650", client="official")
    block_official_client(monkeypatch)
    with pytest.raises(MissingDependency, match=r"pip install 'pulsarlab\[ops\]'"):
        open_connection("pulsar://h:6650", client="official")
