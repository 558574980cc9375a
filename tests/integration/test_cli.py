"""The ``pulsarlab`` command: one-line errors and a non-zero exit on bad input."""

import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pulsarlab.broker.cli", *args],
        capture_output=True, text=True, timeout=60,
    )


def test_broker_once_reports_urls(tmp_path):
    result = run("broker", "--data-dir", str(tmp_path / "d"), "--port", "0", "--once")
    assert result.returncode == 0, result.stderr
    assert '"service_url": "zmq://127.0.0.1:' in result.stdout


def test_unknown_setting_is_one_line_error():
    result = run("broker", "--storage", "memory", "--port", "0", "--set", "nope=1", "--once")
    assert result.returncode == 2
    assert result.stderr.strip() == "pulsarlab: error: unknown broker setting 'nope'"


def test_help_everywhere():
    assert run("--help").returncode == 0
    assert "--data-dir" in run("broker", "--help").stdout
