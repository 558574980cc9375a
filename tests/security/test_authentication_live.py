"""Token authentication against a real broker on loopback (R-WIRE security)."""

from __future__ import annotations

import socket

import pytest

import pulsarlab
from pulsarlab import Admin, AuthenticationToken, Broker, Client
from pulsarlab.broker import errors, tokens
from pulsarlab.broker.errors import InvalidArgument

from .support import CLOSED, PulsarDealer, T, api, command, token_connect, wait_until

SECRET_TOPIC = "persistent://secret-tenant/hidden-ns/classified-topic"


@pytest.fixture(scope="module")
def key_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("keys") / "token-secret.key"
    tokens.write_secret_file(path, tokens.create_secret_key())
    return path


@pytest.fixture(scope="module")
def broker(key_file):
    with Broker(storage="memory", authentication_enabled=True,
                token_secret_key=f"file://{key_file}") as b:
        b.call(lambda s: s.get_topic(SECRET_TOPIC))
        yield b


def _token(key_file, role: str) -> str:
    return tokens.create_token(tokens.load_secret_key(str(key_file)), role)


def test_a_non_loopback_bind_without_authentication_refuses_to_start():
    with pytest.raises(InvalidArgument, match=r"refusing to listen on 0\.0\.0\.0.*authentication"):
        Broker(host="0.0.0.0", storage="memory")


def test_with_authentication_a_non_loopback_broker_keeps_its_events_on_loopback():
    b = Broker(host="0.0.0.0", storage="memory", authentication_enabled=True)  # not started
    assert b.events_url.startswith("tcp://127.0.0.1:")
    assert b.host == "0.0.0.0"  # bound to every interface; told as this machine's name
    assert b.service_url.startswith(f"zmq://{socket.gethostname()}:")


def test_a_valid_token_gets_served(broker, key_file):
    client = Client(broker.service_url, authentication=AuthenticationToken(_token(key_file, "a")))
    try:
        producer = client.create_producer("served")
        consumer = client.subscribe("served", "s")
        producer.send(b"hello")
        assert consumer.receive(timeout_millis=10_000).data() == b"hello"
    finally:
        client.close()


def test_the_token_supplier_is_called_at_connect(broker, key_file):
    calls = []

    def supplier() -> str:
        calls.append(1)
        return _token(key_file, "supplied")

    client = Client(broker.service_url, authentication=AuthenticationToken(supplier))
    try:
        assert calls == []
        client.create_producer("supplied")
        assert calls == [1]
    finally:
        client.close()


@pytest.mark.parametrize(
    ("authentication", "message"),
    [
        # Pulsar's protocol: a CONNECT without credentials names the missing provider.
        (None, "no authentication provider for method 'none'"),
        (AuthenticationToken("not-a-token"), "malformed"),
        (AuthenticationToken(tokens.create_token(b"w" * 32, "admin")), "signature does not match"),
    ],
)
def test_missing_or_wrong_tokens_raise_authentication_error(broker, authentication, message):
    client = Client(broker.service_url, authentication=authentication)
    try:
        with pytest.raises(pulsarlab.AuthenticationError, match=message) as info:
            client.create_producer(SECRET_TOPIC)
        assert "classified" not in str(info.value) and "hidden" not in str(info.value)
        # The connection is refused for good: later calls fail the same way at once.
        with pytest.raises(pulsarlab.AuthenticationError):
            client.subscribe("anything", "s")
    finally:
        client.close()


def test_an_expired_token_is_refused(broker, key_file):
    expired = tokens.create_token(tokens.load_secret_key(str(key_file)), "late", expires_at=1)
    client = Client(broker.service_url, authentication=AuthenticationToken(expired))
    try:
        with pytest.raises(pulsarlab.AuthenticationError, match="expired"):
            client.get_topic_partitions("t")
    finally:
        client.close()


def test_a_failing_token_supplier_is_error_getting_authentication_data(broker):
    def supplier() -> str:
        raise OSError("token file missing")

    client = Client(broker.service_url, authentication=AuthenticationToken(supplier))
    try:
        with pytest.raises(pulsarlab.ErrorGettingAuthenticationData, match="token file missing"):
            client.create_producer("t")
    finally:
        client.close()


