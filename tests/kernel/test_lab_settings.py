"""JupyterLab defaults written by ``python -m pulsarlab.lab_settings`` (scripts/run, Binder)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pulsarlab.lab_settings import OVERRIDES, overrides_path, write_overrides


def test_widget_state_is_saved_and_news_is_off():
    assert OVERRIDES["@jupyter-widgets/jupyterlab-manager:plugin"] == {"saveState": True}
    assert OVERRIDES["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"


def test_overrides_are_merged_into_existing_settings(tmp_path):
    path = overrides_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({
        "@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"},
        "@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": False, "other": 1},
    }))
    assert write_overrides(tmp_path) == path
    written = json.loads(path.read_text())
    assert written["@jupyterlab/apputils-extension:themes"] == {"theme": "JupyterLab Dark"}
    assert written["@jupyter-widgets/jupyterlab-manager:plugin"] == {"saveState": True,
                                                                      "other": 1}
    assert write_overrides(tmp_path) == path  # idempotent
    assert json.loads(path.read_text()) == written


def test_broken_settings_file_is_one_line(tmp_path):
    path = overrides_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(SystemExit) as raised:
        write_overrides(tmp_path)
    assert str(raised.value).startswith(f"pulsarlab: error: {path} is not JSON")
    assert "\n" not in str(raised.value)


def test_scripts_run_writes_them_into_the_venv_it_serves_from():
    """scripts/run's JupyterLab reads {sys.prefix}/share/jupyter/lab/settings/overrides.json
    of .venv: the module run as scripts/run runs it lands there."""
    run = subprocess.run([sys.executable, "-m", "pulsarlab.lab_settings"],
                         capture_output=True, text=True, timeout=60, check=True)
    assert str(overrides_path(sys.prefix)) in run.stdout
    written = json.loads(overrides_path(sys.prefix).read_text())
    assert written["@jupyter-widgets/jupyterlab-manager:plugin"]["saveState"] is True
