"""Real-browser tests: tutorials' live widgets in JupyterLab and headless Debian Chromium.

Each test opens an output-free copy of a tutorial (fixtures in ``conftest.py``, helpers in
``lab.py``: one JupyterLab server and one Chromium for the module), runs all cells, waits for
the kernel to go idle, checks that the views rendered — plotly figures of the expected shape
and ipywidgets controls — then clicks a button and checks both the kernel-side state and the
redrawn figure. Screenshots are saved as artifacts. A view that does not render fails the test.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .lab import STDERR, Lab, code_cell, kernel_eval, open_and_run_all


def _expect() -> Any:
    from playwright.sync_api import expect

    return expect


def test_tutorial_03_widgets_render_and_react_in_chromium(lab: Lab, page: Any, artifacts: Path):
    expect = _expect()
    notebook = "03-key-shared-hash-ranges.ipynb"
    panel = open_and_run_all(page, lab, notebook)

    # the last code cell prints the legacy rule's answer: everything ran
    outputs = panel.locator(".jp-OutputArea-output")
    expect(outputs.filter(has_text="legacy rule: C1")).to_have_count(1)
    expect(panel.locator(STDERR)).to_have_count(0)
    plots = panel.locator(".js-plotly-plot")
    expect(plots).to_have_count(2)  # the auto-split view and the sticky view
    first = plots.first
    expect(first.locator(".gtitle")).to_contain_text("4 consumer(s)")
    expect(first.locator("g.trace.bars g.point")).to_have_count(4)
    expect(plots.nth(1).locator("g.trace.bars g.point")).to_have_count(4)  # 2 × 2 ranges
    view = panel.locator(".widget-vbox").filter(has=page.locator(".js-plotly-plot")).first
    expect(view.locator("button.jupyter-button")).not_to_have_count(0)
    first.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "01_rendered.png"))
    view.screenshot(path=str(artifacts / "01_view.png"))

    # what-if: type a name and press "add consumer" — the kernel splits C3's range
    name_box = view.locator(".widget-text").filter(has_text="consumer").locator("input")
    name_box.first.fill("C5")
    name_box.first.press("Tab")
    view.locator("button.jupyter-button", has_text=re.compile(r"^\s*add consumer$")).first.click()
    expect(first.locator(".gtitle")).to_contain_text("5 consumer(s)", timeout=30_000)
    expect(first.locator("g.trace.bars g.point")).to_have_count(5)
    page.wait_for_timeout(800)  # let the 500 ms range animation finish for the picture
    first.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "02_after_add.png"))
    view.screenshot(path=str(artifacts / "02_view.png"))

    names = kernel_eval(lab, notebook, "whatif.consumer_names")
    assert "C5" in names, names
    assert kernel_eval(lab, notebook, "len(view.ranges)") == "5"

    # C5 took keys from C3: the live plot rings them in the view's orange, as the picture does
    moved = int(kernel_eval(lab, notebook, "len(view.step_moved)"))
    assert moved > 0
    page.wait_for_function(f"gd => ({MOVED_MARKERS})(gd).strokes.length === {moved}",
                           arg=first.element_handle())
    drawn = first.evaluate(MOVED_MARKERS)
    assert drawn["color"] == MOVED_ORANGE, drawn
    assert drawn["strokes"] == ["rgb(255, 109, 0)"] * moved, drawn


MOVED_ORANGE = "#ff6d00"
MOVED_MARKERS = """gd => {
    const index = gd._fullData.findIndex(t => t.name === 'moved in this step');
    const trace = gd._fullData[index];
    const group = gd.querySelector(`.scatterlayer .trace${trace.uid}`);
    const points = group ? Array.from(group.querySelectorAll('path.point')) : [];
    return {color: trace.marker.color, strokes: points.map(p => p.style.stroke)};
}"""
"""The marker colour plotly uses for the hash-range view's "moved in this step" trace, and
the stroke of each of its drawn points."""


def _failover_view(panel: Any, variable: str) -> Any:
    """The FailoverView displayed by the cell ``variable.pin()`` (its outermost widget box)."""
    return code_cell(panel, f"{variable}.pin()").locator(".jp-OutputArea-output .widget-vbox").first


def _grid_shape(view: Any) -> tuple[int, int]:
    """(partitions, consumers) as the heatmap's axes show them."""
    heatmap = view.locator(".js-plotly-plot").first
    return heatmap.locator("g.xtick").count(), heatmap.locator("g.ytick").count()


