"""Every view reads typed events, and an event type it does not know changes nothing."""

from __future__ import annotations

import msgpack
import pytest

from pulsarlab.broker.client.events import Nacked, RedeliveryScheduled
from pulsarlab.broker.events import BrokerEvent, DeadLettered, Expired, UnknownEvent
from pulsarlab.widgets import VIEWS, LiveBinding, TimelineModel, WhatIf
from pulsarlab.widgets.source import decode, decode_message


def _scenario(view_class: type) -> WhatIf:
    whatif = WhatIf("Failover" if view_class is VIEWS["failover"] else "Key_Shared")
    whatif.add_consumer("C1")
    whatif.add_consumer("C2")
    whatif.publish(["a", "b", "c"])
    whatif.receive("C1")
    whatif.nack("C1")
    whatif.advance(100)
    whatif.receive("C2")
    whatif.ack("C2")
    return whatif


def _newer_broker_events(whatif: WhatIf) -> list[BrokerEvent]:
    """What a newer broker might send: types this version lacks, a map that does not fit."""
    common = {"time": whatif.now_ms(), "topic": whatif.topic,
              "subscription": whatif.subscription, "consumer": "C1"}
    return [
        decode({"type": "poisoned", **common, "positions": [[0, 0]]}),
        decode({"type": "future_switch", **common, "previous": "C1", "active": "C9"}),
        decode({**common, "type": "dispatched", "time": "later", "entries": [[0, 0, 0]]}),
    ]


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_each_view_gets_typed_events_and_passes_over_unknown_ones(name, monkeypatch):
    seen: list[object] = []
    for cls in {*VIEWS.values()}:
        original = cls._update

        def spy(self, snapshot, events, _original=original):
            seen.extend(events)
            return _original(self, snapshot, events)

        monkeypatch.setattr(cls, "_update", spy)
    plain, fed = _scenario(VIEWS[name]), _scenario(VIEWS[name])
    views = {"plain": VIEWS[name](plain), "fed": VIEWS[name](fed)}
    for event in _newer_broker_events(fed):
        assert isinstance(event, UnknownEvent)
        fed.events.append(event)
    views["fed"].refresh()
    views["plain"].refresh()
    assert seen and all(isinstance(e, BrokerEvent) for e in seen)
    assert any(isinstance(e, UnknownEvent) for e in seen)
    assert views["fed"].summary() == views["plain"].summary()


def test_an_expired_event_counts_entries_and_draws_no_lane():
    """``expired``'s ``entries`` is a count (a dispatch's is a list): only a dispatch's are
    read as lanes."""
    model = TimelineModel("s")
    assert model.ingest([Expired(time_ms=1, topic="t", subscription="s", up_to=[0, 4],
                                 entries=5, ttl_seconds=60)]) == 0
    assert model.lane_positions == []


def test_client_kinds_draw_with_their_fields():
    model = TimelineModel("s")
    model.ingest([
        Nacked(time_ms=1, topic="t", subscription="s", consumer="C1", positions=[[0, 1]]),
        RedeliveryScheduled(time_ms=1, topic="t", subscription="s", consumer="C1",
                            positions=[[0, 1]], redelivery_count=2, deliver_at=61),
    ])
    assert [(m.kind, m.redelivery_count) for m in model.lane((0, 1))] == [
        ("nacked", -1), ("scheduled_redelivery", 2)]


def test_the_live_stream_is_decoded_once_into_typed_events():
    topic = "persistent://public/default/orders"
    hop = {"type": "dead_lettered", "time": 5, "topic": topic + "-s-DLQ", "position": [4, 0],
           "origin_message_id": "(0,1,-1,-1)", "real_topic": topic}
    newer = {"type": "poisoned", "time": 6, "topic": topic, "position": [0, 1]}
    binding = LiveBinding("zmq://127.0.0.1:1", "tcp://127.0.0.1:2", "orders", "s",
                          admin=object())
    for values in (hop, newer):
        assert binding.ingest([values["type"].encode(), msgpack.packb(values)])
    events, _ = binding.events.since(0)
    assert isinstance(events[0], DeadLettered) and events[0].origin_message_id == "(0,1,-1,-1)"
    assert isinstance(events[1], UnknownEvent) and events[1].event_type == "poisoned"


@pytest.mark.parametrize(("frames", "problem"), [
    ([b"published"], "2 frames, not 1"),
    ([b"published", b"\xc1"], "not msgpack"),
    ([b"published", msgpack.packb([1, 2])], "holds a list, not a map"),
])
def test_a_bad_stream_message_is_named_in_one_line(frames, problem):
    with pytest.raises(ValueError, match=problem):
        decode_message(frames)
