"""R-NOTEBOOKS Binder: the tutorials run in the environment Binder builds, built as it does.

repo2docker installs ``binder/requirements.txt`` into the image's Python, copies the
repository and runs ``binder/postBuild`` (a plain ``pip install --no-deps .``, the kernel
config, JupyterLab's defaults); every container starts through ``binder/start``. This test
does the same on this machine's Python (3.11, as ``runtime.txt`` asks) in a fresh venv that
is never activated, with a fresh ``$HOME``, on a copy of the files a build sees, and runs
tutorials 01, 12 (Spark) and 14 (the official client) there under nbval. Only nbval and
pytest are added after the build, as test tools. The requirements are installed as
Binder does, but from a local wheelhouse (``pip_install`` in ``tests/conftest.py``: this
registry's answers are not kept in pip's HTTP cache), so only the first run downloads; the
duration of each phase is printed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ("01-getting-started", "12-spark", "14-official-client")
BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md", "pyspark_pulsarlab.py", "binder",
                "broker", "kernel_ext", "widgets", "notebooks")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, (
        f"{command[:4]} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return done


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_tutorials_01_12_14_run_in_binders_environment(tmp_path: Path, pip_install) -> None:
    if shutil.which("java") is None:
        pytest.fail("java is missing: Binder installs openjdk-17 (binder/apt.txt); so must this "
                    "machine (scripts/test does)")
    started = time.monotonic()
    repo = tmp_path / "repo"
    for name in BUILD_INPUTS:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=_IGNORE)
        else:
            repo.mkdir(exist_ok=True)
            shutil.copy2(source, repo / name)
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    home = tmp_path / "home"
    home.mkdir()
    env = {key: value for key, value in os.environ.items()
           if key not in ("VIRTUAL_ENV", "PYTHONPATH", "IPYTHONDIR", "JUPYTER_CONFIG_DIR",
                          "JUPYTER_DATA_DIR", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env.update({"HOME": str(home), "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
                "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PLOTLY_RENDERER": "plotly_mimetype"})
    python = str(venv / "bin" / "python")

    # 1. what repo2docker runs before copying the repository
    pip_install(python, ["-r", "binder/requirements.txt"], cwd=repo, env=env, timeout=1500)
    installed = time.monotonic()
    # 2. the repository, then postBuild (bash, as the Dockerfile's RUN does)
    _run(["bash", str(repo / "binder" / "postBuild")], cwd=repo, env=env, timeout=600)
    built = time.monotonic()
    probe = _run([python, "-c", "import pulsarlab, pulsar; print(pulsarlab.__file__)"],
                 cwd=tmp_path, env=env)
    assert str(venv) in probe.stdout, probe.stdout  # the installed copy, not the checkout
    settings = venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    assert '"saveState": true' in settings.read_text()

    # 3. test tools only, at the versions this suite runs with
    pip_install(python, [f"nbval=={metadata.version('nbval')}",
                         f"pytest=={metadata.version('pytest')}"], cwd=repo, env=env,
                timeout=600)
    notebooks = [str(repo / "notebooks" / f"{name}.ipynb") for name in TUTORIALS]
    run = subprocess.run(
        ["bash", str(repo / "binder" / "start"), python, "-m", "pytest", "--nbval",
         "--nbval-current-env", "--nbval-sanitize-with", "notebooks/sanitize.cfg",
         "--nbval-cell-timeout", "300", "-p", "no:cacheprovider", "-q", "-o", "addopts=",
         "--rootdir", str(repo), *notebooks],
        cwd=repo, env=env, capture_output=True, text=True, timeout=1500,
    )
    done = time.monotonic()
    print(f"binder environment: requirements {installed - started:.0f} s, postBuild "
          f"{built - installed:.0f} s, nbval 01/12/14 {done - built:.0f} s, "
          f"total {done - started:.0f} s")
    assert run.returncode == 0, run.stdout[-8000:] + run.stderr[-3000:]
    assert " passed" in run.stdout and "failed" not in run.stdout, run.stdout[-3000:]
