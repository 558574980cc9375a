"""R-NOTEBOOKS Binder: repo2docker itself renders the image's Dockerfile, offline.

``jupyter-repo2docker --no-build --debug`` picks the configuration up exactly as Binder does
and prints the Dockerfile it would build, without Docker and without the network: the test
points ``DOCKER_HOST`` at a socket that does not exist and every HTTP(S) proxy at a closed
loopback port, so a run that needed either would fail. It runs on a copy of the files the
build uses, from a scratch directory (repo2docker looks for a config file in its cwd).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(Dockerfile, log) as ``repo2docker --no-build --debug`` prints them."""
    if importlib.util.find_spec("repo2docker") is None:
        pytest.fail("jupyter-repo2docker is missing: pip install -e '.[dev]'")
    base = tmp_path_factory.mktemp("repo2docker")
    repo = base / "repo"
    shutil.copytree(ROOT / "binder", repo / "binder")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, repo / name)
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    closed = "http://127.0.0.1:9"
    env.update({"DOCKER_HOST": f"unix://{base}/no-docker.sock", "http_proxy": closed,
                "https_proxy": closed, "HTTP_PROXY": closed, "HTTPS_PROXY": closed})
    run = subprocess.run(
        [sys.executable, "-m", "repo2docker", "--no-build", "--debug", str(repo)],
        cwd=base, env=env, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr[-5000:]
    assert "FROM " in run.stdout, run.stdout[-5000:]
    return run.stdout, run.stderr


def _runs(dockerfile: str) -> list[str]:
    """The RUN instructions, continuation lines joined."""
    joined = re.sub(r"\\\n", " ", dockerfile)
    return [line.strip() for line in joined.splitlines() if line.strip().startswith("RUN ")]


def test_python_311_from_runtime_txt(rendered):
    _dockerfile, log = rendered
    assert "python=3.11" in log


def test_apt_installs_java_17(rendered):
    dockerfile, _log = rendered
    installs = [run for run in _runs(dockerfile) if "apt-get install" in run]
    assert any(re.search(r"\bopenjdk-17-jre-headless\b", run) for run in installs), installs


def test_pinned_requirements_are_installed_before_the_repository_is_copied(rendered):
    dockerfile, _log = rendered
    copy = dockerfile.index("binder/requirements.txt ${REPO_DIR}/binder/requirements.txt")
    install = re.search(r'RUN \S*pip install [^\n]*-r "?binder/requirements\.txt"?', dockerfile)
    assert install, dockerfile
    repository = dockerfile.index("COPY --chown=0:0 src/ ${REPO_DIR}/")
    assert copy < install.start() < repository


def test_post_build_runs_after_the_repository_is_copied(rendered):
    dockerfile, _log = rendered
    runs = _runs(dockerfile)
    assert "RUN ./binder/postBuild" in runs
    assert dockerfile.index("RUN ./binder/postBuild") > dockerfile.index("src/ ${REPO_DIR}/")


def test_start_script_is_the_entrypoint(rendered):
    dockerfile, _log = rendered
    assert 'ENV R2D_ENTRYPOINT="${REPO_DIR}/binder/start"' in dockerfile
    assert re.search(r'RUN chmod \+x "?\$\{REPO_DIR\}/binder/start"?', dockerfile)
