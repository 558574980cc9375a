"""Packaging: a plain (non-editable) wheel installs into a fresh venv and imports."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "-w", str(out), str(ROOT)],
        check=True, capture_output=True, text=True,
    )
    (path,) = out.glob("pulsarlab-*.whl")
    return path


def test_wheel_has_one_namespace(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.startswith("pulsarlab-")}
    assert top == {"pulsarlab", "pyspark_pulsarlab.py"}  # PySpark finds pyspark_* modules
    assert "pulsarlab/broker/service.py" in names
    assert "pulsarlab/broker/storage/durable.py" in names
    assert "pulsarlab/widgets/__init__.py" in names
    # Every package of the source tree is in the wheel (pyproject lists them one by one).
    roots = {"kernel_ext": "pulsarlab", "broker": "pulsarlab/broker",
             "widgets": "pulsarlab/widgets"}
    for source, installed in roots.items():
        for init in sorted((ROOT / source).rglob("__init__.py")):
            relative = init.relative_to(ROOT / source).as_posix()
            assert f"{installed}/{relative}" in names, f"{source}/{relative} not packaged"


def test_wheel_installs_and_runs_in_a_fresh_venv(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", str(venv)], check=True
    )
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheel)],
        check=True, capture_output=True, text=True,
    )
    code = (
        "import pulsarlab.broker as b, pulsarlab, sys;"
        "assert 'site-packages' in b.__file__, b.__file__;"
        "from pulsarlab.broker.storage import MemoryStorage;"
        "s = b.BrokerService(MemoryStorage(), b.ManualClock());"
        "p = s.create_producer('t');"
        "s.send(p.producer_id, b.MessageMetadata(), b'hi'); s.commit();"
        "print(len(s.take_actions()))"
    )
    result = subprocess.run(
        [str(python), "-c", code], check=True, capture_output=True, text=True, cwd=tmp_path
    )
    assert result.stdout.strip() == "1"
    cli = subprocess.run(
        [str(venv / "bin" / "pulsarlab"), "broker", "--storage", "memory", "--port", "0",
         "--pulsar-port", "0", "--web-port", "0", "--once"],
        check=True, capture_output=True, text=True, cwd=tmp_path,
    )
    assert '"status": "ready"' in cli.stdout