@pytest.mark.parametrize(
    "first, code",
    [
        (command(T.GET_TOPICS_OF_NAMESPACE, "getTopicsOfNamespace",
                 namespace="secret-tenant/hidden-ns", request_id=1), api.NotAllowedError),
        (command(T.PRODUCER, "producer", topic=SECRET_TOPIC, producer_id=1, request_id=1),
         api.NotAllowedError),
        (command(T.PARTITIONED_METADATA, "partitionMetadata", topic=SECRET_TOPIC,
                 request_id=1), api.NotAllowedError),
        (command(T.LOOKUP, "lookupTopic", topic=SECRET_TOPIC, request_id=1),
         api.NotAllowedError),
        (command(T.CONNECT, "connect", client_version="x", protocol_version=20),
         api.AuthenticationError),
        (command(T.CONNECT, "connect", client_version="x", protocol_version=20,
                 auth_method_name="token", auth_data=b"bad"), api.AuthenticationError),
    ],
    ids=["get-topics", "producer", "partitioned-metadata", "lookup", "no-token", "bad-token"],
)
def test_an_unauthenticated_peer_gets_one_error_then_nothing(broker, key_file, first, code):
    raw = PulsarDealer(broker.service_url)
    try:
        raw.send(first)
        error = raw.expect(T.ERROR).error
        assert error.error == code
        assert "classified" not in error.message and "hidden" not in error.message
        assert raw.recv() == CLOSED
        before = broker.dropped_from_refused
        # Everything after is dropped, a valid CONNECT included: no answer, no topic names.
        token_connect_frame = command(T.CONNECT, "connect", client_version="x",
                                      protocol_version=20, auth_method_name="token",
                                      auth_data=_token(key_file, "late").encode())
        raw.send(token_connect_frame)
        raw.send(command(T.GET_TOPICS_OF_NAMESPACE, "getTopicsOfNamespace",
                         namespace="secret-tenant/hidden-ns", request_id=2))
        raw.send(command(T.PING, "ping"))
        raw.send(b"\xc1garbage")
        wait_until(lambda: broker.dropped_from_refused >= before + 4, "the broker to drop 4")
        assert raw.sock.poll(200) == 0
    finally:
        raw.close()


@pytest.mark.parametrize("garbage", [b"\x93\x01\x02", b"\x00\x00\x00\x05\x00"])
def test_garbage_as_the_first_message_closes_the_peer_without_an_answer(broker, garbage):
    """Not a Pulsar frame: the close notice alone; a broken Pulsar frame: an ERROR that
    names the framing, never a topic, then the close notice."""
    raw = PulsarDealer(broker.service_url)
    try:
        raw.send(garbage)
        first = raw.recv()
        if garbage[:1] == b"\x00":
            assert "invalid frame" in first.command.error.message
            first = raw.recv()
        assert first == CLOSED
    finally:
        raw.close()


def test_an_authenticated_peer_is_served_beside_refused_ones(broker, key_file):
    good = PulsarDealer(broker.service_url)
    bad = PulsarDealer(broker.service_url)
    try:
        bad.send(command(T.GET_TOPICS_OF_NAMESPACE, "getTopicsOfNamespace", namespace="x/y",
                         request_id=1))
        assert bad.expect(T.ERROR).error.error == api.NotAllowedError
        assert token_connect(good, _token(key_file, "r")).type == T.CONNECTED
        good.send(command(T.GET_TOPICS_OF_NAMESPACE, "getTopicsOfNamespace",
                          namespace="secret-tenant/hidden-ns", request_id=1))
        topics = good.expect(T.GET_TOPICS_OF_NAMESPACE_RESPONSE).getTopicsOfNamespaceResponse
        assert list(topics.topics) == [SECRET_TOPIC]
    finally:
        good.close()
        bad.close()


def test_admin_needs_a_token_too(broker, key_file):
    with (
        Admin(broker.web_url) as anonymous,
        pytest.raises(errors.AuthenticationError, match=r"(?i)authentication required"),
    ):
        anonymous.topics.get_list("secret-tenant/hidden-ns")
    with Admin(broker.web_url, authentication=AuthenticationToken("x.y.z")) as wrong:
        with pytest.raises(errors.AuthenticationError, match="authentication failed") as info:
            wrong.topics.get_list("secret-tenant/hidden-ns")
        assert isinstance(info.value, pulsarlab.AuthenticationError)  # the client's class too
        # A refused Admin starts afresh on its next call (and is refused again).
        with pytest.raises(errors.AuthenticationError):
            wrong.topics.get_list("secret-tenant/hidden-ns")
    token = AuthenticationToken(_token(key_file, "ops"))
    with Admin(broker.web_url, authentication=token) as admin:
        assert admin.topics.get_list("secret-tenant/hidden-ns") == [SECRET_TOPIC]


def test_broker_create_token_issues_tokens_for_a_generated_key():
    with Broker(storage="memory", authentication_enabled=True) as b:
        client = Client(b.service_url, authentication=AuthenticationToken(b.create_token("me")))
        try:
            client.create_producer("t").send(b"x")
        finally:
            client.close()


def test_without_authentication_nothing_changes():
    with Broker(storage="memory") as b:
        client = Client(b.service_url, authentication=AuthenticationToken("ignored"))
        try:
            client.create_producer("t").send(b"x")
        finally:
            client.close()
        raw = PulsarDealer(b.service_url)
        try:
            assert raw.connect().type == T.CONNECTED  # no token needed
            raw.send(command(T.GET_TOPICS_OF_NAMESPACE, "getTopicsOfNamespace",
                             namespace="public/default", request_id=1))
            raw.expect(T.GET_TOPICS_OF_NAMESPACE_RESPONSE)
        finally:
            raw.close()