def test_tutorial_06_failover_view_renders_and_reacts_in_chromium(
    lab: Lab, page: Any, artifacts: Path
):
    expect = _expect()
    notebook = "06-failover.ipynb"
    panel = open_and_run_all(page, lab, notebook)

    outputs = panel.locator(".jp-OutputArea-output")
    expect(outputs.filter(has_text="duplicates: 2")).to_have_count(1)
    expect(panel.locator(STDERR)).to_have_count(0)
    # four views: 2 partitions × A..D, 9 × A..C, the non-partitioned ring, the switch demo
    shapes = {"two_view": (2, 4), "nine_view": (9, 3), "ring_view": (1, 3), "sw_view": (2, 2)}
    for variable, (partitions, consumers) in shapes.items():
        view = _failover_view(panel, variable)
        heatmap = view.locator(".js-plotly-plot").first
        # five or more partitions are named by consumer ("A on P0, P3, P6 · …")
        expect(heatmap.locator(".gtitle")).to_contain_text(
            "Failover: active A on P0, P3, P6" if partitions > 4 else "Failover: active P0→"
        )
        expect(heatmap.locator("g.xtick")).to_have_count(partitions)
        expect(heatmap.locator("g.ytick")).to_have_count(consumers)
        # the consumer ring is shown for the non-partitioned topic only
        expect(view.locator(".js-plotly-plot:visible")).to_have_count(
            2 if variable == "ring_view" else 1
        )
    expect(_failover_view(panel, "ring_view").locator(".js-plotly-plot").nth(1)
           .locator(".gtitle")).to_contain_text("consumer ring")

    view = _failover_view(panel, "sw_view")
    heatmap = view.locator(".js-plotly-plot").first
    expect(view.locator(".widget-html").filter(has_text="active on:")).to_have_count(1)
    expect(view.locator(".widget-text input")).not_to_have_count(0)  # the what-if controls
    reconnect = view.locator("button.jupyter-button", has_text=re.compile(r"^\s*reconnect A$"))
    expect(reconnect).to_have_count(1)
    expect(view.locator("button.jupyter-button", has_text="disconnect B")).to_have_count(1)
    expect(heatmap).to_contain_text("active")
    expect(heatmap).not_to_contain_text("switching")
    view.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "01_rendered.png"))
    view.screenshot(path=str(artifacts / "01_view.png"))

    # A comes back: it is eligible[0] again, so P0 switches from B to A (rewind pending)
    reconnect.click()
    expect(view.locator("button.jupyter-button", has_text="disconnect A")).to_have_count(1)
    expect(heatmap).to_contain_text("switching", timeout=30_000)
    expect(view.locator(".widget-html").filter(has_text="active on:")).to_contain_text(
        "P0: B → A switching"
    )
    view.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "02_after_reconnect.png"))
    view.screenshot(path=str(artifacts / "02_view.png"))

    assert kernel_eval(lab, notebook, "sorted(sw.consumer_names)") == "['A', 'B']"
    assert kernel_eval(lab, notebook, "sw_view.active") == "{0: 'A', 1: 'B'}"
    assert kernel_eval(lab, notebook, "sorted(sw_view.switching)") == "[0]"


