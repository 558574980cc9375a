"""``pulsarlab kernel install|uninstall``: a kernelspec whose kernels load the extension."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pulsarlab.broker.cli import main
from pulsarlab.kernelspec import CONFIG_LINE, install, kernel_argv

pytest.importorskip("ipykernel")


def test_cli_install_and_uninstall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    prefix = tmp_path / "env"
    assert main(["kernel", "install", "--prefix", str(prefix)]) == 0
    spec_dir = prefix / "share" / "jupyter" / "kernels" / "pulsarlab"
    assert f"installed kernelspec 'pulsarlab' in {spec_dir}" in capsys.readouterr().out
    spec = json.loads((spec_dir / "kernel.json").read_text())
    assert spec["argv"][0] == sys.executable
    assert spec["argv"][-3:] == ["-f", "{connection_file}", "--ext=pulsarlab"]
    assert spec["argv"][spec["argv"].index("-m") + 1] == "ipykernel_launcher"
    assert spec["argv"] == kernel_argv()
    assert spec["display_name"] == "Python 3 (pulsarlab)"
    assert spec["language"] == "python"
    assert (spec_dir / "logo-64x64.png").exists()

    monkeypatch.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))
    assert main(["kernel", "uninstall"]) == 0
    assert "removed kernelspec 'pulsarlab'" in capsys.readouterr().out
    assert not spec_dir.exists()
    assert main(["kernel", "uninstall"]) == 2
    assert "no kernelspec named 'pulsarlab' is installed" in capsys.readouterr().err


def test_install_options(tmp_path: Path) -> None:
    path = install(prefix=str(tmp_path), name="pl-test", display_name="PL")
    spec = json.loads((Path(path) / "kernel.json").read_text())
    assert Path(path).name == "pl-test" and spec["display_name"] == "PL"
    with pytest.raises(ValueError, match="choose one of"):
        install(user=True, prefix=str(tmp_path))


def test_cli_help_mentions_the_config_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["kernel", "--help"])
    assert "ipython_kernel_config.py" in capsys.readouterr().out
    assert CONFIG_LINE == 'c.InteractiveShellApp.extensions = ["pulsarlab"]'
