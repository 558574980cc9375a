"""A tutorial run, saved and reopened after a kernel restart shows its pictures.

JupyterLab keeps widget models only as long as the kernel that made them; a saved output
refers to a model by id. With ``saveState`` on (what ``./scripts/run`` and Binder set, the
settings this suite's lab uses) the models are written into the notebook on save, so a
reopened notebook draws every view again instead of "Error displaying widget: model not
found". This test runs a tutorial in Chromium, saves it, restarts its kernel, opens it in a
fresh tab and counts the drawn figures; the saved notebook's size is printed.
"""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

from .conftest import TUTORIALS
from .lab import Lab, open_and_run_all

NOTEBOOK = "07-acks-and-cursors.ipynb"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _view_count(notebook: Path) -> int:
    import nbformat

    book = nbformat.read(notebook, as_version=4)
    return sum(1 for cell in book.cells if cell.cell_type == "code"
               for output in cell.outputs
               if re.match(r"^<\w+ step \d+ ", (output.get("data") or {}).get("text/plain", "")))


def _restart_kernel(lab: Lab, notebook: str) -> None:
    (session,) = [s for s in lab.api("sessions") if Path(s["path"]).name == notebook]
    request = urllib.request.Request(
        f"{lab.url}/api/kernels/{session['kernel']['id']}/restart?token={lab.token}",
        data=b"{}", method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        assert answer.status == 200


def test_saved_tutorial_reopened_after_a_restart_shows_pictures(
    lab: Lab, page: Any, artifacts: Path
):
    from playwright.sync_api import expect

    views = _view_count(next(path for path in TUTORIALS if path.name == NOTEBOOK))
    assert views >= 2
    panel = open_and_run_all(page, lab, NOTEBOOK)
    expect(panel.locator(".js-plotly-plot")).to_have_count(views, timeout=60_000)
    page.keyboard.press("Control+s")
    saved = lab.root / NOTEBOOK
    expect(page.locator("#jp-main-statusbar")).to_contain_text("Saving completed",
                                                               timeout=60_000)
    book = json.loads(saved.read_text())
    state = book["metadata"]["widgets"][WIDGET_STATE]["state"]
    print(f"{NOTEBOOK} saved with widget state: {saved.stat().st_size / 1e6:.1f} MB, "
          f"{len(state)} models")
    referenced = {output["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
                  for cell in book["cells"] for output in cell.get("outputs", [])
                  if "application/vnd.jupyter.widget-view+json" in output.get("data", {})}
    assert len(referenced) == views and referenced <= set(state)

    _restart_kernel(lab, NOTEBOOK)
    # a fresh load of JupyterLab in the tab, another workspace: nothing kept in the page
    page.goto(f"{lab.url}/lab/workspaces/reopen/tree/{NOTEBOOK}?reset&token={lab.token}")
    panel = page.locator(".jp-NotebookPanel:visible")
    expect(panel).to_have_count(1, timeout=60_000)
    outputs = panel.locator(".jp-OutputArea-output")
    expect(panel.locator(".js-plotly-plot")).to_have_count(views, timeout=90_000)
    expect(outputs.filter(has_text="model not found")).to_have_count(0)
    expect(outputs.filter(has_text="Error displaying widget")).to_have_count(0)
    for index in range(views):
        plot = panel.locator(".js-plotly-plot").nth(index)
        plot.scroll_into_view_if_needed()
        expect(plot.locator(".main-svg").first).to_be_visible()
        plot.screenshot(path=str(artifacts / f"reopened-{index}.png"))
