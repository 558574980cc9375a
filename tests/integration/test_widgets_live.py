"""Live widgets follow a real broker: events over its XPUB stream, stats over its admin API.

A raw Pulsar-frame peer over ZeroMQ subscribes, publishes and acks; the views, fed by one
LiveBinding thread, must show it within a bounded wait (polled with a deadline, never a
fixed sleep).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from pulsarlab import Broker
from pulsarlab.widgets import (
    CursorView,
    Dashboard,
    HashRangeView,
    LiveBinding,
    RedeliveryTimeline,
)

from .zmq_pulsar.dealer import PulsarDealer, T, api, command, send_frame

DEADLINE_S = 20.0


def wait_for(condition: Callable[[], bool], what: str, nudge: Callable[[], None] | None = None):
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"live view did not show {what} within {DEADLINE_S} s")
        if nudge is not None:
            nudge()
        time.sleep(0.02)  # polling interval, not a timing assumption


@pytest.fixture
def broker():
    with Broker(storage="memory", key_shared_use_consistent_hashing=False) as b:
        yield b


def test_live_views_follow_consumers_messages_and_acks(broker):
    topic = "live-widgets"
    client = PulsarDealer(broker.service_url)
    client.connect()
    client.subscribe(topic, "ks", consumer_id=1, consumer_name="C1",
                     sub_type=api.CommandSubscribe.Key_Shared, permits=0)
    with LiveBinding(broker.service_url, broker.events_url, topic, "ks") as binding:
        ranges = HashRangeView(binding, ["Order-3459134"])
        timeline = RedeliveryTimeline(binding)
        cursor = CursorView(binding)
        dashboard = Dashboard(binding)
        wait_for(lambda: ranges.ranges == {"C1": [(0, 65536)]}, "the first consumer's range")
        assert binding.running
        wait_for(lambda: bool(dashboard.views), "the dashboard's tabs")
        assert list(dashboard.views) == ["hash ranges", "hash ring", "flow", "cursor", "timeline"]

        client.subscribe(topic, "ks", consumer_id=2, consumer_name="C2",
                         sub_type=api.CommandSubscribe.Key_Shared, permits=0)
        wait_for(lambda: ranges.ranges == {"C2": [(0, 32768)], "C1": [(32769, 65536)]},
                 "the split after C2 joined")
        assert ranges.key_owners == {"Order-3459134": "C2"}

        client.producer(topic)
        sent = {"seq": 0}

        def publish() -> None:
            # Events published before the SUB socket joined are lost: keep publishing.
            client.send(send_frame(1, sent["seq"], b"m", partition_key="Order-3459134"))
            sent["seq"] += 1

        wait_for(lambda: timeline.summary()["by_kind"].get("published", 0) > 0,
                 "a published message on the timeline", nudge=publish)
        client.send(command(T.FLOW, "flow", consumer_id=2, messagePermits=1000))
        wait_for(lambda: timeline.summary()["by_kind"].get("dispatched", 0) > 0,
                 "a dispatch to C2 on the timeline")
        first = timeline.model.lane_positions[0]
        assert any(m.kind == "dispatched" and m.consumer == "C2" for m in timeline.lane(first))

        client.send(command(T.ACK, "ack", consumer_id=2, ack_type=api.CommandAck.Individual,
                            message_id=[api.MessageIdData(ledgerId=first[0], entryId=first[1])],
                            request_id=client.request_id()))
        wait_for(lambda: any(m.kind == "acked" for m in timeline.lane(first)),
                 "the ack on the timeline")
        wait_for(lambda: cursor.summary()["mark_delete"] == "{}:{}".format(*first)
                 or cursor.summary()["holes"] >= 1, "the ack on the cursor strip")
    assert not binding.running
