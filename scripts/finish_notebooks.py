"""Make executed tutorials fit to commit: no nbconvert timings, and a picture for every view.

``nbconvert --execute`` (with ``store_widget_state=False``) leaves each displayed view as a
bundle of a widget reference, its static SVG and a one-line text (a progress bar: the
reference and its last line). Without saved widget state a reference can never be drawn
(JupyterLab says "model not found", GitHub and nbviewer draw nothing), so it is dropped:
the committed output is the view's picture of the step its cell pinned, or the bar's line.
A kernel run replaces them with the live widgets again.

Usage: ``python scripts/finish_notebooks.py notebooks/NN-name.ipynb ...``
"""

from __future__ import annotations

import sys

import nbformat

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def finish(path: str) -> int:
    """Finish one notebook in place; returns how many widget references it dropped."""
    book = nbformat.read(path, as_version=4)
    dropped = 0
    for cell in book.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata.pop("execution", None)
        for output in cell.get("outputs", []):
            data = output.get("data") or {}
            if WIDGET_VIEW in data:
                del data[WIDGET_VIEW]
                dropped += 1
    nbformat.write(book, path)
    return dropped


def main(paths: list[str]) -> int:
    for path in paths:
        print(f"{path}: {finish(path)} widget reference(s) dropped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
