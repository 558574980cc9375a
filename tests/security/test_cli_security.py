"""``pulsarlab token|curve`` and the client commands' --token / --curve-server-key."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from pulsarlab import Admin, Broker
from pulsarlab.broker import curve, tokens


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pulsarlab.broker.cli", *args],
        capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="module")
def key_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli-keys") / "secret.key"
    made = run("token", "create-secret-key", "--output", str(path))
    assert made.returncode == 0, made.stderr
    return path


def test_create_secret_key_writes_an_owner_only_file(key_file):
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(key_file.read_bytes()) == 32


def test_create_secret_key_prints_base64_without_output():
    printed = run("token", "create-secret-key")
    assert printed.returncode == 0
    assert len(tokens.load_secret_key("data:;base64," + printed.stdout.strip())) == 32


def test_create_show_and_validate_a_token(key_file):
    made = run("token", "create", "--secret-key", f"file://{key_file}", "--subject", "alice",
               "--expiry-time", "1h")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    claims = json.loads(run("token", "show", token).stdout)
    assert claims["sub"] == "alice" and claims["exp"] > 0
    checked = run("token", "validate", "--secret-key", str(key_file), token)
    assert (checked.returncode, checked.stdout.strip()) == (0, "alice")
    other = tokens.write_secret_file(key_file.parent / "other.key", tokens.create_secret_key())
    refused = run("token", "validate", "--secret-key", str(other), token)
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "pulsarlab: error: invalid token: token signature does not match the broker's secret key"
    )


def test_token_errors_are_one_line():
    result = run("token", "create", "--secret-key", "file:///nonexistent/k", "--subject", "a")
    assert result.returncode == 2
    assert result.stderr.strip().startswith("pulsarlab: error: cannot read the token secret key")
    assert run("token", "show", "garbage").stderr.strip().startswith("pulsarlab: error: malformed")


def test_curve_create_keypair(tmp_path):
    made = run("curve", "create-keypair", "--output-dir", str(tmp_path / "k"))
    assert made.returncode == 0, made.stderr
    report = json.loads(made.stdout)
    assert stat.S_IMODE(os.stat(report["secret_key_file"]).st_mode) == 0o600
    assert curve.load_public_key(report["public_key_file"]).decode() == report["public_key"]


def test_the_broker_command_refuses_a_non_loopback_host_without_authentication():
    result = run("broker", "--storage", "memory", "--host", "0.0.0.0", "--port", "0",
                 "--pulsar-port", "0", "--web-port", "0", "--once")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith(
        "pulsarlab: error: refusing to listen on 0.0.0.0: a non-loopback address needs "
        "authentication"
    )


def test_the_broker_command_needs_a_key_file_for_authentication(key_file):
    result = run("broker", "--storage", "memory", "--port", "0", "--pulsar-port", "0",
                 "--web-port", "0", "--once", "--set", "authentication_enabled=true")
    assert result.returncode == 2
    assert "token_secret_key" in result.stderr and "create-secret-key" in result.stderr
    result = run("broker", "--storage", "memory", "--port", "0", "--pulsar-port", "0",
                 "--web-port", "0", "--once", "--set", "authentication_enabled=true",
                 "--set", f"token_secret_key=file://{key_file}")
    assert result.returncode == 0, result.stderr


def test_client_commands_take_a_token_and_a_curve_key(key_file, tmp_path):
    public_path, secret_path = curve.create_keypair_files(tmp_path, "server")
    token = tokens.create_token(tokens.load_secret_key(str(key_file)), "cli-user")
    token_file = tmp_path / "token.txt"
    token_file.write_text(token + "\n")
    with Broker(storage="memory", authentication_enabled=True,
                token_secret_key=str(key_file), curve_secret_key_file=str(secret_path)) as b:
        url = b.service_url
        produced = run("produce", "t", "-m", "hi", "--url", url, "--token", token,
                       "--curve-server-key", str(public_path))
        assert produced.returncode == 0, produced.stderr
        listed = run("admin", "topics", "list", "--admin-url", b.web_url,
                     "--token", f"file://{token_file}",
                     env={"PULSARLAB_CURVE_SERVER_KEY": str(public_path)})
        assert listed.returncode == 0, listed.stderr
        assert "persistent://public/default/t" in json.loads(listed.stdout)
        consumed = run("consume", "t", "-s", "s", "-p", "Earliest", "--url", url,
                       env={"PULSARLAB_TOKEN": token,
                            "PULSARLAB_CURVE_SERVER_KEY": str(public_path)})
        assert consumed.returncode == 0, consumed.stderr
        assert "content:hi" in consumed.stdout
        refused = run("admin", "topics", "list", "--admin-url", b.web_url, "--token", "wrong",
                      "--curve-server-key", str(public_path))
        assert refused.returncode == 2
        assert refused.stderr.strip() == (
            "pulsarlab: error: authentication failed: malformed token: expected "
            "header.claims.signature"
        )


def test_the_broker_report_says_how_to_reach_it(key_file, tmp_path):
    public_path, secret_path = curve.create_keypair_files(tmp_path, "server")
    result = run("broker", "--storage", "memory", "--port", "0", "--pulsar-port", "0",
                 "--web-port", "0", "--once", "--set", "authentication_enabled=true",
                 "--set", f"token_secret_key=file://{key_file}",
                 "--set", f"curve_secret_key_file={secret_path}")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["authentication"] is True and report["authorization"] is False
    assert report["curve_public_key"] == curve.load_public_key(str(public_path)).decode()
    plain = json.loads(run("broker", "--storage", "memory", "--port", "0", "--pulsar-port", "0",
                           "--web-port", "0", "--once").stdout)
    assert (plain["authentication"], plain["curve_public_key"]) == (False, None)


def test_admin_namespaces_permissions_like_pulsar_admin():
    with Broker(storage="memory", authentication_enabled=True, authorization_enabled=True,
                super_user_roles="root") as b:
        root = ["--admin-url", b.web_url, "--token", b.create_token("root")]
        with Admin(b, token=b.create_token("root")) as admin:  # grants need the namespace
            admin.tenants.create_tenant("acme")
            admin.namespaces.create_namespace("acme/ns")
        granted = run("admin", "namespaces", "grant-permission", "acme/ns", "--role", "alice",
                      "--actions", "produce,consume", *root)
        assert granted.returncode == 0, granted.stderr
        listed = run("admin", "namespaces", "permissions", "acme/ns", *root)
        assert json.loads(listed.stdout) == {"alice": ["consume", "produce"]}
        alice = ["--url", b.service_url, "--token", b.create_token("alice")]
        assert run("produce", "acme/ns/t", "-m", "hi", *alice).returncode == 0
        refused = run("produce", "public/default/t", "-m", "hi", *alice)
        assert refused.returncode == 2
        assert refused.stderr.strip() == (
            "pulsarlab: error: role 'alice' is not authorized to look up topics in namespace "
            "public/default"
        )
        not_root = run("admin", "namespaces", "permissions", "acme/ns", "--admin-url", b.web_url,
                       "--token", b.create_token("alice"))
        assert not_root.returncode == 2 and "not a superuser" in not_root.stderr
        revoked = run("admin", "namespaces", "revoke-permission", "acme/ns", "--role", "alice",
                      *root)
        assert revoked.returncode == 0, revoked.stderr
        assert json.loads(run("admin", "namespaces", "permissions", "acme/ns", *root).stdout) == {}
        bad = run("admin", "namespaces", "grant-permission", "acme/ns", "--role", "x",
                  "--actions", "fly", *root)
        assert bad.returncode == 2 and "unknown action" in bad.stderr
