"""Real-browser test: JupyterLab + tutorial 03's live widgets in headless Debian Chromium.

Starts JupyterLab on a free loopback port with a random token and fresh settings, opens a copy
of ``notebooks/03-key-shared-hash-ranges.ipynb``, runs all cells, checks that the
HashRangeView rendered (plotly figure with one bar per consumer, ipywidgets controls),
clicks the what-if "add" button and checks both the kernel-side state and the redrawn figure.
Screenshots go to ``$PULSARLAB_ARTIFACTS_DIR/browser`` (default: the test's temp dir).

Needs ``/usr/bin/chromium`` (Debian's package; ``scripts/test`` installs it) and the
``playwright`` Python package (the dev extra). If either is missing the test FAILS.
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
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "03-key-shared-hash-ranges.ipynb"
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
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    base = os.environ.get("PULSARLAB_ARTIFACTS_DIR")
    path = Path(base) / "browser" if base else tmp_path / "artifacts"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def lab(tmp_path: Path):
    """A JupyterLab server on a copy of tutorial 03; yields (url, token, root, runtime dir)."""
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)  # JupyterLab may save: never touch the repo copy
    settings = tmp_path / "settings"
    for name, values in SETTINGS.items():
        target = settings / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    runtime = tmp_path / "runtime"
    env = dict(os.environ)
    env.update({
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_RUNTIME_DIR": str(runtime),
        "IPYTHONDIR": str(tmp_path / "ipython"),
        "PLOTLY_RENDERER": "plotly_mimetype",
    })
    port, token = _free_port(), secrets.token_hex(16)
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0",
         "--LabApp.news_url=None", "--allow-root"],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    server_log = (tmp_path / "server.log").read_text()
                    pytest.fail("JupyterLab did not start:\n" + server_log)
                time.sleep(0.3)
        yield url, token, root, runtime
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _kernel_eval(url: str, token: str, runtime: Path, expression: str) -> str:
    """Evaluate ``expression`` in the notebook's kernel through a second client."""
    import jupyter_client

    with urllib.request.urlopen(f"{url}/api/sessions?token={token}", timeout=5) as answer:
        sessions = json.load(answer)
    [session] = sessions
    client = jupyter_client.BlockingKernelClient(
        connection_file=str(runtime / f"kernel-{session['kernel']['id']}.json")
    )
    client.load_connection_file()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=30)
        reply = client.execute(expression, user_expressions={"value": expression}, silent=True,
                               reply=True, timeout=30)
        return reply["content"]["user_expressions"]["value"]["data"]["text/plain"]
    finally:
        client.stop_channels()


def test_tutorial_03_widgets_render_and_react_in_chromium(lab, artifacts: Path):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (scripts/test does, "
                    "with apt-get) to run the real-browser test")
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        pytest.fail("the playwright package is missing: pip install -e '.[dev]'")
    url, token, _root, runtime = lab
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            user_data_dir=str(artifacts.parent / "chromium-profile"),
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1600},
        )
        page = context.pages[0] if context.pages else context.new_page()
        page.set_default_timeout(60_000)
        page.add_locator_handler(
            page.locator(".jp-Dialog").filter(has_text="Select Kernel"),
            lambda: page.locator(".jp-Dialog button").filter(has_text="Select").last.click(),
        )
        try:
            page.goto(f"{url}/lab/tree/{NOTEBOOK.name}?token={token}")
            expect(page.locator("#jp-main-statusbar")).to_contain_text("| Idle", timeout=90_000)
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

            # the last code cell prints the legacy rule's answer: everything ran
            outputs = page.locator(".jp-OutputArea-output")
            expect(outputs.filter(has_text="legacy rule: C1")).to_have_count(1, timeout=90_000)
            stderr = "[data-mime-type='application/vnd.jupyter.stderr']"
            expect(page.locator(f".jp-OutputArea-output{stderr}")).to_have_count(0)
            plots = page.locator(".js-plotly-plot")
            expect(plots).to_have_count(2)  # the auto-split view and the sticky view
            first = plots.first
            expect(first.locator(".gtitle")).to_contain_text("4 consumer(s)")
            expect(first.locator("g.trace.bars g.point")).to_have_count(4)
            expect(plots.nth(1).locator("g.trace.bars g.point")).to_have_count(4)  # 2 × 2 ranges
            view = page.locator(".widget-vbox").filter(has=first).first
            expect(view.locator("button.jupyter-button")).not_to_have_count(0)
            first.scroll_into_view_if_needed()
            page.screenshot(path=str(artifacts / "01_rendered.png"))
            view.screenshot(path=str(artifacts / "01_view.png"))

            # what-if: type a name and press "add" — the kernel splits C3's range
            name_box = view.locator(".widget-text").filter(has_text="consumer").locator("input")
            name_box.first.fill("C5")
            name_box.first.press("Tab")
            view.locator("button.jupyter-button", has_text=re.compile(r"^\s*add$")).first.click()
            expect(first.locator(".gtitle")).to_contain_text("5 consumer(s)", timeout=30_000)
            expect(first.locator("g.trace.bars g.point")).to_have_count(5)
            page.wait_for_timeout(800)  # let the 500 ms range animation finish for the picture
            first.scroll_into_view_if_needed()
            page.screenshot(path=str(artifacts / "02_after_add.png"))
            view.screenshot(path=str(artifacts / "02_view.png"))

            names = _kernel_eval(url, token, runtime, "whatif.consumer_names")
            assert "C5" in names, names
            ranges = _kernel_eval(url, token, runtime, "len(view.ranges)")
            assert ranges == "5"
        except Exception:
            page.screenshot(path=str(artifacts / "99_failure.png"))
            raise
        finally:
            context.close()
