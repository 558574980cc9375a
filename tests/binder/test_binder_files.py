"""R-NOTEBOOKS Binder: the repo2docker configuration is well formed (checked offline)."""

import os
import re
from pathlib import Path

BINDER = Path(__file__).resolve().parents[2] / "binder"


def test_runtime_pins_python_311():
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.11"


def test_java_17_for_pyspark():
    assert "openjdk-17" in (BINDER / "apt.txt").read_text()


def test_requirements_are_pinned():
    lines = [
        line.strip() for line in (BINDER / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines and all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", x) for x in lines)
    names = {x.split("==")[0] for x in lines}
    assert {"jupyterlab", "ipywidgets", "plotly", "pyspark", "pyzmq", "mmh3"} <= names


def test_scripts_have_shebang_lf_and_exec_bit():
    for name in ("postBuild", "start"):
        path = BINDER / name
        data = path.read_bytes()
        assert data.startswith(b"#!/bin/bash\n"), name
        assert b"\r\n" not in data, name
        assert os.access(path, os.X_OK), name


def test_start_execs_the_command_and_post_build_installs_the_package():
    assert 'exec "$@"' in (BINDER / "start").read_text()
    post = (BINDER / "postBuild").read_text()
    assert "set -euo pipefail" in post and "pip install" in post and "pulsarlab" in post


def test_readme_has_a_binder_badge_opening_the_tutorials():
    readme = (BINDER.parent / "README.md").read_text()
    badge = re.search(
        r"\[!\[Binder\]\(https://mybinder\.org/badge_logo\.svg\)\]"
        r"\((https://mybinder\.org/v2/gh/[^/\s]+/[^/\s]+/[^?\s]+)\?urlpath=([^)\s]+)\)",
        readme,
    )
    assert badge, "README.md needs a Binder badge: [![Binder](...badge_logo.svg)](...)"
    assert badge.group(1).endswith("/pulsarlab/HEAD")
    assert badge.group(2) == "lab/tree/notebooks"
