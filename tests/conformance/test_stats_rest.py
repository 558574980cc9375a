"""Stats and REST answers of real Pulsar and pulsarlab, compared by key and JSON type.

The same scenario runs on both; each JSON document is flattened to ``path -> JSON type``
(``$.subscriptions.s.consumers[].msgRateOut -> number``; an int and a float are different
types, as a strict JSON client sees them). A key pulsarlab serves must have Pulsar's type
and must exist in Pulsar's answer; the keys Pulsar has and pulsarlab lacks must be among the
known ones in ``known_stats_differences.json`` (README.md, "stats keys") so that one more
missing key fails.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pulsar
import pytest

from .conftest import WAIT_MS, admin_path, receive_n


def _type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    return type(value).__name__


def shape(doc: Any, path: str = "$", out: dict[str, set[str]] | None = None,
          ) -> dict[str, set[str]]:
    """``path -> {JSON types}`` of every leaf and container in ``doc``."""
    out = {} if out is None else out
    out.setdefault(path, set()).add(_type(doc))
    if isinstance(doc, dict):
        for key, value in doc.items():
            shape(value, f"{path}.{key}", out)
    elif isinstance(doc, list):
        for value in doc:
            shape(value, f"{path}[]", out)
    return out


def _generic(path: str) -> str:
    """A path without the run's unique token (partition names of partitioned-stats)."""
    return re.sub(r"-[0-9a-f]{8}(?=-partition-|\.|$)", "", path)


def differences(real: Any, lab: Any) -> tuple[set[str], set[str], dict[str, tuple]]:
    """(paths only Pulsar has, paths only pulsarlab has, paths whose types differ)."""
    a = {_generic(p): t for p, t in shape(real).items()}
    b = {_generic(p): t for p, t in shape(lab).items()}
    # a null on one side is "no value yet" (e.g. lastAckedTimestamp): not a type clash
    mismatched = {p: (sorted(a[p]), sorted(b[p])) for p in a.keys() & b.keys()
                  if a[p] - {"null"} and b[p] - {"null"} and a[p] - {"null"} != b[p] - {"null"}}
    return a.keys() - b.keys(), b.keys() - a.keys(), mismatched


def _scenario_topic(s, partitions: int = 0) -> str:
    """A topic with a producer, a Shared subscription with two consumers, some acked."""
    t = s.topic("stats")
    if partitions:
        s.rest_ok("PUT", f"{admin_path(t)}/partitions", partitions)
    c1 = s.client.subscribe(t, "s", consumer_type=pulsar.ConsumerType.Shared,
                            consumer_name="c1", receiver_queue_size=5)
    s.client.subscribe(t, "s", consumer_type=pulsar.ConsumerType.Shared, consumer_name="c2",
                       receiver_queue_size=5)
    s.client.subscribe(t, "other", consumer_type=pulsar.ConsumerType.Exclusive)
    p = s.client.create_producer(t, producer_name="stats-producer")
    for i in range(20):
        p.send(f"m{i}".encode())
    receive_n(c1, 3)
    s._keep = (c1, p)  # keep them connected while stats are read
    return t


def _doc(s, resource: str, partitions: int = 0) -> Any:
    t = _scenario_topic(s, partitions)
    return s.rest_ok("GET", f"{admin_path(t)}/{resource}")


# Keys Pulsar's answers have that pulsarlab's lack, and the reverse, per line and resource
# (README.md, "stats keys"); a run of this file wrote them.
KNOWN: dict[str, dict[str, list[str]]] = json.loads(
    (Path(__file__).parent / "known_stats_differences.json").read_text())


def _known(line: str, resource: str) -> tuple[set[str], set[str]]:
    entry = KNOWN.get(f"{line}/{resource}", {})
    return set(entry.get("missing", ())), set(entry.get("extra", ()))


def _check(seen: dict[str, Any], known_missing: set[str], known_extra: set[str],
           name: str = "") -> None:
    dump = os.environ.get("PULSARLAB_STATS_DUMP")  # a directory: keep both answers there
    if dump and name:
        Path(dump, f"{name.replace('/', '_')}.json").write_text(json.dumps(seen, indent=1))
    missing, extra, mismatched = differences(seen["pulsar"], seen["pulsarlab"])
    problems = {
        "JSON types differ": mismatched,
        "pulsarlab serves keys Pulsar does not": sorted(extra - known_extra),
        "pulsarlab lacks Pulsar's keys": sorted(missing - known_missing),
        # strict both ways: a key pulsarlab now serves leaves known_stats_differences.json
        "listed as missing but served (shrink the list)": sorted(known_missing - missing),
        "listed as extra but no longer served (shrink the list)": sorted(known_extra - extra),
    }
    if any(problems.values()):
        pytest.fail(json.dumps(problems, indent=1, default=list))


