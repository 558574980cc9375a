"""R-NOTEBOOKS Binder: the repo2docker configuration is well formed (checked offline)."""

import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"


def test_runtime_pins_python_311():
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.11"


def test_java_17_for_pyspark():
    assert "openjdk-17" in (BINDER / "apt.txt").read_text()


def test_requirements_are_pinned():
    lines = [
        line.strip() for line in (BINDER / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines and all(
        re.fullmatch(r"[A-Za-z0-9_.-]+(\[[a-z,]+\])?==[0-9][0-9A-Za-z.]*", x) for x in lines
    )
    names = {x.split("==")[0] for x in lines}
    assert {"jupyterlab", "ipywidgets", "plotly", "pyspark", "pyzmq", "mmh3", "protobuf",
            "google-crc32c", "pulsar-client"} <= names


def test_requirements_are_generated_from_pyproject_and_have_not_drifted():
    """binder/requirements.txt is what scripts/binder_requirements.py writes from
    pyproject.toml and this environment's versions: a dependency added to pyproject.toml, or
    an upgrade the tests ran with, without regenerating it fails here."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "binder_requirements.py"), "--check"],
        capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_every_declared_dependency_is_in_the_requirements():
    spec = importlib.util.spec_from_file_location(
        "binder_requirements", ROOT / "scripts" / "binder_requirements.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pinned = {line.split("==")[0].lower()
              for line in (BINDER / "requirements.txt").read_text().splitlines()
              if "==" in line}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for requirement in project["dependencies"] + [
        r for extra in ("jupyter", "spark", "ops") for r in project["optional-dependencies"][extra]
    ]:
        assert module._name(requirement).lower() in pinned, requirement


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
    # a plain install (what pip users get), dependencies only from requirements.txt
    assert re.search(r"pip install .*--no-deps \.$", post, re.MULTILINE), post
    assert "python -m pulsarlab.lab_settings" in post  # widget state saved, no news


def _setup_module():
    spec = importlib.util.spec_from_file_location("pulsarlab_setup", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # setup() runs only under __main__
    return module


def test_readme_explains_the_binder_url_and_names_no_owner():
    """The repository's README cannot know which fork serves it: no OWNER placeholder, no
    made-up owner; it says how the URL is formed, and the PyPI page gets the real badge."""
    readme = (ROOT / "README.md").read_text()
    assert "OWNER" not in readme
    assert "mybinder.org/v2/gh/" not in re.sub(r"`[^`]*`", "", readme), "a badge with an owner"
    assert "`https://mybinder.org/v2/gh/<owner>/<repo>/HEAD?urlpath=lab/tree/notebooks`" in readme
    assert "<!-- binder-badge -->" in readme


def test_pypi_readme_gets_the_badge_of_the_repository_it_was_built_from():
    setup = _setup_module()
    readme = (ROOT / "README.md").read_text()
    text = setup.pypi_readme(readme, "https://github.com/someone/pulsarlab")
    assert ("[![Binder](https://mybinder.org/badge_logo.svg)](https://mybinder.org/v2/gh/"
            "someone/pulsarlab/HEAD?urlpath=lab/tree/notebooks)") in text
    assert "(https://github.com/someone/pulsarlab/blob/HEAD/ARCHITECTURE.md)" in text
    relative = [m for m in re.findall(r"\]\(([^)\s]+)\)", text)
                if not m.startswith(("http://", "https://", "#"))]
    assert relative == [], relative
    # unknown repository: no badge, and a relative link keeps only its text
    bare = setup.pypi_readme(readme, None)
    assert "mybinder.org/badge" not in bare and "](ARCHITECTURE.md)" not in bare
    assert setup.project_urls(None) == {}
    assert setup.project_urls("https://github.com/someone/pulsarlab")["Binder"].startswith(
        "https://mybinder.org/v2/gh/someone/pulsarlab/HEAD")


def test_repository_url_forms(monkeypatch):
    setup = _setup_module()
    for given, expected in (("git@github.com:someone/pulsarlab.git",
                             "https://github.com/someone/pulsarlab"),
                            ("https://github.com/someone/pulsarlab.git/",
                             "https://github.com/someone/pulsarlab"),
                            ("not a url", None)):
        monkeypatch.setenv("PULSARLAB_REPOSITORY_URL", given)
        assert setup.repository_url() == expected
