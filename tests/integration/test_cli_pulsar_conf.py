"""``pulsarlab broker --config standalone.conf``: Pulsar's keys, ignored ones listed once,
--set overriding, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pulsarlab.broker.basic_auth import BasicUsers


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pulsarlab.broker.cli", *args],
        capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})},
    )


def test_config_file_settings_and_ignored_keys(tmp_path) -> None:
    conf = tmp_path / "standalone.conf"
    conf.write_text(
        "brokerServicePort=0\nwebServicePort=0\nclusterName=standalone\n"
        "maxUnackedMessagesPerConsumer=7\nauthenticationEnabled=false\n"
        "zookeeperServers=\n"
    )
    result = run("broker", "--storage", "memory", "--port", "0", "--config", str(conf),
                 "--set", "authorization_enabled=false", "--once")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["pulsar_url"].startswith("pulsar://127.0.0.1:")
    assert not report["pulsar_url"].endswith(":6650")  # brokerServicePort=0 was read
    ignored = [line for line in result.stderr.splitlines() if "ignored" in line]
    assert len(ignored) == 1
    assert ignored[0].endswith(
        "standalone.conf: 2 keys ignored (pulsarlab has no such setting): "
        "clusterName, zookeeperServers"
    )


def test_set_overrides_the_file_and_a_bad_value_is_one_line(tmp_path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerServicePort=0\nwebServicePort=0\nmaxMessageSize=abc\n")
    bad = run("broker", "--storage", "memory", "--port", "0", "--config", str(conf), "--once")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1] == (
        "pulsarlab: error: broker.conf:3: maxMessageSize='abc': must be an integer"
    )
    conf.write_text("brokerServicePort=0\nwebServicePort=0\nmaxMessageSize=0\n")
    refused = run("broker", "--storage", "memory", "--port", "0", "--config", str(conf),
                  "--once")
    assert "max_message_size must be > 0" in refused.stderr
    fixed = run("broker", "--storage", "memory", "--port", "0", "--config", str(conf),
                "--set", "max_message_size=1024", "--once")
    assert fixed.returncode == 0, fixed.stderr


def test_basic_auth_conf_from_a_jvm_option(tmp_path) -> None:
    users = tmp_path / "users"
    users.write_text("alice:$apr1$r31.....$HqJZimcKQFAMYayBlzkrA/\n")
    assert BasicUsers.load(str(users)).hashes == {"alice": "$apr1$r31.....$HqJZimcKQFAMYayBlzkrA/"}
    base = ("broker", "--storage", "memory", "--port", "0", "--pulsar-port", "0",
            "--web-port", "0", "--set", "authentication_enabled=true",
            "--set", "authentication_providers=basic", "--once")
    missing = run(*base)
    assert missing.returncode == 2
    assert "no basic authentication config provided" in missing.stderr
    assert run(*base, f"-Dpulsar.auth.basic.conf={users}").returncode == 0
    from_env = run(*base, env={"PULSAR_EXTRA_OPTS": f"-Xmx1g -Dpulsar.auth.basic.conf={users}"})
    assert from_env.returncode == 0, from_env.stderr


def test_tls_listeners_from_the_config_file(tmp_path, tls_pki) -> None:
    conf = tmp_path / "broker.conf"
    lines = [
        "brokerServicePort=0", "webServicePort=0", "brokerServicePortTls=0",
        "webServicePortTls=0", f"tlsCertificateFilePath={tls_pki.broker_cert}",
        f"tlsKeyFilePath={tls_pki.broker_key}", f"tlsTrustCertsFilePath={tls_pki.ca}",
    ]
    conf.write_text("\n".join(lines) + "\n")
    result = run("broker", "--storage", "memory", "--port", "0", "--config", str(conf),
                 "--once")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["pulsar_ssl_url"].startswith("pulsar+ssl://127.0.0.1:")
    assert report["web_url_tls"].startswith("https://127.0.0.1:")
    conf.write_text("\n".join([*lines[:-2], "tlsKeyFilePath=/nonexistent/broker.key"]) + "\n")
    bad = run("broker", "--storage", "memory", "--port", "0", "--config", str(conf), "--once")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1] == (
        "pulsarlab: error: tls_key_file_path: cannot read '/nonexistent/broker.key': "
        "No such file or directory"
    )


def test_a_broker_from_standalone_conf_serves_the_official_client(tmp_path, tls_pki) -> None:
    """``pulsarlab broker --config standalone.conf`` with TLS and token authentication from
    Pulsar's keys: the official client connects over pulsar+ssl:// with a token."""
    pulsar = pytest.importorskip("pulsar")
    from pulsarlab.broker import tokens

    key = tmp_path / "secret.key"
    tokens.write_secret_file(key, tokens.create_secret_key())
    conf = tmp_path / "standalone.conf"
    conf.write_text("\n".join([
        "brokerServicePort=0", "webServicePort=0", "brokerServicePortTls=0",
        f"tlsCertificateFilePath={tls_pki.broker_cert}", f"tlsKeyFilePath={tls_pki.broker_key}",
        "authenticationEnabled=true",
        "authenticationProviders=org.apache.pulsar.broker.authentication."
        "AuthenticationProviderToken",
        f"tokenSecretKey=file://{key}", "clusterName=standalone",
    ]) + "\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pulsarlab.broker.cli", "broker", "--storage", "memory",
         "--port", "0", "--config", str(conf)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        lines = []
        for line in proc.stdout:  # the ready report: one indented JSON document
            lines.append(line)
            if line.startswith("}"):
                break
        report = json.loads("".join(lines))
        token = tokens.create_token(tokens.load_secret_key(f"file://{key}"), "alice")
        client = pulsar.Client(report["pulsar_ssl_url"], tls_trust_certs_file_path=tls_pki.ca,
                               authentication=pulsar.AuthenticationToken(token),
                               operation_timeout_seconds=10,
                               logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        try:
            consumer = client.subscribe("from-conf", "s")
            client.create_producer("from-conf").send(b"configured")
            assert consumer.receive(timeout_millis=10_000).data() == b"configured"
        finally:
            client.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
