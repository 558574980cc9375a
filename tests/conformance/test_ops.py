"""Ops against real Pulsar (issue 25, item 5): ``%pulsar connect pulsar://… --admin-url …``
and the cluster-mode views (``View.for_subscription``) on real Apache Pulsar 3.3 / 4.0 and on
pulsarlab's listeners, the same steps on both, what a user sees compared — the magics with
pulsarlab's own client (their default) and with the official one (``--client official``).

The magics' tests against pulsarlab alone are tests/kernel/test_cluster_attach.py; this runs
the same kind of session on the ``line`` fixture's two targets.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from kernel.conftest import ip, run, runtime  # noqa: F401  (the magics' IPython fixtures)

from .conftest import Pair, Target, drain


def _magics_session(cell: Any, target: Target, topic: str, client: str) -> dict[str, Any]:
    """Connect with writes allowed (and ``--client``); produce, consume one, peek, stats,
    reset, why, browse; disconnect."""
    ran = cell(f"%pulsar connect {target.service_url} --admin-url {target.web_url} "
               f"--allow-writes --client {client}")
    assert ran.success, ran.out
    try:
        seen: dict[str, Any] = {"status": cell("%pulsar status").value["backend"]}
        sent = cell(f"%%pulsar produce {topic}\none\ntwo\nthree")
        assert sent.success, sent.out
        got = cell(f"%pulsar consume {topic} --sub billing --earliest -n 1 --type key_shared")
        assert got.success, got.out
        seen["consumed"] = [m["value"] for m in got.value]
        peeked = cell(f"%pulsar peek {topic} --sub billing -n 5")
        assert peeked.success, peeked.out
        seen["peeked"] = [m["value"] for m in peeked.value]
        seen["backlog"] = cell(f"%pulsar stats {topic}").value["subscriptions"]["billing"][
            "msgBacklog"]
        seen["subs"] = cell(f"%pulsar subs {topic}").value
        reset = cell(f"%pulsar reset-cursor {topic} --sub billing --earliest")
        assert reset.success, reset.out
        seen["backlog_after_reset"] = cell(f"%pulsar stats {topic}").value["subscriptions"][
            "billing"]["msgBacklog"]
        why = cell(f"%pulsar why {topic} --sub billing")
        seen["why"] = (why.success, "from stats + internal stats + namespace policies"
                       in why.out, "Traceback" in why.out)
        browsed = cell(f"%pulsar browse {topic} --latest -n 1")
        seen["browsed"] = [m["value"] for m in browsed.value] if browsed.success else browsed.out
        missing = cell("%pulsar stats no-such-topic-ops")
        seen["missing"] = (missing.success, "Traceback" in missing.out,
                           missing.out.split(":")[0])
        return seen
    finally:
        cell("%pulsar stop")


@pytest.mark.parametrize("client", ["pulsarlab", "official"])
def test_pulsar_connect_magics(line: Pair, run: Any, runtime: Any,  # noqa: F811
                               client: str) -> None:
    """The session of test_cluster_attach.py on both brokers, with pulsarlab's client (the
    default) and with the official one: same observations."""
    topic = f"ops-magics-{client}-{line.line.replace('.', '')}"
    real = _magics_session(run, line.real, topic, client)
    assert real == {"status": "cluster", "consumed": ["one"], "peeked": ["two", "three"],
                    "backlog": 2, "subs": ["billing"], "backlog_after_reset": 3,
                    "why": (True, True, False), "browsed": ["three"],
                    "missing": (False, False, "%pulsar stats")}
    assert _magics_session(run, line.lab, topic, client) == real


def _views_on(target: Target, topic: str) -> dict[str, Any]:
    """Key_Shared with two consumers, three messages acked past the mark-delete position;
    HashRangeView and CursorView follow it through the admin REST API."""
    import pulsar

    from pulsarlab.cluster import open_connection
    from pulsarlab.widgets import CursorView, HashRangeView

    app = pulsar.Client(target.service_url, logger=logging.getLogger("tests.ops"))
    conn = open_connection(target.service_url, admin_url=target.web_url)
    try:
        consumers = [app.subscribe(topic, "billing", consumer_name=name,
                                   consumer_type=pulsar.ConsumerType.KeyShared)
                     for name in ("c1", "c2")]
        producer = app.create_producer(topic, batching_enabled=False)
        for i in range(12):
            producer.send(f"m{i}".encode(), partition_key=f"key-{i}")
        for consumer in consumers:
            for msg in drain(consumer, ack=False):
                if msg.data() in (b"m3", b"m4", b"m8"):
                    consumer.acknowledge(msg)
        ranges = HashRangeView.for_subscription(conn, topic, "billing")
        cursor = CursorView.for_subscription(conn, topic, "billing")
        polled = (ranges.source.poll(), cursor.source.poll())
        # The client sends acks in groups (every 100 ms): poll until the three acks
        # (two holes: m3-m4 and m8) reached the broker, or give up and compare what is.
        deadline = time.monotonic() + 15
        while len(cursor.holes) < 2 and time.monotonic() < deadline:
            cursor.source.poll()
        return {
            "polled": polled,
            "label": "cluster stats fetched" in cursor.source.label.value,
            "holes": len(cursor.holes),
        }
    finally:
        conn.close()
        app.close()


def test_for_subscription_views(line: Pair) -> None:
    """Cluster-mode views poll real Pulsar's stats + internal stats like pulsarlab's."""
    topic = f"ops-views-{line.line.replace('.', '')}"
    real = _views_on(line.real, topic)
    assert real["polled"] == (True, True) and real["label"], real
    assert real["holes"] >= 1, real
    assert _views_on(line.lab, topic) == real


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
