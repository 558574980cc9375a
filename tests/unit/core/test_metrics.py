"""The broker's Prometheus samples (``broker/metrics.py``): Pulsar's names, labels, the
broker default sample and the consumer-level switch, gathered from the core alone."""

from __future__ import annotations

from pulsarlab.broker import SubType
from pulsarlab.broker.metrics import collect

T = "persistent://public/default/metered"
TOPIC = {"cluster": "c1", "namespace": "public/default", "topic": T}


def test_topic_subscription_and_consumer_samples(harness):
    h = harness
    c = h.subscribe(T, "s", "reader", SubType.Shared, permits=5)
    h.publish(T, 3, batch=2)  # three entries of two messages
    samples = collect(h.service, "c1")
    assert samples["pulsar_in_messages_total"] == [(TOPIC, 6)]
    assert samples["pulsar_rate_in"][0] == ({"cluster": "c1"}, 0.0)  # the broker default
    assert ({**TOPIC, "subscription": "s"}, 6.0) in samples["pulsar_out_messages_total"]
    consumer = {**TOPIC, "subscription": "s", "consumer_name": "reader",
                "consumer_id": str(c.consumer_id)}
    assert samples["pulsar_consumer_unacked_messages"] == [(consumer, 6.0)]
    assert samples["pulsar_consumer_available_permits"] == [(consumer, -1.0)]
    namespace = {"cluster": "c1", "namespace": "public/default"}
    assert samples["pulsar_topics_count"] == [(namespace, 1.0)]


def test_consumer_samples_follow_the_setting(make_harness):
    h = make_harness(expose_consumer_level_metrics_in_prometheus=False)
    h.subscribe(T, "s", "reader", SubType.Shared, permits=5)
    samples = collect(h.service, "c1")
    assert not any(name.startswith("pulsar_consumer_") for name in samples)
    assert all("consumer_id" not in labels for labels, _ in samples["pulsar_out_messages_total"])
    assert "pulsar_subscription_back_log" in samples
