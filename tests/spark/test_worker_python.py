"""Spark's Python workers must be able to import pulsarlab: a plain session finds
``format("pulsar")``, and a worker interpreter without pulsarlab is one clear error."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from pulsarlab.spark.options import PulsarSparkError
from pulsarlab.spark.worker_python import check_worker_python, worker_python


class Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


class Session:
    def __init__(self, **conf: str) -> None:
        self.conf = Conf(conf)


def test_the_configured_interpreter_wins(monkeypatch) -> None:
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/py/bin/python")
    assert worker_python() == "/opt/py/bin/python"
    assert worker_python(Session(**{"spark.pyspark.python": "/x/python"})) == "/x/python"
    monkeypatch.delenv("PYSPARK_PYTHON")
    assert worker_python() == "python3"


def test_this_interpreter_passes_without_a_probe(monkeypatch) -> None:
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    check_worker_python()


def test_an_interpreter_without_pulsarlab_is_one_line_naming_the_fix(monkeypatch,
                                                                     tmp_path) -> None:
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'pulsarlab'\" >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PYSPARK_PYTHON", str(fake))
    with pytest.raises(PulsarSparkError) as caught:
        check_worker_python()
    text = str(caught.value)
    assert "\n" not in text
    assert f"Spark's Python workers run {str(fake)!r}, which cannot import pulsarlab" in text
    assert "No module named 'pulsarlab'" in text
    assert f"PYSPARK_PYTHON={sys.executable}" in text


def test_plain_get_or_create_in_the_venv_python_finds_pulsar(broker, client, tmp_path) -> None:
    """``python`` of the venv, not activated, no pulsarlab import before Spark starts."""
    site = Path(sysconfig.get_paths()["purelib"])
    if not (site / "pulsarlab-pyspark-python.pth").exists():
        pytest.skip("this environment was not made by scripts/setup (no PYSPARK_PYTHON .pth)")
    with client.create_producer("plain-session") as producer:
        for i in range(3):
            producer.send(f"m{i}".encode())
    script = (
        "from pyspark.sql import SparkSession\n"
        "s = (SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false')\n"
        "     .config('spark.driver.bindAddress', '127.0.0.1')\n"
        "     .config('spark.driver.host', '127.0.0.1').getOrCreate())\n"
        f"df = (s.read.format('pulsar').option('service.url', {broker.service_url!r})\n"
        "      .option('topic', 'plain-session').load())\n"
        "print('ROWS', df.count())\n"
        "s.stop()\n"
    )
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if Path(p).resolve() != Path(sys.executable).parent.resolve())
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=240, cwd=tmp_path)
    assert "ROWS 3" in done.stdout, done.stderr[-2000:]


# -- default_worker_python: a venv that is not activated ----------------------------------------


def _fake_venv(monkeypatch, tmp_path, python3_on_path: str | None):
    from pulsarlab.spark import worker_python

    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.setattr(worker_python.sys, "prefix", str(tmp_path / "venv"))
    monkeypatch.setattr(worker_python.sys, "base_prefix", str(tmp_path / "base"))
    monkeypatch.setattr(worker_python.shutil, "which", lambda name: python3_on_path)
    return worker_python


def test_a_venv_used_without_activating_it_gets_its_own_python(monkeypatch, tmp_path):
    import sys

    module = _fake_venv(monkeypatch, tmp_path, "/usr/bin/python3")
    assert module.default_worker_python() == sys.executable
    assert os.environ["PYSPARK_PYTHON"] == sys.executable


def test_an_activated_venv_or_a_set_variable_is_left_alone(monkeypatch, tmp_path):
    module = _fake_venv(monkeypatch, tmp_path, str(tmp_path / "venv" / "bin" / "python3"))
    assert module.default_worker_python() is None
    assert "PYSPARK_PYTHON" not in os.environ
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/python3")
    monkeypatch.setattr(module.shutil, "which", lambda name: "/usr/bin/python3")
    assert module.default_worker_python() is None
    assert os.environ["PYSPARK_PYTHON"] == "/opt/python3"


def test_outside_a_venv_nothing_is_set(monkeypatch, tmp_path):
    module = _fake_venv(monkeypatch, tmp_path, "/usr/bin/python3")
    monkeypatch.setattr(module.sys, "base_prefix", module.sys.prefix)
    assert module.default_worker_python() is None
    assert "PYSPARK_PYTHON" not in os.environ
