"""FlowView: prefetch fills receiver queues; a recently joined consumer waits on a stuck one."""

from __future__ import annotations

from pulsarlab.widgets import FlowView, WhatIf


def test_a_new_key_shared_consumer_waits_for_the_stuck_one():
    whatif = WhatIf("Key_Shared", key_shared_use_consistent_hashing=False,
                    receiver_queue_size=10)
    view = FlowView(whatif)
    whatif.add_consumer("C1")
    whatif.publish([f"k{i}" for i in range(20)])
    whatif.receive("C1")  # C1's application takes 10 and never acks
    whatif.add_consumer("C2")
    whatif.publish([f"k{i}" for i in range(20)])
    summary = view.summary()
    assert summary["waiting"] == {"C2": "0:20"}
    assert summary["holding"] == ["C1"]
    assert summary["consumers"]["C2"] == {"permits": 10, "unacked": 0, "blocked": False}
    assert summary["consumers"]["C1"]["permits"] == 0
    hourglass, cross = view.fig.data[0], view.fig.data[1]
    assert list(hourglass.y) == [10, 10]  # C2's permits while it waits, two frames so far
    assert len(cross.x) == 2
    assert "recently joined" in view.table.value
    assert "holds the oldest unacked message" in view.table.value
    whatif.ack("C1")  # the mark-delete moves past C2's join mark
    whatif.receive("C1")
    whatif.ack("C1")
    assert view.summary()["waiting"] == {}
    assert view.series["C2"].unacked[-1] > 0  # C2 finally gets its keys


def test_shared_prefetch_fills_one_consumers_queue():
    whatif = WhatIf("Shared", receiver_queue_size=5)
    view = FlowView(whatif)
    whatif.add_consumer("A")
    whatif.publish(count=5)
    whatif.add_consumer("B")
    whatif.publish(count=2)
    series_a, series_b = view.series["A"], view.series["B"]
    assert (series_a.permits[-1], series_a.queue[-1], series_a.unacked[-1]) == (0, 5, 5)
    assert (series_b.permits[-1], series_b.queue[-1]) == (3, 2)
    whatif.receive("A", 3)  # half the queue consumed: the client grants permits again
    assert view.series["A"].permits[-1] == 3
    # x is the step number the slider shows: A joined at step 1, the latest is the last x
    assert view.series["A"].x == [float(i) for i in range(1, len(series_a.x) + 1)]
    assert view.series["A"].x[-1] == view.step.index == view.history_bar.slider.value
    assert view.fig.layout.xaxis2.title.text == "step"
    permits_trace = next(t for t in view.fig.data if t.name == "A permits")
    assert list(permits_trace.y) == series_a.permits


def test_blocked_consumer_and_subscription_are_shown():
    from pulsarlab.widgets import FlowView, WhatIf

    whatif = WhatIf("Shared", max_unacked_messages_per_consumer=3,
                    max_unacked_messages_per_subscription=3)
    view = FlowView(whatif, controls=False)
    whatif.add_consumer("A")
    whatif.publish(count=5)
    summary = view.summary()
    assert summary["consumers"]["A"]["blocked"] is True
    assert summary["subscription_blocked"] is True
    assert "blocked: too many unacked messages" in view.table.value
    assert "subscription blocked" in view.table.value
    whatif.receive("A")
    whatif.ack("A")
    summary = view.summary()  # the last two came once the acks unblocked both limits
    assert summary["consumers"]["A"] == {"permits": 5, "unacked": 2, "blocked": False}
    assert summary["subscription_blocked"] is False
