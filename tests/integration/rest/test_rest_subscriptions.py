"""REST: subscriptions and cursors (skip, expire, reset), peek and examine-message."""

from __future__ import annotations

import json

import pytest

from pulsarlab import Admin, Client
from pulsarlab.broker.client import CompressionType

from ..zmq_pulsar.dealer import wait_until

BASE = "/admin/v2/persistent/public/default"


@pytest.fixture(scope="module")
def client(broker):
    c = Client(broker.service_url)
    yield c
    c.close()


def _backlog(rest, topic: str, sub: str) -> int:
    return rest.get(f"{BASE}/{topic}/stats").json["subscriptions"][sub]["msgBacklog"]


def _fill(client, topic: str, n: int, **kwargs) -> list:
    producer = client.create_producer(f"persistent://public/default/{topic}", **kwargs)
    ids = [producer.send(f"m{i}".encode()) for i in range(n)]
    producer.close()
    return ids


def test_create_list_and_delete_subscriptions(rest, client):
    assert rest.put(f"{BASE}/subs").status == 204
    assert rest.put(f"{BASE}/subs/subscription/a").status == 204
    exists = rest.put(f"{BASE}/subs/subscription/a")
    assert exists.status == 409 and "already exists" in exists.reason
    earliest = {"ledgerId": -1, "entryId": -1, "partitionIndex": -1}
    assert rest.put(f"{BASE}/subs/subscription/b", earliest).status == 204
    assert rest.get(f"{BASE}/subs/subscriptions").json == ["a", "b"]
    consumer = client.subscribe("persistent://public/default/subs", "a")
    busy = rest.delete(f"{BASE}/subs/subscription/a")
    assert busy.status == 412 and "connected consumers" in busy.reason
    assert rest.delete(f"{BASE}/subs/subscription/a?force=true").status == 204
    # The disconnected consumer subscribes again, as Pulsar's clients do (which makes
    # "a" anew): once it is back and then closed, "a" can go for good.
    wait_until(lambda: rest.get(f"{BASE}/subs/stats").json["subscriptions"]
               .get("a", {}).get("consumers"), "the consumer to subscribe again")
    consumer.close()
    assert rest.delete(f"{BASE}/subs/subscription/a").status == 204
    assert rest.delete(f"{BASE}/subs/subscription/a").status == 404
    assert rest.get(f"{BASE}/subs/subscriptions").json == ["b"]


def test_skip_skip_all_and_expire(rest, client):
    assert rest.put(f"{BASE}/cur").status == 204
    assert rest.put(f"{BASE}/cur/subscription/s", {"ledgerId": -1, "entryId": -1}).status == 204
    _fill(client, "cur", 5)
    assert _backlog(rest, "cur", "s") == 5
    assert rest.post(f"{BASE}/cur/subscription/s/skip/2").status == 204
    assert _backlog(rest, "cur", "s") == 3
    assert rest.post(f"{BASE}/cur/subscription/s/skip/two").status == 400
    assert rest.post(f"{BASE}/cur/subscription/nope/skip/1").status == 404
    assert rest.post(f"{BASE}/cur/subscription/s/skip_all").status == 204
    assert _backlog(rest, "cur", "s") == 0
    assert rest.post(f"{BASE}/cur/subscription/s/resetcursor/0").status == 204
    assert _backlog(rest, "cur", "s") == 5
    assert rest.post(f"{BASE}/cur/subscription/s/expireMessages/3600").status == 204
    assert _backlog(rest, "cur", "s") == 5  # nothing is an hour old
    assert rest.post(f"{BASE}/cur/subscription/s/expireMessages/0").status == 204
    assert _backlog(rest, "cur", "s") == 0


def test_reset_cursor_by_time_and_by_message_id(rest, client, broker):
    assert rest.put(f"{BASE}/reset").status == 204
    assert rest.put(f"{BASE}/reset/subscription/s").status == 204  # at latest
    ids = _fill(client, "reset", 4)
    assert _backlog(rest, "reset", "s") == 4
    third = {"ledgerId": ids[2].ledger_id(), "entryId": ids[2].entry_id(),
             "partitionIndex": -1, "batchIndex": -1, "isExcluded": False}
    assert rest.post(f"{BASE}/reset/subscription/s/resetcursor", third).status == 204
    assert _backlog(rest, "reset", "s") == 2
    assert rest.post(f"{BASE}/reset/subscription/s/resetcursor",
                     dict(third, isExcluded=True)).status == 204
    assert _backlog(rest, "reset", "s") == 1
    with Admin(broker.web_url) as admin:
        publish_time = admin.topics.peek_messages("reset", "s")[0]["metadata"]["publish_time"]
    assert rest.post(f"{BASE}/reset/subscription/s/resetcursor/{2**62}").status == 204
    assert _backlog(rest, "reset", "s") == 0
    assert rest.post(f"{BASE}/reset/subscription/s/resetcursor/{publish_time}").status == 204
    assert _backlog(rest, "reset", "s") >= 1
    bad = rest.post(f"{BASE}/reset/subscription/s/resetcursor", {"ledgerId": "x"})
    assert bad.status == 400


