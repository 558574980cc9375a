"""RedeliveryTimeline: retry and dead-letter hops land on the original message's lane.

The client publishes those hops to other topics; the broker's ``retried`` and
``dead_lettered`` events carry ``real_topic`` and ``origin_message_id`` (from the message's
properties), which is how a timeline of the original topic finds the lane.
"""

from __future__ import annotations

import msgpack

from pulsarlab.widgets import LiveBinding, TimelineModel
from pulsarlab.widgets.source import decode
from pulsarlab.widgets.timeline import origin_position

NS = "persistent://public/default/"
TOPIC = NS + "orders"


def _maps(origin_id: str) -> list[dict]:
    return [
        {"type": "published", "time": 1000, "topic": TOPIC, "position": [0, 1]},
        {"type": "dispatched", "time": 1001, "topic": TOPIC, "subscription": "billing",
         "consumer": "w1", "entries": [[0, 1, 0]]},
        {"type": "retried", "time": 1100, "topic": TOPIC + "-billing-RETRY", "position": [3, 0],
         "origin_message_id": origin_id, "real_topic": TOPIC, "reconsume_times": "1"},
        {"type": "acked", "time": 1101, "topic": TOPIC, "subscription": "billing",
         "consumer": "w1", "positions": [[0, 1]]},
        {"type": "dead_lettered", "time": 1200, "topic": TOPIC + "-billing-DLQ",
         "position": [4, 0], "origin_message_id": origin_id, "real_topic": TOPIC},
    ]


def _events(origin_id: str) -> list:
    return [decode(values) for values in _maps(origin_id)]


def test_hops_are_drawn_on_the_original_lane():
    model = TimelineModel("billing", TOPIC)
    assert model.ingest(_events("(0,1,-1,-1)")) == 5
    assert model.lane_positions == [(0, 1)]
    assert [(m.time_ms, m.kind) for m in model.lane((0, 1))] == [
        (1000, "published"), (1001, "dispatched"), (1100, "retried"), (1101, "acked"),
        (1200, "dead_lettered"),
    ]


def test_java_style_origin_ids_are_understood():
    model = TimelineModel("billing", TOPIC)
    model.ingest(_events("0:1:-1"))
    assert model.lane_positions == [(0, 1)]


def test_hops_of_another_topic_keep_their_own_position():
    """A timeline of the retry topic (or without a topic) does not remap."""
    event = _events("(0,1,-1,-1)")[2]
    assert origin_position(event, None) is None
    assert origin_position(event, NS + "elsewhere") is None
    assert origin_position(decode({**event.to_dict(), "origin_message_id": "garbage"}),
                           TOPIC) is None
    model = TimelineModel("billing")
    model.ingest([event])
    assert model.lane_positions == [(3, 0)]


def _frames(event: dict) -> list[bytes]:
    return [event["type"].encode(), msgpack.packb(event, use_bin_type=True)]


def test_live_binding_keeps_hops_that_name_its_topic():
    binding = LiveBinding("zmq://127.0.0.1:1", "tcp://127.0.0.1:2", "orders", "billing",
                          admin=object())
    hop, foreign = _maps("(0,1,-1,-1)")[4], _maps("(0,1,-1,-1)")[4]
    foreign = {**foreign, "real_topic": NS + "payments"}
    assert binding.ingest(_frames(hop))
    assert not binding.ingest(_frames(foreign))
    assert not binding.ingest(_frames({"type": "published", "time": 1,
                                       "topic": TOPIC + "-billing-DLQ", "position": [4, 0]}))
    assert len(binding.events) == 1
