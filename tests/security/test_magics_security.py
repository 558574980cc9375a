"""``%pulsar connect URL --token T --curve-server-key K``: the magics reach a locked broker."""

from __future__ import annotations

import pytest

from pulsarlab import AuthenticationToken, Broker
from pulsarlab.broker import curve, errors
from pulsarlab.broker.cli_security import client_options
from pulsarlab.magics import build_parser
from pulsarlab.runtime import BrokerRuntime


@pytest.fixture(scope="module")
def locked(tmp_path_factory):
    public_path, secret_path = curve.create_keypair_files(tmp_path_factory.mktemp("k"))
    with Broker(storage="memory", authentication_enabled=True, authorization_enabled=True,
                super_user_roles="root", curve_secret_key_file=str(secret_path)) as b:
        yield b, public_path


def _security(line: str) -> dict:
    return client_options(build_parser().parse_args(line.split()))


def test_the_connect_magic_parses_token_and_curve_key(locked, monkeypatch):
    monkeypatch.delenv("PULSARLAB_TOKEN", raising=False)
    monkeypatch.delenv("PULSARLAB_CURVE_SERVER_KEY", raising=False)
    broker, public_path = locked
    options = _security(f"connect {broker.service_url} --token abc --curve-server-key "
                        f"{public_path}")
    assert options["authentication"].token() == "abc"
    assert options["curve_server_key"] == str(public_path)
    assert _security(f"connect {broker.service_url}") == {}


def test_the_runtime_uses_the_token_and_key_for_its_client_and_admin(locked):
    broker, public_path = locked
    runtime = BrokerRuntime()
    security = {"authentication": AuthenticationToken(broker.create_token("root")),
                "curve_server_key": str(public_path)}
    try:
        runtime.connect(broker.service_url, security=security)
        runtime.client().create_producer("from-magics").send(b"x")
        assert "persistent://public/default/from-magics" in runtime.admin().topics.get_list()
    finally:
        runtime.stop()


def test_a_role_that_may_not_list_topics_still_connects(locked):
    broker, public_path = locked
    runtime = BrokerRuntime()
    security = {"authentication": AuthenticationToken(broker.create_token("nobody")),
                "curve_server_key": str(public_path)}
    try:
        runtime.connect(broker.service_url, security=security)
        assert runtime.mode == "connected"
    finally:
        runtime.stop()


def test_a_wrong_token_is_a_clear_connect_error(locked):
    broker, public_path = locked
    runtime = BrokerRuntime()
    security = {"authentication": AuthenticationToken("wrong"),
                "curve_server_key": str(public_path)}
    with pytest.raises(errors.AuthenticationError, match="authentication failed"):
        runtime.connect(broker.service_url, security=security)
    assert runtime.mode is None


@pytest.mark.parametrize("beside", [False, True])
def test_a_broker_started_by_the_magics_with_auth_and_curve_is_reachable(tmp_path, beside):
    from pulsarlab.broker import tokens

    _public, secret_path = curve.create_keypair_files(tmp_path / "k")
    key_file = tokens.write_secret_file(tmp_path / "secret.key", tokens.create_secret_key())
    settings = [("authentication_enabled", True), ("authorization_enabled", True),
                ("super_user_roles", "boss"), ("curve_secret_key_file", str(secret_path))]
    if beside:
        settings.append(("token_secret_key", f"file://{key_file}"))
    runtime = BrokerRuntime()
    try:
        runtime.start(memory=True, beside=beside, settings=settings)
        runtime.client().create_producer("mine").send(b"x")
        assert "persistent://public/default/mine" in runtime.admin().topics.get_list()
        assert runtime.admin().namespaces.get_permissions("public/default") == {}
    finally:
        runtime.stop()
