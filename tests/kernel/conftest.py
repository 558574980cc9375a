"""Fixtures for the magics: one IPython shell with the extension, a memory broker per test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config


@dataclass
class Ran:
    """What one cell did: the ExecutionResult and what it printed."""

    result: Any
    out: str

    @property
    def success(self) -> bool:
        return bool(self.result.success)

    @property
    def value(self) -> Any:
        return self.result.result


@pytest.fixture(scope="session")
def ip(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InteractiveShell]:
    """The session's InteractiveShell (history in memory, IPYTHONDIR in a temp dir)."""
    saved = os.environ.get("IPYTHONDIR")
    os.environ["IPYTHONDIR"] = str(tmp_path_factory.mktemp("ipython"))
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    shell.run_line_magic("load_ext", "pulsarlab")
    yield shell
    shell.run_line_magic("unload_ext", "pulsarlab")
    if saved is None:
        os.environ.pop("IPYTHONDIR", None)
    else:
        os.environ["IPYTHONDIR"] = saved


@pytest.fixture
def run(ip: InteractiveShell, capsys: pytest.CaptureFixture[str]):
    """``run("%pulsar …")`` → :class:`Ran` (output captured per cell)."""

    def run_cell(code: str) -> Ran:
        capsys.readouterr()
        result = ip.run_cell(code)
        return Ran(result, capsys.readouterr().out)

    return run_cell


@pytest.fixture
def runtime(ip: InteractiveShell):
    from pulsarlab.magics import get_runtime

    rt = get_runtime()
    assert rt is not None
    yield rt
    rt.shutdown()


@pytest.fixture
def broker(ip: InteractiveShell, runtime: Any, run) -> Iterator[Any]:
    """A memory broker started by ``%pulsar start --memory``; stopped after the test."""
    ran = run("%pulsar start --memory")
    assert ran.success, ran.out
    yield runtime
    ip.run_line_magic("pulsar", "stop")
