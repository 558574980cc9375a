"""nbval's markers are cell tags, not ``# NBVAL_…`` comments a reader sees in the code.

``scripts/finish_notebooks.py`` (run by ``scripts/execute-notebooks``) moves each marker
comment into the tag nbval reads the same way; these tests pin that conversion and that no
committed tutorial still shows a marker.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
MARKER = re.compile(r"^\s*#+\s*(NBVAL_[A-Z_]+|PYTEST_VALIDATE_IGNORE_OUTPUT)\s*$", re.MULTILINE)


def _finisher():
    spec = importlib.util.spec_from_file_location("finish_notebooks",
                                                  ROOT / "scripts" / "finish_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_no_tutorial_shows_an_nbval_marker(notebook: Path):
    book = nbformat.read(notebook, as_version=4)
    for number, cell in enumerate(book.cells):
        assert not MARKER.search(cell.source), (
            f"{notebook.name} cell {number} shows an nbval marker comment: run "
            f"scripts/finish_notebooks.py {notebook.relative_to(ROOT)}")


def test_some_tutorials_carry_the_tags_instead():
    tagged = [path.name for path in NOTEBOOKS
              if any("nbval-ignore-output" in cell.metadata.get("tags", [])
                     for cell in nbformat.read(path, as_version=4).cells)]
    assert len(tagged) >= 8, tagged


def test_markers_become_tags_and_outputs_stay(tmp_path: Path):
    finisher = _finisher()
    book = nbformat.v4.new_notebook()
    output = nbformat.v4.new_output("stream", text="kept\n")
    book.cells = [
        nbformat.v4.new_code_cell("# NBVAL_IGNORE_OUTPUT\nview = make()\nview",
                                  outputs=[output], execution_count=1),
        nbformat.v4.new_code_cell("x = 1  # NBVAL_SKIP is only a marker on its own line\n"
                                  "## NBVAL_SKIP\n#NBVAL_RAISES_EXCEPTION",
                                  metadata={"tags": ["keep-me"]}),
        nbformat.v4.new_code_cell("print(1)"),
        nbformat.v4.new_markdown_cell("# NBVAL_IGNORE_OUTPUT in prose stays"),
    ]
    path = tmp_path / "t.ipynb"
    nbformat.write(book, path)
    assert finisher.finish(str(path)) == (0, 3)
    done = nbformat.read(path, as_version=4)
    first, second, third, prose = done.cells
    assert first.source == "view = make()\nview"
    assert first.metadata["tags"] == ["nbval-ignore-output"]
    assert first.outputs == [output] and first.execution_count == 1
    assert second.source == "x = 1  # NBVAL_SKIP is only a marker on its own line"
    assert second.metadata["tags"] == ["keep-me", "nbval-skip", "raises-exception"]
    assert third.source == "print(1)" and "tags" not in third.metadata
    assert prose.source == "# NBVAL_IGNORE_OUTPUT in prose stays"
    assert finisher.finish(str(path)) == (0, 0)  # idempotent


def test_nbval_reads_the_tags_as_it_read_the_comments():
    from nbval.plugin import find_comment_markers, find_metadata_tags

    finisher = _finisher()
    for marker, tag in finisher.MARKER_TAGS.items():
        assert dict(find_comment_markers(f"# {marker}")) == dict(
            find_metadata_tags({"tags": [tag]})), marker
