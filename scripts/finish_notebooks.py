"""Make executed tutorials fit to commit: no nbconvert timings, a picture for every view,
and nbval's markers as cell tags, out of the reader's sight.

``nbconvert --execute`` (with ``store_widget_state=False``) leaves each displayed view as a
bundle of a widget reference, its static SVG and a one-line text (a progress bar: the
reference and its last line). Without saved widget state a reference can never be drawn
(JupyterLab says "model not found", GitHub and nbviewer draw nothing), so it is dropped:
the committed output is the view's picture of the step its cell pinned, or the bar's line.
A kernel run replaces them with the live widgets again.

A ``# NBVAL_IGNORE_OUTPUT`` line (and nbval's other comment markers) is test plumbing a
reader should not see: it becomes the cell tag nbval reads the same way
(``nbval-ignore-output``, ``nbval-check-output``, ``nbval-skip``; ``raises-exception``, which
JupyterLab's Run All honours too) and the comment line is removed. Only sources and tags
change; outputs stay as they are, so this can run on notebooks nobody re-executed.

Usage: ``python scripts/finish_notebooks.py notebooks/NN-name.ipynb ...``
"""

from __future__ import annotations

import sys

import nbformat

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
MARKER_TAGS = {
    "NBVAL_IGNORE_OUTPUT": "nbval-ignore-output",
    "PYTEST_VALIDATE_IGNORE_OUTPUT": "nbval-ignore-output",
    "NBVAL_CHECK_OUTPUT": "nbval-check-output",
    "NBVAL_SKIP": "nbval-skip",
    "NBVAL_RAISES_EXCEPTION": "raises-exception",
}
"""nbval's comment markers → the cell tags nbval treats the same (``nbval/plugin.py``)."""


def marker_of(line: str) -> str | None:
    """The nbval marker a source line is, read as nbval reads it (a whole ``#`` comment)."""
    stripped = line.strip()
    if not stripped.startswith("#"):
        return None
    comment = stripped.lstrip("#").strip()
    return comment if comment in MARKER_TAGS else None


def tag_markers(cell: dict) -> int:
    """Move a code cell's marker comments into its tags; returns how many it moved."""
    lines = cell.source.splitlines(keepends=True)
    kept = [line for line in lines if marker_of(line) is None]
    if len(kept) == len(lines):
        return 0
    tags = list(cell.metadata.get("tags", []))
    for line in lines:
        marker = marker_of(line)
        if marker is not None and MARKER_TAGS[marker] not in tags:
            tags.append(MARKER_TAGS[marker])
    cell.metadata["tags"] = tags
    cell.source = "".join(kept).rstrip("\n") if kept else ""
    return len(lines) - len(kept)


def finish(path: str) -> tuple[int, int]:
    """Finish one notebook in place; returns (widget references dropped, markers tagged)."""
    book = nbformat.read(path, as_version=4)
    dropped = tagged = 0
    for cell in book.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata.pop("execution", None)
        tagged += tag_markers(cell)
        for output in cell.get("outputs", []):
            data = output.get("data") or {}
            if WIDGET_VIEW in data:
                del data[WIDGET_VIEW]
                dropped += 1
    nbformat.write(book, path)
    return dropped, tagged


def main(paths: list[str]) -> int:
    for path in paths:
        dropped, tagged = finish(path)
        print(f"{path}: {dropped} widget reference(s) dropped, {tagged} nbval marker(s) "
              "made cell tags")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
