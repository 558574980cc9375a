"""Fixtures of the real-browser tests: one JupyterLab and one Chromium for the whole module.

``lab`` serves output-free copies of every tutorial; ``page`` is a fresh browser tab per test
(its notebook's kernel is shut down afterwards); ``artifacts`` is where screenshots go:
``$PULSARLAB_ARTIFACTS_DIR/browser/<test>`` (default: the test's temp dir). A failing test
also leaves ``99_failure.png`` there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .lab import CHROMIUM, CHROMIUM_ARGS, Lab, require_browser, running_lab

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_FAILED] = report.failed
    return report


_FAILED = pytest.StashKey[bool]()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with running_lab(tmp_path_factory.mktemp("lab"), TUTORIALS) as server:
        yield server


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            user_data_dir=str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1600},
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def artifacts(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    base = os.environ.get("PULSARLAB_ARTIFACTS_DIR")
    name = request.node.name.removeprefix("test_")
    path = Path(base) / "browser" / name if base else tmp_path / "artifacts"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def page(request: pytest.FixtureRequest, browser: Any, lab: Lab, artifacts: Path) -> Iterator[Any]:
    from .lab import shutdown_kernel

    tab = browser.new_page()
    tab.set_default_timeout(60_000)
    try:
        yield tab
        if request.node.stash.get(_FAILED, False):
            tab.screenshot(path=str(artifacts / "99_failure.png"))
    finally:
        tab.close()
        for session in lab.api("sessions"):
            shutdown_kernel(lab, Path(session["path"]).name)
