"""Every tutorial's views, in Chromium: pictures before running, the pinned step after.

A *view cell* is a code cell whose committed output is a pulsarlab view: its text/plain is
the view's line ``<Class step N ('label'): title>`` and it carries the static picture.

* Opened as committed (no cell run), every view cell shows its picture and no output shows
  a raw ``…(children=`` repr.
* After Run All, every view cell's live widget shows the step its cell pinned: the
  history bar names the committed step's label, the plot's title is the committed title,
  and the kernel's ``Out[n].describe()`` is the committed line word for word.
* Scrubbing a view's history back (◀) redraws the previous step with its own highlight.

Screenshots of every view land in the artefact folder (see ``conftest.py``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from .conftest import TUTORIALS
from .lab import Lab, kernel_eval, open_and_run_all, open_committed, shutdown_kernel

VIEW_LINE = re.compile(r"^<(picture of )?(\w+) step (\d+) \('(.*)'\): (.*)>$", re.DOTALL)


def _view_cells(notebook: Path) -> dict[int, re.Match[str]]:
    """Index among the code cells → the committed line of that cell's view (or still)."""
    import nbformat

    book = nbformat.read(notebook, as_version=4)
    code = [cell for cell in book.cells if cell.cell_type == "code"]
    found = {}
    for index, cell in enumerate(code):
        for output in cell.outputs:
            match = VIEW_LINE.match((output.get("data") or {}).get("text/plain", ""))
            if match:
                found[index] = match
    return found


WITH_VIEWS = [path for path in TUTORIALS if _view_cells(path)]


def _expect() -> Any:
    from playwright.sync_api import expect

    return expect


def test_tutorials_have_view_cells():
    assert len(WITH_VIEWS) >= 8, [path.name for path in WITH_VIEWS]


def test_committed_tutorials_show_pictures_before_running(lab: Lab, page: Any, artifacts: Path):
    expect = _expect()
    for notebook in TUTORIALS:
        panel = open_committed(page, lab, notebook)
        cells = panel.locator(".jp-CodeCell")
        outputs = panel.locator(".jp-OutputArea-output")
        expect(outputs.filter(has_text=re.compile(r"\w\(children="))).to_have_count(0)
        expect(outputs.filter(has_text="model not found")).to_have_count(0)
        for index, line in _view_cells(notebook).items():
            cell = cells.nth(index)
            picture = cell.locator(".jp-OutputArea-output img[src^='data:image/svg+xml,']")
            expect(picture).to_have_count(1)
            cell.scroll_into_view_if_needed()
            width = picture.evaluate("img => img.complete ? img.naturalWidth : 0")
            assert width > 0, f"{notebook.name} view cell {index} ({line[2]}): blank picture"
            cell.screenshot(path=str(artifacts / f"{notebook.stem[:2]}-cell{index:02}.png"))
        shutdown_kernel(lab, f"committed-{notebook.name}")


@pytest.mark.parametrize("notebook", WITH_VIEWS, ids=lambda path: path.stem[:2])
def test_run_all_leaves_every_view_on_its_pinned_step(
    lab: Lab, page: Any, artifacts: Path, notebook: Path
):
    expect = _expect()
    panel = open_and_run_all(page, lab, notebook.name)
    cells = panel.locator(".jp-CodeCell")
    for index, line in _view_cells(notebook).items():
        still, kind, _step, label, title = line.groups()
        cell = cells.nth(index)
        output = cell.locator(".jp-OutputArea-output").last
        if still:  # a picture of one step: an image, no widget
            expect(output.locator("img")).to_have_count(1)
            continue
        expect(output.locator(".js-plotly-plot").first).to_be_visible(timeout=60_000)
        live = label.startswith("t = ")  # a live view's steps are named by the wall clock
        if kind != "Dashboard":  # a dashboard's title is its first tab's
            # the line joins a title's lines with " · ": the plot shows the first part
            expect(output.locator(".js-plotly-plot .gtitle").first).to_contain_text(
                title.split(" · ")[0], timeout=60_000)
            bar = output.locator(".widget-html").filter(has_text="t = " if live else label)
            expect(bar.first).to_be_visible(timeout=60_000)
        prompt = cell.locator(".jp-InputPrompt").inner_text()
        number = re.search(r"\d+", prompt)
        assert number, f"{notebook.name} cell {index} did not run: {prompt!r}"
        described = kernel_eval(lab, notebook.name, f"Out[{number[0]}].describe()").strip("'\"")
        if live:
            assert described.endswith(f"): {title}>"), (notebook.name, index, described)
        else:
            assert described == line[0], (notebook.name, index)
        cell.scroll_into_view_if_needed()
        output.screenshot(path=str(artifacts / f"{notebook.stem[:2]}-cell{index:02}.png"))