def test_peek_returns_the_raw_payload_with_metadata_headers(rest, client):
    topic = "persistent://public/default/peeked"
    assert rest.put(f"{BASE}/peeked/subscription/s").status == 204
    producer = client.create_producer(topic, producer_name="p1",
                                      compression_type=CompressionType.ZLib)
    first = producer.send(b"hello " * 20, properties={"k": "v", "trace": "ü"},
                          partition_key="key-1", event_timestamp=1_700_000_000_000)
    producer.send(b"second")
    producer.close()
    answer = rest.get(f"{BASE}/peeked/subscription/s/position/1")
    assert answer.status == 200 and answer.body == b"hello " * 20
    h = answer.headers
    assert h["Content-Type"] == "application/octet-stream"
    assert h["X-Pulsar-Message-ID"] == f"{first.ledger_id()}:{first.entry_id()}"
    assert json.loads(h["X-Pulsar-PROPERTY"]) == {"k": "v", "trace": "ü"}
    assert h["X-Pulsar-PROPERTY-k"] == "v"
    assert h["X-Pulsar-producer-name"] == "p1" and h["X-Pulsar-sequence-id"] == "0"
    assert h["X-Pulsar-partition-key"] == "key-1"
    assert h["X-Pulsar-event-time"] == "2023-11-14T22:13:20.000Z"
    assert h["X-Pulsar-publish-time"].endswith("Z")
    assert h["X-Pulsar-compression"] == "ZLIB" and h["X-Pulsar-uncompressed-size"] == "120"
    assert h["X-Pulsar-Is-Encrypted"] == "false"
    # Pulsar's spelling on the wire: the Java admin client matches X-Pulsar-PROPERTY-<key>
    # case-sensitively.
    assert {"X-Pulsar-Message-ID", "X-Pulsar-PROPERTY-k", "X-Pulsar-publish-time"} <= set(
        h.keys()
    )
    assert rest.get(f"{BASE}/peeked/subscription/s/position/2").body == b"second"
    missing = rest.get(f"{BASE}/peeked/subscription/s/position/3")
    assert missing.status == 404 and "message not found" in missing.reason
    assert rest.get(f"{BASE}/peeked/subscription/s/position/0").status == 412
    # Pulsar's peek creates a subscription that does not exist, at the earliest message
    # (tests/conformance/test_rest_paths.py saw it on 3.3 and 4.0)
    assert rest.get(f"{BASE}/peeked/subscription/new/position/1").body == b"hello " * 20
    assert rest.get(f"{BASE}/peeked/subscriptions").json == ["new", "s"]
    assert rest.get(f"{BASE}/never-peeked/subscription/new/position/1").status == 404
    assert rest.put(f"{BASE}/parted/partitions", 2).status == 204
    assert rest.put(f"{BASE}/parted/subscription/s").status == 204
    assert rest.get(f"{BASE}/parted/subscription/s/position/1").status == 405


def test_examine_message(rest, client):
    ids = _fill(client, "examined", 3)
    first = rest.get(f"{BASE}/examined/examinemessage?initialPosition=earliest&messagePosition=1")
    assert first.status == 200 and first.body == b"m0"
    assert first.headers["X-Pulsar-Message-ID"] == f"{ids[0].ledger_id()}:{ids[0].entry_id()}"
    latest = rest.get(f"{BASE}/examined/examinemessage")
    assert latest.body == b"m2"
    assert rest.get(f"{BASE}/examined/examinemessage?messagePosition=2").body == b"m1"
    assert rest.get(f"{BASE}/examined/examinemessage?initialPosition=middle").status == 412
    assert rest.get(f"{BASE}/ghost/examinemessage").status == 404
    assert rest.put(f"{BASE}/empty").status == 204
    assert rest.get(f"{BASE}/empty/examinemessage").status == 412


def test_expire_on_all_subscriptions(rest, client):
    """``pulsar-admin topics expire-messages-all-subscriptions``: every subscription."""
    assert rest.put(f"{BASE}/expall").status == 204
    for sub in ("a", "b"):
        assert rest.put(f"{BASE}/expall/subscription/{sub}",
                        {"ledgerId": -1, "entryId": -1}).status == 204
    _fill(client, "expall", 4)
    assert rest.post(f"{BASE}/expall/all_subscription/expireMessages/3600").status == 204
    assert [_backlog(rest, "expall", s) for s in "ab"] == [4, 4]  # nothing is an hour old
    assert rest.post(f"{BASE}/expall/all_subscription/expireMessages/0").status == 204
    assert [_backlog(rest, "expall", s) for s in "ab"] == [0, 0]
    assert rest.post(f"{BASE}/expall/all_subscription/expireMessages/x").status == 400
    assert rest.post(f"{BASE}/nope-expall/all_subscription/expireMessages/1").status == 404
