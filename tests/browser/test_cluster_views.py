"""Real-browser test: cluster-mode views (HashRangeView, CursorView with ack holes) in
JupyterLab and headless Chromium.

The notebook attaches to a broker only by its pulsar:// and REST listeners — as to a remote
Pulsar cluster — leaves ack holes with the official client, shows both views, and the test
clicks the what-if button, which must open a what-if copy of the live consumers. The
page fixture shuts the kernel down afterwards, and the broker and polling threads with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .lab import STDERR, Lab, kernel_eval, open_and_run_all, running_lab

NOTEBOOK = "cluster-views.ipynb"
CELLS = [
    """import logging
import pulsar
import pulsarlab
from pulsarlab.cluster import open_connection
from pulsarlab.widgets import CursorView, HashRangeView

broker = pulsarlab.Broker(storage="memory", key_shared_use_consistent_hashing=False).start()
conn = open_connection(broker.pulsar_url, admin_url=broker.web_url)
app = pulsar.Client(broker.pulsar_url, logger=logging.getLogger("app"))
consumers = [app.subscribe("orders", "billing", consumer_name=name,
                           consumer_type=pulsar.ConsumerType.KeyShared)
             for name in ("c1", "c2")]
producer = app.create_producer("orders")
for i in range(12):
    producer.send(f"m{i}".encode(), partition_key=f"key-{i}")
for consumer in consumers:
    while True:
        try:
            msg = consumer.receive(timeout_millis=500)
        except pulsar.Timeout:
            break
        if msg.data() in (b"m3", b"m4", b"m8"):
            consumer.acknowledge(msg)   # acked past the mark-delete position: holes""",
    "ranges = HashRangeView.for_subscription(conn, 'orders', 'billing')\nranges",
    "cursor = CursorView.for_subscription(conn, 'orders', 'billing')\ncursor",
    "ranges.source.poll(); cursor.source.poll()\nprint('holes:', len(cursor.holes))",
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    source = tmp_path_factory.mktemp("notebook") / NOTEBOOK
    book = new_notebook(cells=[new_code_cell(text) for text in CELLS])
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                   "language": "python"}
    nbformat.write(book, source)
    with running_lab(tmp_path_factory.mktemp("lab"), [source]) as server:
        yield server


def _view(panel: Any, variable: str) -> Any:
    line = panel.page.locator(".cm-line", has_text=re.compile(rf"^\s*{variable}\s*$"))
    cell = panel.locator(".jp-CodeCell").filter(has=line)
    return cell.locator(".jp-OutputArea-output .widget-vbox").first


def test_cluster_views_render_holes_and_copy_into_what_if(lab: Lab, page: Any,
                                                          artifacts: Path) -> None:
    from playwright.sync_api import expect

    panel = open_and_run_all(page, lab, NOTEBOOK)
    expect(panel.locator(".jp-OutputArea-output").filter(has_text="holes: 2")).to_have_count(1)
    expect(panel.locator(STDERR)).to_have_count(0)

    ranges = _view(panel, "ranges")
    plot = ranges.locator(".js-plotly-plot").first
    expect(plot.locator(".gtitle")).to_contain_text("2 consumer(s)", timeout=60_000)
    expect(plot.locator("g.trace.bars g.point")).to_have_count(2)
    label = ranges.locator(".widget-html").filter(has_text="cluster stats fetched")
    expect(label).not_to_have_count(0)

    cursor = _view(panel, "cursor")
    heat = cursor.locator(".js-plotly-plot").first
    expect(heat.locator(".gtitle")).to_contain_text("cursor of 'billing': mark-delete",
                                                    timeout=60_000)
    cursor.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "01_rendered.png"))
    cursor.screenshot(path=str(artifacts / "01_cursor.png"))
    assert kernel_eval(lab, NOTEBOOK, "len(cursor.holes)") == "2"

    # what-if: a copy of the live consumers, driven by the real core, below the view
    ranges.locator("button.jupyter-button", has_text="what-if: copy these consumers").click()
    copies = ranges.locator(".js-plotly-plot")
    expect(copies).to_have_count(2, timeout=30_000)
    expect(copies.nth(1).locator("g.trace.bars g.point")).to_have_count(2)
    ranges.scroll_into_view_if_needed()
    ranges.screenshot(path=str(artifacts / "02_what_if.png"))
    assert kernel_eval(lab, NOTEBOOK,
                       "ranges.what_if_output.children[0].source.consumer_names") == \
        "['c1', 'c2']"
