"""RedeliveryTimeline: exact event sequences, cumulative acks, client kinds, 10k messages."""

from __future__ import annotations

import numpy as np

from pulsarlab.broker.events import RedeliveryRequested, Retried
from pulsarlab.widgets import MarkKind, RedeliveryTimeline, TimelineModel, WhatIf, register_kind
from pulsarlab.widgets.source import decode
from pulsarlab.widgets.timeline import KINDS, Mark


def _rel(whatif, marks):
    return [(m.time_ms - whatif.start_ms, m.kind, m.consumer, m.redelivery_count) for m in marks]


def test_dispatched_redelivered_then_acked_has_the_exact_sequence_and_times():
    whatif = WhatIf("Shared")
    view = RedeliveryTimeline(whatif)
    whatif.add_consumer("C1")
    [position] = whatif.publish("k")
    whatif.advance(1000)
    whatif.receive("C1")
    whatif.nack("C1")  # redeliver_unacknowledged for that message
    whatif.advance(500)
    whatif.receive("C1")
    whatif.ack("C1")
    assert _rel(whatif, view.lane(position)) == [
        (0, "published", None, -1),
        (0, "dispatched", "C1", 0),
        (1000, "redelivery_requested", "C1", -1),
        (1000, "dispatched", "C1", 1),
        (1500, "acked", "C1", -1),
    ]
    # Figure: one mark per event, in seconds since start, lane 0.
    by_name = {t.name: t for t in view.fig.data}
    assert list(by_name["dispatched"].x) == [0.0, 1.0]
    assert list(by_name["acked"].x) == [1.5]
    # the request and the redelivery share t = 1.0 s: side by side across lane 0, not stacked
    [requested_y] = by_name["redelivery requested"].y
    redelivered_y = by_name["dispatched"].y[1]
    assert round(requested_y) == round(redelivered_y) == 0
    assert requested_y < redelivered_y
    assert [list(row) for row in by_name["dispatched"].customdata] == [
        [position[0], position[1], 0, "C1"], [position[0], position[1], 1, "C1"]
    ]
    assert list(by_name["dispatched"].text) == ["", "↻1"]  # the count printed on the marker
    # Segments: in flight from each dispatch, waiting after the redelivery request.
    in_flight = by_name["in flight"]
    assert list(in_flight.x[:2]) == [0.0, 1.0] and list(in_flight.x[3:5]) == [1.0, 1.5]
    waiting = by_name["waiting"]
    assert list(waiting.x[:2]) == [1.0, 1.0]
    assert view.fig.layout.yaxis.ticktext == ("{}:{}".format(*position),)


def test_redelivered_twice_counts_up_and_goes_to_the_owner_of_the_moment():
    whatif = WhatIf("Shared")
    view = RedeliveryTimeline(whatif, lanes="consumer")
    whatif.add_consumer("C1")
    [position] = whatif.publish("k")
    for _ in range(2):
        whatif.advance(100)
        whatif.receive("C1")
        whatif.nack("C1")
    marks = view.lane(position)
    assert [m.redelivery_count for m in marks if m.kind == "dispatched"] == [0, 1, 2]
    assert view.summary()["max_redelivery_count"] == 2
    assert view.fig.layout.yaxis.ticktext == ("—", "C1")


def test_cumulative_ack_closes_every_lane_up_to_it():
    whatif = WhatIf("Exclusive")
    view = RedeliveryTimeline(whatif)
    whatif.add_consumer("A")
    positions = whatif.publish(count=3)
    whatif.receive("A")
    whatif.ack_cumulative("A", positions[1])
    assert [m.kind for m in view.lane(positions[0])][-1] == "acked"
    assert [m.kind for m in view.lane(positions[1])][-1] == "acked"
    assert [m.kind for m in view.lane(positions[2])][-1] == "dispatched"


