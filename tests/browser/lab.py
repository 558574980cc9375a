"""JupyterLab and headless Chromium for the real-browser tests (no test cases here).

:func:`running_lab` starts JupyterLab on a free loopback port with a random token, fresh
settings and a root holding *copies* of the given notebooks and of the ``data`` folder beside
them (JupyterLab may save them; the repository's copies are never touched).
:func:`open_and_run_all` opens one notebook in its own workspace, runs every cell and waits for
the kernel to go idle; :func:`kernel_eval` asks that notebook's kernel for a value through a
second client, and :func:`shutdown_kernel` ends it. :func:`open_committed` opens a tutorial
as committed (its outputs, no kernel run); :func:`code_cell` finds a cell by a line of its
source; :func:`shown_picture` reads what one output's picture shows (a static SVG's texts, or
a live view's plot texts, traces and table).

Needs ``/usr/bin/chromium`` (Debian's package; ``scripts/test`` installs it) and the
``playwright`` Python package (the dev extra); :func:`require_browser` FAILS the test without
them rather than skipping it.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]
SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False, "doNotDisturbMode": True,
    },
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
        "windowingMode": "none", "autoStartDefaultKernel": True,
    },
    # as ./scripts/run and Binder set it (pulsarlab.lab_settings): widget state saved
    "@jupyter-widgets/jupyterlab-manager/plugin.jupyterlab-settings": {"saveState": True},
}
STDERR = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"


@dataclass(frozen=True)
class Lab:
    """A running JupyterLab server."""

    url: str
    token: str
    root: Path
    runtime: Path

    def api(self, path: str, method: str = "GET") -> Any:
        request = urllib.request.Request(f"{self.url}/api/{path}?token={self.token}",
                                         method=method)
        with urllib.request.urlopen(request, timeout=10) as answer:
            body = answer.read()
        return json.loads(body) if body else None


def require_browser() -> None:
    """Fail (not skip) when Chromium or Playwright is missing."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (scripts/test does, "
                    "with apt-get) to run the real-browser tests")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.fail("the playwright package is missing: pip install -e '.[dev]'")


def _copy_without_outputs(source: Path, target: Path) -> None:
    """So that nothing the test waits for can come from the outputs committed with it."""
    import nbformat

    book = nbformat.read(source, as_version=4)
    for cell in book.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nbformat.write(book, target)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def running_lab(base: Path, notebooks: Sequence[Path]) -> Iterator[Lab]:
    """JupyterLab serving copies of ``notebooks``; everything it writes stays under ``base``."""
    root = base / "root"
    root.mkdir(parents=True)
    for notebook in notebooks:
        _copy_without_outputs(notebook, root / notebook.name)
        data = notebook.parent / "data"  # the files the tutorials read
        if data.is_dir() and not (root / "data").exists():
            shutil.copytree(data, root / "data")
    settings = base / "settings"
    for name, values in SETTINGS.items():
        target = settings / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    runtime = base / "runtime"
    env = dict(os.environ)
    env.update({
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_RUNTIME_DIR": str(runtime),
        "IPYTHONDIR": str(base / "ipython"),
        "PLOTLY_RENDERER": "plotly_mimetype",
    })
    port, token = _free_port(), secrets.token_hex(16)
    log_path = base / "server.log"
    log = log_path.open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0",
         "--LabApp.news_url=None", "--allow-root"],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    lab = Lab(f"http://127.0.0.1:{port}", token, root, runtime)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                lab.api("status")
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("JupyterLab did not start:\n" + log_path.read_text())
                time.sleep(0.3)
        yield lab
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _session(lab: Lab, notebook: str) -> dict[str, Any]:
    sessions = [s for s in lab.api("sessions") if Path(s.get("path") or "").name == notebook]
    assert len(sessions) == 1, f"expected one kernel session for {notebook}: {sessions}"
    return sessions[0]


def kernel_eval(lab: Lab, notebook: str, expression: str) -> str:
    """``repr`` of ``expression`` evaluated in ``notebook``'s kernel (a second client)."""
    import jupyter_client

    kernel_id = _session(lab, notebook)["kernel"]["id"]
    client = jupyter_client.BlockingKernelClient(
        connection_file=str(lab.runtime / f"kernel-{kernel_id}.json")
    )
    client.load_connection_file()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=30)
        reply = client.execute(expression, user_expressions={"value": expression}, silent=True,
                               reply=True, timeout=30)
        value = reply["content"]["user_expressions"]["value"]
        assert value.get("status") == "ok", f"{expression}: {value}"
        return value["data"]["text/plain"]
    finally:
        client.stop_channels()


def shutdown_kernel(lab: Lab, notebook: str) -> None:
    """End ``notebook``'s session and kernel (so the next test has the CPU)."""
    sessions = [s for s in lab.api("sessions") if Path(s.get("path") or "").name == notebook]
    for session in sessions:
        lab.api(f"sessions/{session['id']}", method="DELETE")


