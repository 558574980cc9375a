"""CurveZMQ: key files, and a real broker that only talks to clients with its public key."""

from __future__ import annotations

import stat

import pytest
import zmq

import pulsarlab
from pulsarlab import Admin, AuthenticationToken, Broker, Client
from pulsarlab.broker import curve
from pulsarlab.broker.errors import InvalidArgument

from .support import PulsarDealer, T, command


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    folder = tmp_path_factory.mktemp("curve")
    public_path, secret_path = curve.create_keypair_files(folder, "server")
    return public_path, secret_path


@pytest.fixture(scope="module")
def broker(keys):
    with Broker(storage="memory", curve_secret_key_file=str(keys[1])) as b:
        yield b


def test_key_files_are_zeromq_certificates_with_private_secrets(keys):
    public_path, secret_path = keys
    assert stat.S_IMODE(secret_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(public_path.stat().st_mode) == 0o644
    public, secret = curve.load_secret_key(secret_path)
    assert len(public) == len(secret) == 40
    assert curve.load_public_key(str(public_path)) == public
    assert curve.load_public_key(public.decode()) == public
    assert "secret-key" not in public_path.read_text()


def test_a_secret_key_file_others_can_read_is_refused(tmp_path):
    _public_path, secret_path = curve.create_keypair_files(tmp_path, "leaky")
    secret_path.chmod(0o644)
    with pytest.raises(InvalidArgument, match=r"readable by others.*chmod 600"):
        Broker(storage="memory", curve_secret_key_file=str(secret_path))


def test_the_public_file_is_not_a_secret_key(keys, tmp_path):
    copy = tmp_path / "server.pub"
    copy.write_bytes(keys[0].read_bytes())
    copy.chmod(0o600)
    with pytest.raises(InvalidArgument, match="no secret-key"):
        Broker(storage="memory", curve_secret_key_file=str(copy))


@pytest.mark.parametrize("spec", ["tooshort", "z" * 39 + "~", "/nonexistent/server.pub"])
def test_bad_public_keys_are_clear_errors(spec):
    with pytest.raises(ValueError, match="CURVE"):
        curve.load_public_key(spec)


@pytest.mark.parametrize("as_path", [False, True])
def test_a_client_with_the_right_server_key_talks(broker, keys, as_path):
    public = str(keys[0]) if as_path else curve.load_public_key(str(keys[0])).decode()
    client = Client(broker.service_url, curve_server_key=public)
    try:
        producer = client.create_producer("encrypted")
        consumer = client.subscribe("encrypted", "s")
        producer.send(b"over curve")
        assert consumer.receive(timeout_millis=10_000).data() == b"over curve"
    finally:
        client.close()
    with Admin(broker.web_url, curve_server_key=public) as admin:
        assert "persistent://public/default/encrypted" in admin.topics.get_list()


def test_a_client_with_a_wrong_server_key_cannot_talk(broker):
    wrong, _ = zmq.curve_keypair()
    client = Client(broker.service_url, curve_server_key=wrong.decode(),
                    connection_timeout_ms=1500)
    try:
        with pytest.raises(pulsarlab.ConnectError, match="no answer"):
            client.create_producer("encrypted")
    finally:
        client.close()


def test_a_plain_client_cannot_talk_to_a_curve_broker(broker):
    client = Client(broker.service_url, connection_timeout_ms=1500)
    try:
        with pytest.raises(pulsarlab.ConnectError, match="no answer"):
            client.create_producer("encrypted")
    finally:
        client.close()


def test_the_wrong_key_fails_the_handshake_while_the_right_one_is_answered(broker, keys):
    """At the socket level: same broker, one raw peer with each key."""
    right = PulsarDealer(broker.service_url,
                         curve_server_key=curve.load_public_key(str(keys[0])))
    wrong = PulsarDealer(broker.service_url, curve_server_key=zmq.curve_keypair()[0])
    try:
        wrong.send(command(T.CONNECT, "connect", client_version="t", protocol_version=20))
        assert right.connect().type == T.CONNECTED
        assert wrong.sock.poll(300) == 0
    finally:
        right.close()
        wrong.close()


def test_curve_and_tokens_together(keys):
    with Broker(storage="memory", curve_secret_key_file=str(keys[1]),
                authentication_enabled=True) as b:
        token = AuthenticationToken(b.create_token("alice"))
        client = Client(b.service_url, authentication=token, curve_server_key=str(keys[0]))
        try:
            client.create_producer("both").send(b"x")
        finally:
            client.close()
