"""Every admin REST path pulsarlab serves, called on real Pulsar and on pulsarlab with the same
requests (issue 25, item 3): the status code and the shape of the answer must be equal.

The shape is what a client branches on: a JSON object's sorted keys (``{"reason": ...}`` for
an error), its JSON type otherwise (``list``, ``string``, ``int``, ``bool``, ``null`` for an
empty body).
test_stats_rest.py compares the stats documents key by key and test_pulsar_admin.py the
common commands through Pulsar's own CLI; this file walks the rest of the routing table
(``broker/web/app.py``), successes and refusals, one scenario per release line.
"""

from __future__ import annotations

from typing import Any

import pulsar

from .conftest import Session, admin_path
from .test_stats_rest import _type


def _shape(body: Any) -> Any:
    return sorted(body) if isinstance(body, dict) else _type(body)


# (method, path, JSON body); {t}: a topic with 3 messages and subscription "s", {p}: a
# partitioned topic of 2, {ns}: a fresh namespace, {x}: a name that does not exist
REQUESTS: list[tuple[str, str, Any]] = [
    ("GET", "/admin/v2/clusters/standalone", None),
    ("GET", "/admin/v2/clusters/nowhere", None),
    ("GET", "/admin/v2/namespaces/nope-tenant-{x}", None),
    ("PUT", "/admin/v2/tenants/public", {"allowedClusters": ["standalone"]}),
    ("DELETE", "/admin/v2/tenants/nope-{x}", None),
    ("PUT", "/admin/v2/namespaces/{ns}", None),
    ("DELETE", "/admin/v2/namespaces/public/nope-{x}", None),
    ("GET", "/admin/v2/namespaces/{ns}/compactionThreshold", None),
    ("PUT", "/admin/v2/namespaces/{ns}/compactionThreshold", 1048576),
    ("GET", "/admin/v2/namespaces/{ns}/compactionThreshold", None),
    ("DELETE", "/admin/v2/namespaces/{ns}/compactionThreshold", None),
    ("GET", "/admin/v2/namespaces/{ns}/encryptionRequired", None),
    ("POST", "/admin/v2/namespaces/{ns}/encryptionRequired", True),
    ("GET", "/admin/v2/namespaces/{ns}/schemaValidationEnforced", None),
    ("POST", "/admin/v2/namespaces/{ns}/schemaValidationEnforced", True),
    ("GET", "/admin/v2/namespaces/{ns}/schemaCompatibilityStrategy", None),
    ("PUT", "/admin/v2/namespaces/{ns}/schemaCompatibilityStrategy", "FULL"),
    ("GET", "/admin/v2/namespaces/{ns}/schemaCompatibilityStrategy", None),
    ("GET", "/admin/v2/namespaces/{ns}/retention", None),
    ("GET", "/admin/v2/namespaces/public/nope-{x}/retention", None),
    ("GET", "/admin/v2/namespaces/{ns}/backlogQuotaMap", None),
    ("POST", "/admin/v2/namespaces/{ns}/backlogQuota",
     {"limitSize": 1048576, "limitTime": -1, "policy": "producer_request_hold"}),
    ("GET", "/admin/v2/namespaces/{ns}/backlogQuotaMap", None),
    ("DELETE", "/admin/v2/namespaces/{ns}/backlogQuota", None),
    ("GET", "/admin/v2/namespaces/{ns}/permissions", None),
    ("GET", "/admin/v2/non-persistent/{ns}", None),
    ("GET", "/admin/v2/persistent/{ns}/partitioned", None),
    ("GET", "/admin/v2/persistent/public/nope-{x}", None),
    ("PUT", "{t}", None),
    ("PUT", "{p}/partitions", 2),
    ("POST", "{p}/partitions", 3),
    ("POST", "{p}/partitions", 1),
    ("GET", "{p}/partitions", None),
    ("GET", "{t}/partitions", None),
    ("GET", "{t}/lastMessageId", None),
    ("GET", "{t}/subscriptions", None),
    ("GET", "{t}/examinemessage?initialPosition=earliest&messagePosition=1", None),
    ("GET", "{p}/examinemessage?initialPosition=earliest&messagePosition=1", None),
    ("GET", "{t}/subscription/s/position/1", None),
    ("GET", "{t}/subscription/s/position/9", None),
    ("GET", "{t}/subscription/nope/position/1", None),
    ("GET", "{t}/subscriptions", None),
    ("POST", "{t}/all_subscription/expireMessages/3600", None),
    ("POST", "{t}/subscription/s/skip/1", None),
    # (right after an expiry on the same subscription Pulsar 4.0 may answer 409: its
    # PersistentMessageExpiryMonitor is still busy; so the single one comes second)
    ("POST", "{t}/subscription/s/expireMessages/3600", None),
    ("POST", "{t}/subscription/s/resetcursor/0", None),
    ("POST", "{t}/subscription/nope/resetcursor/0", None),
    ("GET", "{t}/permissions", None),
    ("POST", "{t}/permissions/app", ["consume"]),
    ("DELETE", "{t}/permissions/app", None),
    ("GET", "{t}/compaction", None),
    ("PUT", "{t}/compaction", None),
    ("PUT", "{x}/subscription/s", None),
    ("DELETE", "{t}/subscription/nope", None),
    ("POST", "{p}/terminate", None),
    ("POST", "{p}/terminate/partitions", None),
    ("POST", "{t}/terminate/partitions", None),
    ("PUT", "{p}/unload", None),
    ("DELETE", "{p}", None),
    ("DELETE", "{t}/partitions", None),
    ("DELETE", "{p}/partitions", None),
    ("GET", "/admin/v2/schemas/{tns}/nope-{x}/schema", None),
    ("GET", "/admin/v2/brokers/standalone", None),
    ("GET", "/admin/v2/brokers/health", None),
    ("GET", "/admin/v2/brokers/ready", None),
    ("GET", "/admin/v2/brokers/version", None),
    ("GET", "/admin/v2/brokers/configuration", None),
    ("GET", "/admin/v2/brokers/configuration/values", None),
    ("GET", "/lookup/v2/topic/{tpath}", None),
    ("GET", "/lookup/v2/topic/persistent/public/nope-{x}/t", None),
]