# PersistentTopicsTest.testGetStats / TopicStatsImpl
@pytest.mark.parametrize("resource", ["stats", "internalStats"])
def test_topic_stats_keys_and_types(each, line, resource) -> None:
    seen = each(_doc, resource)
    _check(seen, *_known(line.line, resource), name=f"{line.line}/{resource}")


# PersistentTopicsTest.testGetPartitionedStats / PartitionedTopicStatsImpl
@pytest.mark.parametrize("per_partition", [False, True])
def test_partitioned_stats_keys_and_types(each, line, per_partition) -> None:
    def scenario(s):
        t = _scenario_topic(s, partitions=2)
        flag = "true" if per_partition else "false"
        return s.rest_ok("GET", f"{admin_path(t)}/partitioned-stats?perPartition={flag}")

    seen = each(scenario)
    key = "partitioned-stats" if not per_partition else "partitioned-stats-per-partition"
    _check(seen, *_known(line.line, key), name=f"{line.line}/{key}")


# PersistentTopicsTest: the values both brokers must agree on in the same scenario
def test_stats_values_that_are_deterministic(compare) -> None:
    def scenario(s):
        stats = _doc(s, "stats")
        sub = stats["subscriptions"]["s"]
        other = stats["subscriptions"]["other"]
        return {
            "msgInCounter": stats["msgInCounter"],
            "publishers": [p["producerName"] for p in stats["publishers"]],
            "s.type": sub["type"], "s.msgBacklog": sub["msgBacklog"],
            "s.consumers": sorted(c["consumerName"] for c in sub["consumers"]),
            "other.type": other["type"], "other.msgBacklog": other["msgBacklog"],
            "other.isDurable": other.get("isDurable"),
        }

    compare(scenario)


# PersistentTopicsTest.testGetLastMessageId / lastMessageId REST
def test_last_message_id_keys(each) -> None:
    def scenario(s):
        t = s.topic("lastid")
        p = s.client.create_producer(t)
        for i in range(3):
            p.send(f"m{i}".encode())
        return s.rest_ok("GET", f"{admin_path(t)}/lastMessageId")

    seen = each(scenario)
    assert sorted(seen["pulsarlab"]) == sorted(seen["pulsar"])
    assert seen["pulsarlab"]["entryId"] == seen["pulsar"]["entryId"] == 2


# AdminApiTest: status codes and the error body of the same bad requests
@pytest.mark.parametrize("method,path", [
    ("GET", "/admin/v2/persistent/public/default/{missing}/stats"),
    ("GET", "/admin/v2/persistent/public/default/{missing}/internalStats"),
    ("GET", "/admin/v2/persistent/public/default/{missing}/partitioned-stats"),
    ("GET", "/admin/v2/persistent/public/nope-ns/x/stats"),
    ("DELETE", "/admin/v2/persistent/public/default/{missing}"),
    ("GET", "/admin/v2/namespaces/public/nope-ns"),
    ("GET", "/admin/v2/tenants/nope-tenant"),
    ("PUT", "/admin/v2/persistent/public/default/{missing}/subscription/s"),
    ("POST", "/admin/v2/persistent/public/default/{missing}/subscription/s/skip_all"),
    ("GET", "/admin/v2/namespaces/public"),
    ("GET", "/admin/v2/clusters"),
    ("GET", "/admin/v2/tenants"),
])
def test_rest_status_and_error_shape(each, method, path) -> None:
    def scenario(s):
        status, body = s.rest(method, path.format(missing=f"missing-{s.token}"))
        error_keys = sorted(body) if isinstance(body, dict) else type(body).__name__
        return status, error_keys

    seen = each(scenario)
    assert seen["pulsarlab"] == seen["pulsar"]


def test_consumer_stats_over_the_binary_protocol(compare) -> None:
    """ConsumerStatsTest: what the client's consumer sees of its own stats stays the same."""
    def scenario(s):
        t = s.topic("cstats")
        c = s.client.subscribe(t, "s", consumer_type=pulsar.ConsumerType.Shared)
        p = s.client.create_producer(t)
        p.send(b"x")
        m = c.receive(timeout_millis=WAIT_MS)
        c.acknowledge(m)
        return c.get_last_message_id().entry_id()

    compare(scenario)
