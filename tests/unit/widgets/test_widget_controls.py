"""The what-if buttons: each click is one call into the real core."""

from __future__ import annotations

from pulsarlab.widgets import CursorView, WhatIf, WhatIfControls
from pulsarlab.widgets.controls import parse_keys


def test_clicking_through_a_scenario():
    whatif = WhatIf("Shared")
    controls = WhatIfControls(whatif, keys="a, b, -")
    view = CursorView(whatif, controls=False)
    controls.buttons["add consumer"].click()
    assert whatif.consumer_names == ["C1"]
    assert controls.consumer.options == ("C1",)
    controls.consumer.value = "C1"
    controls.buttons["publish keys"].click()
    assert view.summary()["backlog"] == 3
    controls.buttons["receive all"].click()
    controls.buttons["ack received"].click()
    assert view.summary()["backlog"] == 0
    controls.buttons["+10 s"].click()
    assert "t = 10.000 s" in controls.clock.value
    controls.buttons["remove"].click()
    assert whatif.consumer_names == []
    controls.buttons["remove"].click()  # nobody selected: an error line, not an exception
    assert "no consumer named None" in controls.message.value


def test_a_broker_refusal_is_shown():
    whatif = WhatIf("Exclusive")
    controls = WhatIfControls(whatif)
    controls.buttons["add consumer"].click()
    controls.new_name.value = "C2"
    controls.buttons["add consumer"].click()
    assert "Exclusive consumer is already connected" in controls.message.value
    assert whatif.consumer_names == ["C1"]


def test_parse_keys():
    assert parse_keys("a, b ,-,, c") == ["a", "b", None, "c"]


def test_the_consumer_dropdown_follows_consumers_added_elsewhere():
    whatif = WhatIf("Failover")
    controls = WhatIfControls(whatif)
    whatif.add_consumer("A")
    whatif.add_consumer("B")
    assert controls.consumer.options == ("A", "B")
    assert controls.consumer.value == "A"  # the buttons are never aimed at nobody
    controls.consumer.value = "B"
    whatif.add_consumer("C")
    assert controls.consumer.value == "B"  # a choice survives membership changes
    whatif.remove_consumer("B")
    assert controls.consumer.value == "A"