def _walk(s: Session) -> list[tuple[str, str, int, Any]]:
    t = admin_path(s.topic("paths"))
    p = admin_path(s.topic("paths-parts"))
    names = {"t": t, "p": p, "x": s.token, "ns": f"public/paths-{s.token}",
             "tpath": t.removeprefix("/admin/v2/"), "tns": "public/default",
             }
    producer = s.client.create_producer(s.topic("paths"))
    s.client.subscribe(s.topic("paths"), "s", initial_position=pulsar.InitialPosition.Earliest
                       ).close()
    for i in range(3):
        producer.send(f"m{i}".encode())
    producer.close()
    seen = []
    for method, template, body in REQUESTS:
        if template.startswith("{x}"):
            template = f"{admin_path(s.topic('nope'))}{template[3:]}"
        path = template.format(**names)
        status, answer = s.rest(method, path, body)
        if template.startswith("/lookup/") and isinstance(answer, dict):
            # Jackson leaves LookupData's null TLS URLs out; pulsarlab sends them as null
            # (the official C++ client fails on an answer without brokerUrlTls; README.md)
            answer = {k: v for k, v in answer.items() if v is not None}
        # (a subscription list in sorted order: Pulsar lists its map, in no set order)
        shown = sorted(answer) if template.endswith("/subscriptions") else _shape(answer)
        seen.append((method, s.short(template), status, shown))
    return seen


def test_every_served_path_answers_as_pulsar(each) -> None:
    """AdminApiTest & co.: the status and answer shape of each request, in order."""
    seen = each(_walk)
    differ = [(r, b) for r, b in zip(seen["pulsar"], seen["pulsarlab"], strict=True) if r != b]
    assert not differ, "\n".join(f"pulsar:    {r}\npulsarlab: {b}" for r, b in differ)
