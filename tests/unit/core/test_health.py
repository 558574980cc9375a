"""``brokers/health`` on the core: a heartbeat message must reach a reader; the check
leaves no producer, reader or old subscription behind."""

from __future__ import annotations

import pytest

from pulsarlab.broker import SubType
from pulsarlab.broker.health import HealthCheckFailed, heartbeat_topic, run_health_check

TOPIC = heartbeat_topic("127.0.0.1:8080")


def test_health_check_publishes_and_reads_back(make_harness):
    h = make_harness(allow_auto_topic_creation=False)  # the check creates its topic anyway
    run_health_check(h.service, TOPIC)
    h.subscribe(TOPIC, "left-over", "old", SubType.Exclusive)  # deleted by the next check
    run_health_check(h.service, TOPIC)
    stats = h.service.topic_stats(TOPIC)
    assert TOPIC == "persistent://pulsar/127.0.0.1:8080/healthcheck"
    assert stats["msgInCounter"] == 2 and stats["msgOutCounter"] == 2
    assert stats["publishers"] == [] and stats["subscriptions"] == {}
    assert not h.service.consumers and not h.service.producers


def test_health_check_fails_when_the_reader_gets_nothing(harness, monkeypatch):
    monkeypatch.setattr(harness.service, "flow", lambda consumer_id, permits: None)
    with pytest.raises(HealthCheckFailed, match="did not reach its reader"):
        run_health_check(harness.service, TOPIC)
    assert not harness.service.consumers and not harness.service.producers
