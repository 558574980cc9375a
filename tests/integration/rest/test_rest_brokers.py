"""The REST resources tools call beside ``/admin/v2`` topics: ``brokers/*``,
``broker-stats/topics``, ``lookup/v2/topic``, and the "not enabled" answers of Functions,
IO connectors and packages."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from pulsarlab import Broker, Client

from .conftest import Rest

TOPIC = "persistent://public/default/polled"


def test_active_brokers_and_leader(broker, rest):
    me = urlsplit(broker.web_url).netloc
    assert rest.get("/admin/v2/brokers").json == [me]
    assert rest.get("/admin/v2/brokers/standalone").json == [me]
    unknown = rest.get("/admin/v2/brokers/elsewhere")
    assert unknown.status == 404 and "elsewhere" in unknown.reason
    assert rest.get("/admin/v2/brokers/leaderBroker").json == {
        "serviceUrl": broker.web_url, "brokerId": me,
    }


def test_health_ready_and_version(broker, rest):
    health = rest.get("/admin/v2/brokers/health")
    assert (health.status, health.body) == (200, b"ok")
    assert rest.get("/admin/v2/brokers/health?topicVersion=V2").body == b"ok"
    assert rest.get("/admin/v2/brokers/health?topicVersion=V9").status == 400
    me = urlsplit(broker.web_url).netloc
    heartbeat = rest.get(f"/admin/v2/persistent/pulsar/{me}/healthcheck/stats").json
    assert heartbeat["msgInCounter"] == heartbeat["msgOutCounter"] == 2  # one per check
    assert heartbeat["subscriptions"] == {} and heartbeat["publishers"] == []
    assert rest.get("/admin/v2/brokers/ready").body == b"ok"
    assert rest.get("/admin/v2/brokers/version").body.decode() == broker.settings.pulsar_version


def test_configuration(rest):
    assert rest.get("/admin/v2/brokers/configuration").json == []
    assert rest.get("/admin/v2/brokers/configuration/values").json == {}
    runtime = rest.get("/admin/v2/brokers/configuration/runtime").json
    assert runtime["maxMessageSize"] == str(5 * 1024 * 1024)
    assert runtime["allowAutoTopicCreation"] == "true"
    assert runtime["statsUpdateFrequencyInSecs"] == "60"
    assert not [name for name in runtime if "ecret" in name]
    refused = rest.post("/admin/v2/brokers/configuration/maxMessageSize/10")
    assert refused.status == 412 and "non-dynamic" in refused.reason
    assert rest.delete("/admin/v2/brokers/configuration/maxMessageSize").status == 412


def test_broker_stats_topics_as_pulsar_manager_reads_them(broker, rest):
    with Client(broker.service_url, operation_timeout_seconds=10) as client:
        consumer = client.subscribe(TOPIC, "manager-sub", consumer_name="c")
        producer = client.create_producer(TOPIC)
        producer.send(b"one")
        consumer.acknowledge(consumer.receive(timeout_millis=5000))
        document = rest.get("/admin/v2/broker-stats/topics").json
        producer.close()
        consumer.close()
    topic = document["public/default"]["0x00000000_0xffffffff"]["persistent"][TOPIC]
    assert topic["msgInCount"] == 1 and topic["msgOutCount"] == 1
    assert topic["producerCount"] == 1 and topic["storageSize"] > 0
    assert {"msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut",
            "averageMsgSize", "backlogSize", "bytesInCount", "bytesOutCount"} <= set(topic)
    sub = topic["subscriptions"]["manager-sub"]
    assert sub["type"] == "Exclusive" and sub["msgBacklog"] in (0, 1)  # acks are grouped
    assert sub["consumers"][0]["consumerName"] == "c"
    assert isinstance(sub["consumers"][0]["connectedSince"], str)


def test_http_topic_lookup(broker, rest):
    assert rest.put("/admin/v2/persistent/public/default/looked-up").status == 204
    data = rest.get("/lookup/v2/topic/persistent/public/default/looked-up").json
    assert data == {"brokerUrl": broker.pulsar_url, "brokerUrlTls": None,
                    "httpUrl": broker.web_url, "httpUrlTls": None,
                    "nativeUrl": broker.pulsar_url, "brokerUrlSsl": ""}
    assert rest.get("/lookup/v2/topic/persistent/public/default/auto-created").status == 200


def test_lookup_of_a_missing_topic_without_auto_creation():
    with Broker(storage="memory", allow_auto_topic_creation=False) as broker:
        rest = Rest(broker.web_url)
        missing = rest.get("/lookup/v2/topic/persistent/public/default/nothing-here")
        assert missing.status == 404 and missing.reason == "Topic not found"
        assert rest.put("/admin/v2/persistent/public/default/p/partitions", 2).status == 204
        assert rest.get("/lookup/v2/topic/persistent/public/default/p").status == 200


@pytest.mark.parametrize("method", ["get", "post", "delete"])
@pytest.mark.parametrize("path", [
    "/admin/v3/functions/public/default",
    "/admin/v3/functions/public/default/fn/status",
    "/admin/v3/sources/public/default/src",
    "/admin/v3/sinks/public/default",
    "/admin/v2/worker/cluster",
])
def test_functions_and_connectors_are_not_enabled(rest, method, path):
    answer = getattr(rest, method)(path)
    assert answer.status == 409
    assert answer.reason == (
        "Pulsar Function Worker is not enabled, probably functionsWorkerEnabled is set to false"
    )


def test_packages_are_not_enabled(rest):
    answer = rest.get("/admin/v3/packages/function/public/default")
    assert answer.status == 503
    assert answer.reason == "Package Management Service is not enabled in the broker."


def test_broker_resources_are_for_superusers():
    with Broker(storage="memory", authentication_enabled=True, authorization_enabled=True,
                super_user_roles="admin") as secured:
        admin = Rest(secured.web_url, secured.create_token("admin"))
        viewer = Rest(secured.web_url, secured.create_token("viewer"))
        assert admin.get("/admin/v2/brokers/health").body == b"ok"
        assert admin.get("/admin/v2/broker-stats/topics").status == 200
        for path in ("/admin/v2/brokers/health", "/admin/v2/brokers/standalone",
                     "/admin/v2/broker-stats/topics", "/admin/v2/brokers/configuration/runtime"):
            assert viewer.get(path).status == 403, path
        assert Rest(secured.web_url).get("/admin/v2/brokers/health").status == 401
        assert Rest(secured.web_url).get("/admin/v2/brokers/ready").status == 200
        lookup = "/lookup/v2/topic/persistent/public/default/guarded"
        assert viewer.get(lookup).status == 403
        assert admin.post("/admin/v2/namespaces/public/default/permissions/viewer",
                          ["consume"]).status == 204
        assert viewer.get(lookup).status == 200