def test_client_kinds_are_marks_and_unknown_types_are_passed_over():
    """Nacks, back-off, DLQ: every known kind naming entries becomes a mark of its kind; a
    type a newer broker added (``poisoned`` here) decodes to ``UnknownEvent``, drawn not."""
    model = TimelineModel("s")
    t0 = 1_000_000
    events = [
        {"type": "published", "time": t0, "topic": "t", "position": [5, 0]},
        {"type": "dispatched", "time": t0, "topic": "t", "subscription": "s", "consumer": "C1",
         "entries": [[5, 0, 0]]},
        {"type": "nacked", "time": t0 + 100, "topic": "t", "subscription": "s",
         "consumer": "C1", "positions": [[5, 0]]},
        {"type": "scheduled_redelivery", "time": t0 + 100, "topic": "t", "subscription": "s",
         "consumer": "C1", "positions": [[5, 0]], "redelivery_count": 1},
        {"type": "dispatched", "time": t0 + 60_100, "topic": "t", "subscription": "s",
         "consumer": "C2", "entries": [[5, 0, 1]]},
        {"type": "dead_lettered", "time": t0 + 60_200, "topic": "t", "subscription": "s",
         "consumer": "C2", "position": [5, 0], "dlq": "t-s-DLQ"},
        {"type": "poisoned", "time": t0 + 60_300, "topic": "t", "subscription": "s",
         "position": [5, 0]},
        {"type": "dispatched", "time": t0, "topic": "t", "subscription": "other",
         "consumer": "X", "entries": [[5, 0, 0]]},
    ]
    assert model.ingest(decode(e) for e in events) == 6
    assert [(m.time_ms - t0, m.kind, m.consumer, m.redelivery_count)
            for m in model.lane((5, 0))] == [
        (0, "published", None, -1),
        (0, "dispatched", "C1", 0),
        (100, "nacked", "C1", -1),
        (100, "scheduled_redelivery", "C1", 1),
        (60_100, "dispatched", "C2", 1),
        (60_200, "dead_lettered", "C2", -1),
    ]
    segments = model.segments(model.arrays()["lane"])
    waiting_x = segments["waiting"][0]
    assert list(waiting_x[~np.isnan(waiting_x)]) == [t0 + 100, t0 + 100, t0 + 100, t0 + 60_100]


def test_register_kind_restyles_without_touching_the_rest():
    register_kind(MarkKind("retried", "to retry topic", "star-open", "#000000", None))
    try:
        whatif = WhatIf("Shared")
        view = RedeliveryTimeline(whatif)
        whatif.events.append(Retried(time_ms=whatif.start_ms, topic=whatif.topic,
                                     subscription=whatif.subscription, position=[0, 0]))
        view.refresh()
        trace = next(t for t in view.fig.data if t.name == "to retry topic")
        assert trace.marker.symbol == "star-open"
        assert view.lane((0, 0)) == [Mark(whatif.start_ms, "retried", None, -1)]
    finally:
        register_kind(MarkKind("retried", "sent to retry topic", "star", "#f9a825", None))
    assert KINDS["retried"].label == "sent to retry topic"


def test_ten_thousand_messages_go_to_plotly_as_numpy_arrays():
    whatif = WhatIf("Shared", receiver_queue_size=20_000)
    view = RedeliveryTimeline(whatif)
    whatif.add_consumer("C1")
    with whatif.batch():
        positions = whatif.publish(count=10_000)
        whatif.advance(10)
        whatif.receive("C1")
        whatif.ack("C1", positions[:5_000])
        whatif.nack("C1", positions[5_000:])
        whatif.advance(10)
    summary = view.summary()
    assert summary["lanes"] == 10_000
    assert summary["by_kind"] == {"published": 10_000, "dispatched": 15_000, "acked": 5_000,
                                  "redelivery_requested": 5_000}
    dispatched = next(t for t in view.fig.data if t.name == "dispatched")
    assert isinstance(dispatched.x, np.ndarray) and dispatched.x.shape == (15_000,)
    assert view.fig.layout.yaxis.tickvals is None  # too many lanes to label
    assert view.frames <= 3


def test_a_redelivery_reason_that_is_a_kind_is_drawn_as_that_kind():
    whatif = WhatIf("Shared")
    view = RedeliveryTimeline(whatif)
    whatif.add_consumer("A")
    [position] = whatif.publish("k")
    whatif.remove_consumer("A")
    assert [m.kind for m in view.lane(position)] == [
        "published", "dispatched", "consumer_removed"
    ]
    model = TimelineModel()
    model.ingest([RedeliveryRequested(time_ms=5, topic="t", reason="ack_timeout",
                                      consumer="A", positions=[[1, 2]])])
    assert model.lane((1, 2)) == [Mark(5, "ack_timeout", "A", -1)]
