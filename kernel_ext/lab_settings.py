"""JupyterLab defaults for pulsarlab: widget state saved with notebooks, no news pop-up.

Without saved widget state a notebook that was run and saved shows "Error displaying
widget: model not found" where each view was once reopened (the live models die with the
kernel). ``@jupyter-widgets/jupyterlab-manager``'s ``saveState`` writes the models into the
notebook on save, so JupyterLab (and nbviewer) draw them again. The cost: each plotly
``FigureWidget`` saves its 5 MB widget bundle (``_esm``) with it. JupyterLab's news pop-up asks
to reach the internet on first start: ``fetchNews`` off.

``python -m pulsarlab.lab_settings`` merges :data:`OVERRIDES` into JupyterLab's
``overrides.json`` of this environment (``{sys.prefix}/share/jupyter/lab/settings``), the
defaults every user of it starts from (their own settings still win). ``./scripts/run`` and
Binder's ``postBuild`` run it; pip users can too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["OVERRIDES", "overrides_path", "write_overrides"]

OVERRIDES: dict[str, dict[str, Any]] = {
    "@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True},
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false",
                                                    "checkForUpdates": False},
}


def overrides_path(prefix: str | Path = sys.prefix) -> Path:
    """JupyterLab's ``overrides.json`` of the environment at ``prefix``."""
    return Path(prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"


def write_overrides(prefix: str | Path = sys.prefix) -> Path:
    """Merge :data:`OVERRIDES` into ``prefix``'s ``overrides.json`` (other keys are kept)."""
    path = overrides_path(prefix)
    current: dict[str, Any] = {}
    if path.is_file():
        try:
            current = json.loads(path.read_text() or "{}")
        except json.JSONDecodeError as exc:
            raise SystemExit(f"pulsarlab: error: {path} is not JSON ({exc}); fix or remove "
                             "it") from None
    for plugin, values in OVERRIDES.items():
        current.setdefault(plugin, {}).update(values)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(current, indent=2) + "\n")
    return path


if __name__ == "__main__":
    try:
        print(f"JupyterLab settings: {write_overrides()}")
    except OSError as exc:
        raise SystemExit(f"pulsarlab: error: cannot write JupyterLab's settings: {exc}") from None
