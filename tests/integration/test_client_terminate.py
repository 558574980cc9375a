"""A terminated topic end to end over ZeroMQ: pulsarlab's client, Admin and CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pulsarlab import Admin
from pulsarlab.broker.client import MessageId, TopicTerminated

from .client_support import receive_n, unique


def test_sends_fail_and_late_consumers_see_the_end(broker, client):
    topic = f"persistent://public/default/{unique('ended')}"
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic, batching_enabled=False)
    last = [producer.send(f"m{i}".encode()) for i in range(2)][-1]
    with Admin(broker.web_url) as admin:
        end = admin.topics.terminate_topic(topic)
    assert (end["ledgerId"], end["entryId"]) == (last.ledger_id(), last.entry_id())
    with pytest.raises(TopicTerminated):
        producer.send(b"too late")  # CLOSE_PRODUCER "terminated" is read before its answer
    with pytest.raises(TopicTerminated):
        producer.send(b"and later")
    with pytest.raises(TopicTerminated):
        client.create_producer(topic)
    assert [m.data() for m in receive_n(consumer, 2)] == [b"m0", b"m1"]
    late = client.subscribe(topic, "late")
    late.get_last_message_id()  # a round trip on the connection: the end notice came first
    assert late.has_reached_end_of_topic()
    reader = client.create_reader(topic, MessageId.latest)
    reader.has_message_available()
    assert reader.has_reached_end_of_topic()
    producer.close()  # closing a producer the broker closed is quiet


def test_cli_terminates_a_topic(broker):
    topic = unique("cli-ended")
    with Admin(broker.web_url) as admin:
        admin.topics.create_non_partitioned_topic(topic)
    result = subprocess.run(
        [sys.executable, "-m", "pulsarlab.broker.cli", "admin", "topics", "terminate", topic,
         "--admin-url", broker.web_url],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["entryId"] == -1
