"""Run every tutorial in ``notebooks/`` under nbval and compare its outputs.

nbval runs in a child pytest so that ``--nbval`` applies to the notebooks only (the other
suites keep their own options) and so that a kernel that misbehaves cannot take this
process down with it. The child uses this interpreter's environment as the kernel
(``--nbval-current-env``), the sanitizers of ``notebooks/sanitize.cfg``, and plotly's
mimetype renderer so figures are compared as JSON, not as HTML with random ids.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
SANITIZE = NOTEBOOKS / "sanitize.cfg"


def _notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))


def test_there_are_tutorials():
    names = [path.name for path in _notebooks()]
    assert "01-getting-started.ipynb" in names
    assert "03-key-shared-hash-ranges.ipynb" in names


@pytest.mark.parametrize("notebook", _notebooks(), ids=lambda path: path.stem)
def test_notebook_is_committed_with_outputs_but_no_widget_state(notebook: Path):
    import nbformat

    book = nbformat.read(notebook, as_version=4)
    # executed with --ExecutePreprocessor.store_widget_state=False: no saved widget models
    assert "widgets" not in book.metadata
    code = [cell for cell in book.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), "every code cell must have been executed"
    assert not any("execution" in cell.metadata for cell in code), "drop nbconvert's timings"
    assert notebook.stat().st_size < 200_000
    text = notebook.read_text()
    # No path of the machine that executed it (the checkout, the home directory).
    for local in {str(ROOT), str(Path.home())}:
        assert local + "/" not in text, f"{notebook.name} contains the local path {local}"
    sources = "\n".join(cell.source for cell in code)
    if "Broker(" in sources or "%pulsar start" in sources:
        assert "stop" in code[-1].source, "the last code cell stops the broker"
    markdown = [cell.source for cell in book.cells if cell.cell_type == "markdown"]
    assert "## Try this" in markdown[-1], "every tutorial ends with a few 'try this' ideas"


VIEW_REPR = re.compile(r"\w+\(children=")
"""What ipywidgets prints for a box it cannot draw: never in a committed output."""
VIEW_TEXT = re.compile(r"^<(picture of )?(\w*View|Dashboard|RedeliveryTimeline)\b")
"""The one-line text/plain of a pulsarlab view or of a still of one (class, step, title)."""


@pytest.mark.parametrize("notebook", _notebooks(), ids=lambda path: path.stem)
def test_committed_views_are_pictures_not_reprs(notebook: Path):
    import nbformat

    book = nbformat.read(notebook, as_version=4)
    for number, cell in enumerate(book.cells):
        if cell.cell_type != "code":
            continue
        for output in cell.outputs:
            data = output.get("data") or {}
            text = data.get("text/plain", "") or output.get("text", "")
            where = f"{notebook.name} cell {number}"
            assert not VIEW_REPR.search(text), f"{where} shows a raw widget repr: {text[:80]}"
            assert "application/vnd.jupyter.widget-view+json" not in data, (
                f"{where} keeps a widget reference that cannot render without saved state "
                "(run scripts/execute-notebooks)"
            )
            if VIEW_TEXT.match(text):
                assert data.get("image/svg+xml", "").startswith("<svg"), f"{where}: no picture"
                assert "data:image/svg+xml," in data.get("text/html", ""), where


def _groups() -> list[list[Path]]:
    """The notebooks dealt round-robin into one group per CPU (at most 4): each group is one
    child ``pytest --nbval`` (a fresh kernel per notebook), and the groups run in parallel."""
    count = max(1, min(os.cpu_count() or 1, 4, len(_notebooks())))
    return [_notebooks()[start::count] for start in range(count)]


def _group_id(group: list[Path]) -> str:
    return "+".join(path.stem[:2] for path in group)


@pytest.fixture(scope="module")
def nbval_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.Popen[str]]:
    """All groups' child runs, started at once."""
    env = dict(os.environ)
    env["PLOTLY_RENDERER"] = "plotly_mimetype"
    env.pop("VSCODE_PID", None)
    env["IPYTHONDIR"] = str(tmp_path_factory.mktemp("ipython"))  # no user profile or startup
    env["MPLBACKEND"] = "Agg"
    runs = {}
    for group in _groups():
        command = [
            sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env",
            "--nbval-sanitize-with", str(SANITIZE), "--nbval-cell-timeout", "120",
            "-p", "no:cacheprovider", "-q", "-o", "addopts=", "--rootdir", str(ROOT),
            *[str(path) for path in group],
        ]
        runs[_group_id(group)] = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True,
        )
    yield runs
    for run in runs.values():
        if run.poll() is None:
            run.kill()
            run.wait()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("group", _groups(), ids=_group_id)
def test_notebooks_pass_nbval(group: list[Path], nbval_runs: dict[str, subprocess.Popen[str]]):
    run = nbval_runs[_group_id(group)]
    try:
        output, _ = run.communicate(timeout=540)
    except subprocess.TimeoutExpired:
        run.kill()
        output, _ = run.communicate()
        pytest.fail(f"nbval took over 9 minutes:\n{output[-20000:]}")
    assert run.returncode == 0, output[-20000:]
