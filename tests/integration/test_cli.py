"""The ``pulsarlab`` command: one-line errors and a non-zero exit on bad input."""

import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pulsarlab.broker.cli", *args],
        capture_output=True, text=True, timeout=60,
    )


def test_broker_once_reports_urls(tmp_path):
    result = run("broker", "--data-dir", str(tmp_path / "d"), "--port", "0", "--pulsar-port", "0",
                 "--web-port", "0", "--once")
    assert result.returncode == 0, result.stderr
    assert '"service_url": "zmq://127.0.0.1:' in result.stdout
    assert '"pulsar_url": "pulsar://127.0.0.1:' in result.stdout
    assert '"web_url": "http://127.0.0.1:' in result.stdout


def test_unknown_setting_is_one_line_error():
    result = run("broker", "--storage", "memory", "--port", "0", "--pulsar-port", "0",
                 "--web-port", "0", "--set", "nope=1", "--once")
    assert result.returncode == 2
    assert result.stderr.strip() == "pulsarlab: error: unknown broker setting 'nope'"


def test_help_everywhere():
    assert run("--help").returncode == 0
    assert "--data-dir" in run("broker", "--help").stdout


def test_produce_consume_and_admin_against_a_broker():
    import json

    from pulsarlab import Broker

    with Broker(storage="memory") as broker:
        url, web = broker.service_url, broker.web_url
        made = run("admin", "topics", "create-partitioned-topic", "cli-t", "-p", "2",
                   "--admin-url", web)
        assert made.returncode == 0, made.stderr
        sub = run("admin", "topics", "create", "cli-plain", "--admin-url", web)
        assert sub.returncode == 0, sub.stderr
        produced = run("produce", "cli-plain", "-m", "hello", "-m", "world", "-n", "2",
                       "--url", url)
        assert produced.returncode == 0, produced.stderr
        assert "4 messages successfully produced" in produced.stdout
        consumed = run("consume", "cli-plain", "-s", "s1", "-n", "4", "-p", "Earliest",
                       "-t", "Shared", "--url", url)
        assert consumed.returncode == 0, consumed.stderr
        assert consumed.stdout.count("content:hello") == 2
        assert "4 messages successfully consumed" in consumed.stdout
        stats = run("admin", "topics", "stats", "cli-plain", "--admin-url", web)
        data = json.loads(stats.stdout)
        assert data["subscriptions"]["s1"]["msgBacklog"] == 0
        listed = json.loads(run("admin", "topics", "list", "--admin-url", web).stdout)
        assert "persistent://public/default/cli-t" in listed


def test_admin_error_is_one_line():
    from pulsarlab import Broker

    with Broker(storage="memory") as broker:
        result = run("admin", "topics", "stats", "nope", "--admin-url", broker.web_url)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "not found" in result.stderr


def test_admin_with_a_zeromq_url_says_what_to_pass():
    result = run("admin", "topics", "list", "--url", "zmq://127.0.0.1:1")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "web service URL (http://host:port" in result.stderr


def test_admin_url_from_the_environment(monkeypatch):
    from pulsarlab import Broker

    with Broker(storage="memory") as broker:
        monkeypatch.setenv("PULSARLAB_ADMIN_URL", broker.web_url)
        listed = run("admin", "topics", "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.strip() == "[]"