def test_tutorial_02_dashboard_has_one_step_bar_and_one_control_block(
    lab: Lab, page: Any, artifacts: Path
):
    """The dashboard's tabs are parts of its picture: one slider scrubs them all, one control
    block drives the core, and the name box offers a name no consumer has."""
    expect = _expect()
    notebook = "02-subscription-types.ipynb"
    panel = open_and_run_all(page, lab, notebook)
    cell = code_cell(panel, "Dashboard(key_shared)")
    output = cell.locator(".jp-OutputArea-output").last
    expect(output.locator(".js-plotly-plot").first).to_be_visible(timeout=60_000)
    expect(output.locator(".widget-slider")).to_have_count(1)
    buttons = output.locator("button.jupyter-button")
    expect(buttons.filter(has_text=re.compile(r"^\s*add consumer$"))).to_have_count(1)
    expect(buttons.filter(has_text=re.compile(r"^\s*remove consumer$"))).to_have_count(1)
    expect(output.locator(".widget-text").filter(has_text="keys")).to_have_count(1)
    name = output.locator("input[placeholder='new consumer name']").input_value()
    consumers = kernel_eval(lab, notebook, "key_shared.consumer_names")
    assert name and f"'{name}'" not in consumers, (name, consumers)

    number = re.search(r"\d+", cell.locator(".jp-InputPrompt").inner_text())
    assert number
    flow = f"Out[{number[0]}].views['flow'].fig.data"
    points = kernel_eval(lab, notebook, f"sum(len(t.x) for t in {flow} "
                                        "if t.name.endswith((' queue', ' unacked')) "
                                        "and 'markers' in t.mode)")
    assert int(points) > 0  # the first step's samples are drawn (a lone point on a line is not)
    output.locator(".lm-TabBar-tab", has_text="flow").click()
    page.wait_for_timeout(1000)
    output.screenshot(path=str(artifacts / "01_flow_tab.png"))


COMPACTION_MARKS = """gd => Object.fromEntries(gd._fullData
    .filter(t => t.name === 'left out by compaction' || t.name === 'batch partly compacted out')
    .map(t => {
        const group = gd.querySelector(`.scatterlayer .trace${t.uid}`);
        return [t.name, group ? group.querySelectorAll('path.point').length : 0];
    }))"""
"""Points drawn per compaction trace of a CursorView's plot."""


def test_tutorial_10_cursor_view_marks_what_compaction_left_out(
    lab: Lab, page: Any, artifacts: Path
):
    expect = _expect()
    notebook = "10-delayed-ttl-retention-dedup.ipynb"
    panel = open_and_run_all(page, lab, notebook)
    expect(panel.locator(STDERR)).to_have_count(0)
    cell = code_cell(panel, "cursor = CursorView(board)")
    plot = cell.locator(".js-plotly-plot").first
    expect(plot.locator(".gtitle")).to_contain_text("cursor of 'board'", timeout=60_000)
    # six crosses and one diamond, as the kernel's view counts them
    left_out = int(kernel_eval(lab, notebook, "len(cursor.compacted_out)"))
    partly = int(kernel_eval(lab, notebook, "len(cursor.compacted_out_batches)"))
    assert (left_out, partly) == (6, 1)
    page.wait_for_function(f"gd => ({COMPACTION_MARKS})(gd)['left out by compaction'] === 6",
                           arg=plot.element_handle())
    assert plot.evaluate(COMPACTION_MARKS) == {
        "left out by compaction": left_out, "batch partly compacted out": partly}
    # the dashed horizon line and its label, the legend naming the marks
    expect(plot.locator(".annotation-text", has_text="compaction horizon")).to_have_count(1)
    expect(plot.locator("path[style*='stroke-dasharray']")).not_to_have_count(0)
    expect(plot.locator(".legendtext", has_text="left out by compaction")).to_have_count(1)
    expect(cell.locator(".widget-html", has_text="compaction horizon 0:7")).to_have_count(1)
    cell.scroll_into_view_if_needed()
    cell.screenshot(path=str(artifacts / "01_compaction_cursor.png"))
