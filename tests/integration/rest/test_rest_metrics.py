"""``/metrics``: Pulsar's metric names and labels, read back by ``prometheus_client``'s
parser, and ``authenticate_metrics_endpoint`` with authentication on."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pulsarlab import Broker, Client, ConsumerType

from ..zmq_pulsar.dealer import wait_until
from .conftest import Rest

TOPIC = "persistent://public/default/scraped"


def _families(answer) -> dict:
    assert answer.status == 200, answer.body
    return {f.name: f for f in text_string_to_metric_families(answer.body.decode())}


def _value(families: dict, name: str, **labels: str) -> float:
    (value,) = [
        s.value for s in families[name].samples
        if s.name == name and s.labels == labels
    ]
    return value


@pytest.fixture(scope="module")
def traffic(broker):
    """Three messages sent, two received (one acknowledged) on a Shared subscription."""
    with Client(broker.service_url, operation_timeout_seconds=10) as client:
        consumer = client.subscribe(TOPIC, "sub", consumer_type=ConsumerType.Shared,
                                    consumer_name="reader", receiver_queue_size=2)
        producer = client.create_producer(TOPIC, batching_enabled=False)
        for i in range(3):
            producer.send(f"m{i}".encode())
        first = consumer.receive(timeout_millis=5000)
        consumer.receive(timeout_millis=5000)
        consumer.acknowledge(first)

        def out_counter(service) -> int:
            return service.topic_stats(TOPIC)["subscriptions"]["sub"]["msgOutCounter"]

        # The third goes out once the client's permit refill (FLOW) reaches the broker.
        wait_until(lambda: broker.submit(out_counter).result(10) == 3,
                   "the third message to be dispatched")
        broker.submit(lambda service: service.update_rates()).result(10)
        yield consumer
        consumer.close()
        producer.close()


def test_metrics_have_pulsars_names_and_labels(rest, traffic):
    answer = rest.get("/metrics")
    assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    families = _families(answer)
    topic = {"cluster": "standalone", "namespace": "public/default", "topic": TOPIC}
    sub = {**topic, "subscription": "sub"}
    assert _value(families, "pulsar_in_messages_total", **topic) == 3
    assert _value(families, "pulsar_producers_count", **topic) == 1
    assert _value(families, "pulsar_consumers_count", **topic) == 1
    assert _value(families, "pulsar_msg_backlog", **topic) >= 2
    assert _value(families, "pulsar_storage_size", **topic) > 0
    assert _value(families, "pulsar_rate_in", **topic) > 0  # an interval closed after sends
    assert _value(families, "pulsar_rate_in", cluster="standalone") == 0  # broker default
    assert _value(families, "pulsar_subscription_back_log", **sub) >= 2
    assert _value(families, "pulsar_subscription_msg_rate_out", **sub) > 0
    assert _value(families, "pulsar_subscription_blocked_on_unacked_messages", **sub) == 0
    assert _value(families, "pulsar_out_messages_total", **sub) == 3
    (consumer_id,) = {
        s.labels["consumer_id"] for s in families["pulsar_consumer_available_permits"].samples
        if s.labels.get("topic") == TOPIC
    }
    consumer = {**sub, "consumer_name": "reader", "consumer_id": consumer_id}
    assert _value(families, "pulsar_consumer_unacked_messages", **consumer) >= 1
    assert _value(families, "pulsar_consumer_available_permits", **consumer) >= 0
    assert _value(families, "pulsar_topics_count", cluster="standalone",
                  namespace="public/default") >= 1
    assert all(f.type == "gauge" for f in families.values())  # Pulsar types them all gauge


def test_metrics_with_a_trailing_slash(rest, traffic):
    assert "pulsar_in_messages_total" in _families(rest.get("/metrics/"))


def test_namespace_level_metrics_when_topic_level_is_off():
    with (
        Broker(storage="memory", expose_topic_level_metrics_in_prometheus=False) as broker,
        Client(broker.service_url, operation_timeout_seconds=10) as client,
    ):
        client.create_producer(TOPIC).send(b"x")
        families = _families(Rest(broker.web_url).get("/metrics"))
    namespace = {"cluster": "standalone", "namespace": "public/default"}
    assert _value(families, "pulsar_in_messages_total", **namespace) == 1
    assert not [s for f in families.values() for s in f.samples if "topic" in s.labels]


def test_metrics_need_a_token_only_with_authenticate_metrics_endpoint():
    with Broker(storage="memory", authentication_enabled=True) as open_metrics:
        assert Rest(open_metrics.web_url).get("/metrics").status == 200
    with Broker(storage="memory", authentication_enabled=True,
                authenticate_metrics_endpoint=True) as guarded:
        refused = Rest(guarded.web_url).get("/metrics")
        assert refused.status == 401 and "Bearer" in refused.reason
        token = guarded.create_token("prometheus")
        assert Rest(guarded.web_url, token).get("/metrics").status == 200