def open_and_run_all(page: Any, lab: Lab, notebook: str) -> Any:
    """Open ``notebook`` in a workspace of its own, run all cells, wait until the kernel is
    idle again; returns the notebook panel's locator."""
    from playwright.sync_api import expect

    page.add_locator_handler(
        page.locator(".jp-Dialog").filter(has_text="Select Kernel"),
        lambda: page.locator(".jp-Dialog button").filter(has_text="Select").last.click(),
    )
    workspace = re.sub(r"\W", "-", Path(notebook).stem)
    page.goto(f"{lab.url}/lab/workspaces/{workspace}/tree/{notebook}?reset&token={lab.token}")
    status = page.locator("#jp-main-statusbar")
    expect(status).to_contain_text("| Idle", timeout=90_000)
    panel = page.locator(".jp-NotebookPanel:visible")
    expect(panel).to_have_count(1)
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    # every code cell has an execution count once the run is over, and the kernel is idle
    prompts = panel.locator(".jp-CodeCell .jp-InputPrompt")
    expect(prompts.filter(has_text=re.compile(r"\[\s*[*]?\s*\]"))).to_have_count(0,
                                                                                  timeout=120_000)
    expect(status).to_contain_text("| Idle", timeout=120_000)
    return panel


def open_committed(page: Any, lab: Lab, notebook: Path) -> Any:
    """Open a copy of ``notebook`` with its committed outputs (as GitHub or a lab without a
    kernel shows them), in a workspace of its own; returns the notebook panel's locator."""
    from playwright.sync_api import expect

    name = f"committed-{notebook.name}"
    shutil.copy(notebook, lab.root / name)
    page.goto(f"{lab.url}/lab/workspaces/committed-{notebook.stem[:2]}/tree/{name}"
              f"?reset&token={lab.token}")
    panel = page.locator(".jp-NotebookPanel:visible")
    expect(panel).to_have_count(1, timeout=60_000)
    expect(panel.locator(".jp-CodeCell").first).to_be_visible()
    return panel


def code_cell(panel: Any, source_line: str) -> Any:
    """The code cell with a line that is exactly ``source_line``."""
    line = panel.page.locator(".cm-line", has_text=re.compile(rf"^\s*{re.escape(source_line)}\s*$"))
    return panel.locator(".jp-CodeCell").filter(has=line)


_SHOWN = """out => {
    const svg = out.querySelector("img[src^='data:image/svg+xml,']");
    if (svg) {  // a static picture: its text elements
        const src = decodeURIComponent(svg.src.slice(svg.src.indexOf(',') + 1));
        const doc = new DOMParser().parseFromString(src, 'image/svg+xml');
        return {texts: [...doc.querySelectorAll('text')].map(t => t.textContent), plots: []};
    }
    const list = v => v == null ? [] : typeof v === 'string' ? [v]
        : Array.from(v, e => e != null && typeof e === 'object' ? Array.from(e) : e);
    const plots = [...out.querySelectorAll('.js-plotly-plot')].map(gd => ({
        title: (gd.layout.title && gd.layout.title.text) || '',
        traces: gd._fullData.map(t => {
            const group = gd.querySelector(`.trace${t.uid}`);
            return {
                name: t.name || '', type: t.type, xaxis: t.xaxis || '', visible: t.visible,
                x: list(t.x), y: list(t.y), r: list(t.r), theta: list(t.theta),
                base: list(t.base), text: list(t.text), hovertext: list(t.hovertext),
                customdata: list(t.customdata),
                color: t.marker ? list(t.marker.color) : [],
                // where plotly drew each point (SVG traces; WebGL ones draw none)
                points: group ? [...group.querySelectorAll('path.point')].map(p => {
                    const box = p.getBoundingClientRect();
                    return [box.x + box.width / 2, box.y + box.height / 2];
                }) : [],
            };
        }),
    }));
    const texts = [...out.querySelectorAll('.js-plotly-plot svg text')].map(t => t.textContent)
        .concat([...out.querySelectorAll('.widget-html-content, .widget-readout')]
                .flatMap(e => e.innerText.split('\\n')));
    return {texts, plots};
}"""


@dataclass(frozen=True)
class Shown:
    """What one output's picture shows: its text lines (whitespace runs as one space) and,
    for a live view, each plot's title and traces (``_fullData``: name, x, y, r, theta, base,
    text, hovertext, customdata, marker colour(s), the page position of each drawn point)."""

    texts: tuple[str, ...]
    plots: tuple[dict[str, Any], ...]

    def missing(self, words: Sequence[str]) -> list[str]:
        """The ``words`` no text line of the picture contains."""
        return [w for w in words if not any(w in line for line in self.texts)]

    def trace(self, name: str, plot: int = 0, xaxis: str | None = None) -> dict[str, Any]:
        """The trace called ``name`` of plot ``plot`` (on ``xaxis``, when given)."""
        found = [t for t in self.plots[plot]["traces"]
                 if t["name"] == name and xaxis in (None, t["xaxis"])]
        assert len(found) == 1, (name, xaxis, [t["name"] for t in self.plots[plot]["traces"]])
        return found[0]


def shown_picture(output: Any) -> Shown:
    """Read ``output`` (an output area's locator): a static SVG picture or a live view."""
    raw = output.evaluate(_SHOWN)
    texts = tuple(re.sub(r"\s+", " ", t).strip() for t in raw["texts"])
    return Shown(tuple(t for t in texts if t), tuple(raw["plots"]))
