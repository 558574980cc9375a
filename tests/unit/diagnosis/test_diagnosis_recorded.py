"""``pulsarlab.diagnose`` on stats in the shapes a real Pulsar 3.3 and 4.0 broker returns
(the admin REST fixtures the cluster views use: ``SubscriptionStatsImpl``/``ConsumerStatsImpl``
field names of each version; 3.3 ``keyHashRanges`` strings and ``readPositionWhenJoining``,
4.0 ``keyHashRangeArrays`` and ``drainingHashes``)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pulsarlab.diagnosis import TUTORIALS, diagnose

FIXTURES = Path(__file__).parents[1] / "widgets" / "fixtures" / "cluster"


def load(name):
    return json.loads((FIXTURES / name).read_text())


@pytest.fixture
def stuck_33():
    return load("stats-3.3-key-shared-stuck.json"), load("internal-stats-3.3.json")


def test_3_3_stuck_key_shared(stuck_33):
    stats, internal = stuck_33
    d = diagnose(stats, "orders-ks", internal_stats=internal, topic="orders")
    assert d.codes == ["consumer-unacked-limit", "recently-joined"]
    blocked, joined = d.findings
    assert blocked.consumer == "c-1" and "holds 10 unacked messages" in blocked.text
    assert joined.consumer == "c-3"
    assert "read position was 12:58" in joined.text and "(now 12:41)" in joined.text
    assert "c-1 (10 unacked) and c-2 (1 unacked)" in joined.text
    assert d.source == "stats + internal stats"
    # Without internal stats, the mark-delete position is not known, and it says so.
    assert "unknown" in diagnose(stats, "orders-ks").findings[1].text


def test_3_3_asking_about_one_consumer(stuck_33):
    stats, internal = stuck_33
    d = diagnose(stats, "orders-ks", consumer="c-2", internal_stats=internal)
    assert d.codes == ["recently-joined"]  # c-2 holds older messages that c-3 waits for
    with pytest.raises(ValueError, match="connected: c-1, c-2, c-3"):
        diagnose(stats, "orders-ks", consumer="nobody")


def test_3_3_sticky_gap_and_terminated(stuck_33):
    stats, internal = copy.deepcopy(stuck_33)
    sub = stats["subscriptions"]["orders-ks"]
    sub["keySharedMode"] = "STICKY"
    sub["consumersAfterMarkDeletePosition"] = {}
    internal["state"] = "Terminated"
    d = diagnose(stats, "orders-ks", internal_stats=internal)
    # c-1 [32769, 65536], c-2 [16385, 32768], c-3 [0, 16384]: nothing is missing...
    assert "no-consumer-for-range" not in d.codes
    assert "terminated at 12:57" in d.findings[0].text
    sub["consumers"] = sub["consumers"][1:]  # ...until c-1 leaves
    gap = [f for f in diagnose(stats, "orders-ks").findings
           if f.code == "no-consumer-for-range"]
    assert gap and "[32769, 65535]" in gap[0].text


def test_4_0_draining_hashes():
    stats = load("stats-4.0-key-shared-draining.json")
    d = diagnose(stats, "payments", internal_stats=load("internal-stats-4.0.json"))
    assert d.codes == ["draining-hashes"]
    text = d.findings[0].text
    assert d.findings[0].consumer == "c1"
    assert "3 unacked messages of 2 draining hashes" in text
    assert "hash 2862: 2 unacked messages, 5 blocked dispatches" in text
    assert "before going to c2" in text  # 2862 is in c2's [1, 2959] now
    assert diagnose(stats, "payments", consumer="c2").codes == ["draining-hashes"]


def test_4_0_quota_ttl_and_delayed():
    stats = load("stats-4.0-key-shared-draining.json")
    stats["backlogQuotaLimitSize"] = 500  # 4.0's TopicStatsImpl field; backlogSize is 600
    sub = stats["subscriptions"]["payments"]
    sub.update(msgDelayed=2, totalMsgExpired=7, msgRateExpired=1.5,
               lastExpireTimestamp=1733913620000)
    for c in sub["consumers"]:
        c["drainingHashes"] = []
    d = diagnose(stats, "payments", policies={"message_ttl_in_seconds": 30})
    assert d.codes == ["delayed-delivery", "ttl-expiry", "backlog-quota"]
    assert "2 of the 5 backlog messages" in d.findings[0].text
    assert "(30 s) expired 7 messages" in d.findings[1].text
    assert "2024-12-11 10:40:20 UTC" in d.findings[1].text
    assert "600 bytes, at its backlog quota of 500 bytes" in d.findings[2].text


def test_3_3_failover_standby_on_a_partition():
    stats = load("partitioned-stats-3.3-failover.json")
    partition = next(iter(stats["partitions"].values()))
    d = diagnose(partition, next(iter(partition["subscriptions"])), consumer="worker-2")
    assert d.codes == ["failover-standby"]
    assert "the active consumer is worker-1" in d.findings[0].text


def test_every_finding_links_an_existing_tutorial():
    root = Path(__file__).parents[3]
    for path in TUTORIALS.values():
        assert (root / path).is_file(), path


def test_rendering():
    stats = load("stats-4.0-key-shared-draining.json")
    d = diagnose(stats, "payments", topic="persistent://public/default/pay")
    assert str(d).splitlines()[0] == "why payments on persistent://public/default/pay (from stats):"
    assert "(see notebooks/16-key-shared-3.3-vs-4.0.ipynb)" in str(d)
    assert "[16-key-shared-3.3-vs-4.0.ipynb](notebooks/16-" in d._repr_markdown_()


def test_a_partitioned_topic_is_diagnosed_per_partition():
    """``diagnose_topic`` (what ``%pulsar why`` runs) labels each partition's findings and
    still answers when the role may not read the namespace policies."""
    from types import SimpleNamespace

    from pulsarlab.magic_ops import diagnose_topic

    stats = load("partitioned-stats-3.3-failover.json")["partitions"]

    def refuse(namespace):
        raise PermissionError("403 Forbidden")

    admin = SimpleNamespace(
        topics=SimpleNamespace(get_stats=stats.__getitem__,
                               get_internal_stats=lambda name: {}),
        namespaces=SimpleNamespace(get_policies=refuse))
    runtime = SimpleNamespace(mode="connected", broker=None, admin=lambda: admin)
    sub = next(iter(next(iter(stats.values()))["subscriptions"]))
    d = diagnose_topic(runtime, list(stats), sub)
    assert d.source == "stats"
    assert d.topic == next(iter(stats)).rsplit("-partition-", 1)[0]
    labels = {f.text.split(":", 1)[0] for f in d.findings}
    assert labels == {f"partition {n.rsplit('-', 1)[-1]}" for n in stats}