def test_scrubbing_back_redraws_the_previous_step_and_its_highlight(
    lab: Lab, page: Any, artifacts: Path
):
    expect = _expect()
    notebook = "03-key-shared-hash-ranges.ipynb"
    panel = open_and_run_all(page, lab, notebook)
    index = min(i for i, line in _view_cells(next(p for p in TUTORIALS if p.name == notebook))
                .items() if not line[1])
    cell = panel.locator(".jp-CodeCell").nth(index)
    number = re.search(r"\d+", cell.locator(".jp-InputPrompt").inner_text())[0]
    view = f"Out[{number}]"
    plot = cell.locator(".js-plotly-plot").first
    shown = int(kernel_eval(lab, notebook, f"{view}.step.index"))
    cell.scroll_into_view_if_needed()
    cell.screenshot(path=str(artifacts / "01_pinned.png"))

    cell.locator("button.jupyter-button", has_text="◀").first.click()
    expect(cell.locator(".widget-readout").first).to_have_text(str(shown - 1), timeout=30_000)
    title = kernel_eval(lab, notebook, f"{view}.fig.layout.title.text").strip("'\"")
    expect(plot.locator(".gtitle")).to_have_text(title)
    assert kernel_eval(lab, notebook, f"{view}.step.index") == str(shown - 1)
    moved = int(kernel_eval(lab, notebook, f"len({view}.step.state['step_moved'])"))
    assert moved > 0
    # the widget model holds the step's highlight (trace 3: "moved in this step") ...
    assert kernel_eval(lab, notebook, f"len({view}.fig.data[3].x)") == str(moved)
    # ... and the page draws it: one point per key, plus one square per key that moved
    keys = int(kernel_eval(lab, notebook, f"len({view}.message_keys)"))
    expect(plot.locator(".scatterlayer path.point")).to_have_count(keys + moved)
    cell.screenshot(path=str(artifacts / "02_scrubbed_back.png"))


FIGURE_DATA = """() => [...document.querySelectorAll('.jp-NotebookPanel .js-plotly-plot')]
    .filter(gd => gd.offsetParent !== null).map(gd => [
        (gd.layout && gd.layout.title && gd.layout.title.text || '').slice(0, 40),
        (gd.data || []).filter(t => t.visible !== false
            && ['x', 'y', 'z', 'r'].some(k => (t[k] || []).length)).length])"""
"""For each visible plot of the shown notebook: its title and how many traces carry points."""


@pytest.mark.parametrize("run", range(3))
def test_tutorial_06_every_figure_has_data_on_every_run_all(
    lab: Lab, page: Any, artifacts: Path, run: int
):
    """One Run All in three once drew the first view as empty axes (a view opened from a
    browser-side copy of the figure that missed the draws made before plotly's module
    loaded); every visible plot must carry its traces' points, run after run."""
    notebook = "06-failover.ipynb"
    panel = open_and_run_all(page, lab, notebook)
    plots = panel.locator(".js-plotly-plot")
    views = [m for m in _view_cells(next(p for p in TUTORIALS if p.name == notebook)).values()
             if not m[1]]  # stills are images, not plots
    _expect()(plots).not_to_have_count(0)
    for index in range(plots.count()):  # each plot drawn (newPlot done) before it is read
        _expect()(plots.nth(index).locator(".main-svg").first).to_be_attached()
    counts = page.evaluate(FIGURE_DATA)
    panel.screenshot(path=str(artifacts / f"06-run{run}.png"))
    titles = [title for title, _ in counts]
    assert len(counts) >= len(views), counts
    for line in views:
        first = line[5].split(" · ")[0]  # the line joins the title's lines with " · "
        assert any(t.split("<br>")[0].startswith(first) for t in titles if t), (line[0], titles)
    assert all(n for _, n in counts), f"run {run}: a plot without data: {counts}"
    shutdown_kernel(lab, notebook)


PINNED_STEPS = {
    "06-failover.ipynb": [
        "two_view.step_summary()['active'] == {0: 'A', 1: 'B'}",
        "nine_view.step_summary()['by_consumer'] == nine_view.by_consumer()"
        " == {'A': [0, 3, 6], 'B': [1, 4, 7], 'C': [2, 5, 8]}",
        # the text's "active (the broker): B" — active, not still switching
        "ring_view.step_summary()['active'] == {0: 'B'}"
        " and not ring_view.step_summary()['switching']",
        "sw_view.step_summary()['duplicates'] == 2",
    ],
    "07-acks-and-cursors.ipynb": [
        "view.step_summary()['individually_acked'] == 1 and view.step_summary()['backlog'] == 5",
        "bview.step_summary()['partial_batches'] == 1",
    ],
    "08-redelivery.ipynb": [
        "timeline.step_summary()['lanes'] == 1"
        " and timeline.step_summary()['max_redelivery_count'] == 3",
    ],
    "15-unacked-limits.ipynb": [
        # section 3: the entries waiting behind the read position, as the cell printed them
        "cursor.step_summary(blocked_step)['unread'] == 4"
        " and cursor.step_summary(blocked_step)['read_position'] == '0:6'",
        "sub_flow.step_summary()['subscription_blocked']",
    ],
}
"""Per tutorial: what its pinned views' steps must show, in the numbers its cells print."""


@pytest.mark.parametrize("notebook", sorted(PINNED_STEPS), ids=lambda name: name[:2])
def test_pinned_steps_show_the_numbers_the_text_gives(lab: Lab, page: Any, notebook: str):
    open_and_run_all(page, lab, notebook)
    for check in PINNED_STEPS[notebook]:
        assert kernel_eval(lab, notebook, f"bool({check})") == "True", (notebook, check)
