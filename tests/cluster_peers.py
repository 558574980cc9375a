"""Brokers and clients the cluster tests run against, beside pulsarlab's in-process broker.

- :func:`pulsar_lite`: a pulsar-lite process (a Pulsar-protocol broker not written here, the
  dev extra); it speaks pulsar:// only (no admin REST API).
- :func:`broker_process`: ``pulsarlab broker`` in its own process, reached only through its
  pulsar:// and http:// listeners, as a remote cluster is.
- :func:`block_official_client`: the official ``pulsar-client`` made unavailable in this
  process (``import pulsar`` raises ``ModuleNotFoundError``, as where it is not installed);
  :func:`official_blocker_dir` does the same for another Python process (a directory to put
  first on its ``PYTHONPATH``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

OFFICIAL_MODULES = ("pulsar", "_pulsar")


def block_official_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """Until ``monkeypatch`` undoes it: ``import pulsar`` / ``import _pulsar`` fail with
    ``ModuleNotFoundError`` (named), and no already imported copy is reachable."""
    for name in list(sys.modules):
        if name in OFFICIAL_MODULES or name.startswith("pulsar."):
            monkeypatch.delitem(sys.modules, name)
    for name in OFFICIAL_MODULES:
        monkeypatch.setitem(sys.modules, name, None)


def official_blocker_dir(path: Path) -> Path:
    """A directory whose ``pulsar`` and ``_pulsar`` packages raise ``ModuleNotFoundError``
    when imported: first on a process's ``PYTHONPATH``, it hides the installed client."""
    for name in OFFICIAL_MODULES:
        package = path / name
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text(
            f"raise ModuleNotFoundError(\"No module named '{name}' (hidden by the tests)\", "
            f"name={name!r})\n"
        )
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen) -> None:
    while True:  # bounded by the process: it exits if it cannot listen
        if proc.poll() is not None:
            raise RuntimeError(f"pulsar-lite exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)


@contextlib.contextmanager
def pulsar_lite(default_partitions: int | None = None) -> Iterator[str]:
    """A pulsar-lite process on a free port; yields its ``pulsar://`` URL (skips the test
    when the dev extra that installs it is missing). With ``default_partitions`` (its config
    file's key), every topic it creates on first use is partitioned — pulsar-lite has no admin
    API to create a partitioned topic otherwise."""
    binary_finder = pytest.importorskip(
        "pulsar_lite.binary_finder", reason="pulsar-lite (the dev extra) is not installed")
    scratch = tempfile.mkdtemp(prefix="pulsar-lite-")
    binary = binary_finder.find_pulsar_lite_binary()
    if not os.access(binary, os.X_OK):
        binary = shutil.copy(binary, os.path.join(scratch, "pulsar-lite"))
        os.chmod(binary, 0o755)
    port = free_port()
    config = os.path.join(scratch, "pulsar-lite.toml")
    with open(config, "w") as f:
        if default_partitions is not None:
            f.write(f"default_partitions = {int(default_partitions)}\n")
    proc = subprocess.Popen(
        [binary, "--config", config, "--addr", f"127.0.0.1:{port}", "--db-path",
         os.path.join(scratch, "data"), "--log-level", "error"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port, proc)
        yield f"pulsar://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def broker_process(scratch: Path, **settings: Any) -> Iterator[Any]:
    """``pulsarlab broker`` in a subprocess (durable, in ``scratch``); yields its
    :class:`~faults.support.BrokerProcess` (``report["pulsar_url"]``, ``web_url``)."""
    from faults.support import BrokerProcess

    process = BrokerProcess(scratch / "data", settings).start()
    try:
        yield process
    finally:
        process.stop()
