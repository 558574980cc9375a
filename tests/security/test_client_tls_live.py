"""pulsarlab's own client over ``pulsar+ssl://`` against pulsarlab's TLS listener: the
official client's TLS arguments (trusted CAs, insecure mode, hostname validation), TLS
client-certificate authentication (the role is the certificate's CN), and a lookup's
``brokerServiceUrlTls`` followed (a raw-socket broker answers the lookup)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import pytest
from integration.fake_pulsar_broker import FakeBroker, serve

from pulsarlab import Broker
from pulsarlab.broker.client import (
    AuthenticationTLS,
    AuthorizationError,
    Client,
    ConnectError,
    InvalidConfiguration,
)

from .tls_pki import Pki, broker_tls_settings

TLS_AUTH = "org.apache.pulsar.broker.authentication.AuthenticationProviderTls"
WAIT_MS = 10_000


@pytest.fixture(scope="module")
def tls_broker(tls_pki: Pki) -> Iterator[Broker]:
    with Broker(storage="memory", **broker_tls_settings(tls_pki)) as broker:
        yield broker


@pytest.fixture(scope="module")
def cert_broker(tls_pki: Pki) -> Iterator[Broker]:
    """TLS authentication and authorization: alice may produce and consume, bob nothing."""
    settings = broker_tls_settings(
        tls_pki, authentication_enabled=True, authorization_enabled=True,
        authentication_providers=TLS_AUTH, super_user_roles="admin",
        tls_require_trusted_client_cert_on_connect=True,
    )
    with Broker(storage="memory", **settings) as broker:
        broker.call(lambda _s: broker.admin.call(
            "namespaces.grant_permission",
            {"namespace": "public/default", "role": "alice", "actions": ["produce", "consume"]},
        ))
        yield broker


def client(url: str, **kwargs: object) -> Client:
    return Client(url, operation_timeout_seconds=5, connection_timeout_ms=3000, **kwargs)


def round_trip(c: Client, topic: str) -> bytes:
    consumer = c.subscribe(topic, "s")
    c.create_producer(topic).send(b"over tls")
    msg = consumer.receive(WAIT_MS)
    consumer.acknowledge(msg)
    return msg.data()


def tls_sockets(c: Client) -> dict[str, bool]:
    """Each socket of the client by its broker URL: whether it is a TLS socket."""
    conn = c._conn
    return conn.call(lambda: {url: isinstance(cnx.sock, ssl.SSLSocket)
                              for url, cnx in conn._cnxs.items()})


def test_produce_and_consume_over_pulsar_ssl(tls_broker: Broker, tls_pki: Pki) -> None:
    c = client(tls_broker.pulsar_ssl_url, tls_trust_certs_file_path=tls_pki.ca,
               tls_validate_hostname=True)
    try:
        assert round_trip(c, "client-tls") == b"over tls"
        # the lookup's brokerServiceUrlTls is followed: every socket is a TLS one
        assert tls_sockets(c) == {tls_broker.pulsar_ssl_url: True}
    finally:
        c.close()


def _lookup_broker(pki: Pki, plain: str, tls: str | None) -> Iterator[FakeBroker]:
    """A TLS fake broker whose lookups answer ``plain`` and ``tls`` as the owner's URLs."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.broker_cert, pki.broker_key)
    yield from serve(FakeBroker(tls=context, lookup_urls=(plain, tls or "")))


def test_a_lookup_answers_brokerServiceUrlTls_and_it_is_followed(
    tls_broker: Broker, tls_pki: Pki
) -> None:
    for looker in _lookup_broker(tls_pki, tls_broker.pulsar_url, tls_broker.pulsar_ssl_url):
        c = client(looker.url, tls_trust_certs_file_path=tls_pki.ca)
        reader = client(tls_broker.pulsar_ssl_url, tls_trust_certs_file_path=tls_pki.ca)
        try:
            consumer = reader.subscribe("client-tls-lookup", "s")
            c.create_producer("client-tls-lookup").send(b"to the owner")
            assert consumer.receive(WAIT_MS).data() == b"to the owner"
            assert looker.lookups == ["persistent://public/default/client-tls-lookup"]
            assert tls_sockets(c) == {looker.url: True, tls_broker.pulsar_ssl_url: True}
        finally:
            c.close()
            reader.close()


def test_a_lookup_without_a_tls_url_is_an_error(tls_broker: Broker, tls_pki: Pki) -> None:
    for looker in _lookup_broker(tls_pki, tls_broker.pulsar_url, None):
        c = Client(looker.url, tls_trust_certs_file_path=tls_pki.ca, operation_timeout_seconds=1)
        try:
            with pytest.raises(ConnectError, match="no TLS URL"):
                c.create_producer("client-tls-no-tls-url")
            assert tls_broker.pulsar_url not in tls_sockets(c)
        finally:
            c.close()


def test_big_and_many_messages_cross_tls_records(tls_broker: Broker, tls_pki: Pki) -> None:
    """A message of many TLS records each way, and a burst of small ones, arrive whole."""
    c = client(tls_broker.pulsar_ssl_url, tls_trust_certs_file_path=tls_pki.ca)
    try:
        consumer = c.subscribe("client-tls-big", "s")
        producer = c.create_producer("client-tls-big")
        big = bytes(range(256)) * 12_000  # ~3 MB: about 190 records of 16 KiB
        producer.send(big)
        for i in range(300):
            producer.send_async(b"small %d" % i, None)
        producer.flush()
        assert consumer.receive(WAIT_MS).data() == big
        got = [consumer.receive(WAIT_MS).data() for _ in range(300)]
        assert got == [b"small %d" % i for i in range(300)]
    finally:
        c.close()


def test_an_untrusted_broker_is_refused_with_one_line(tls_broker: Broker, tls_pki: Pki) -> None:
    c = client(tls_broker.pulsar_ssl_url, tls_trust_certs_file_path=tls_pki.other_ca)
    try:
        with pytest.raises(ConnectError) as caught:
            c.create_producer("client-tls-untrusted")
        message = str(caught.value)
        assert "TLS handshake" in message and "not trusted" in message
        assert "\n" not in message
    finally:
        c.close()


def test_insecure_mode_accepts_any_certificate(tls_broker: Broker, tls_pki: Pki) -> None:
    c = client(tls_broker.pulsar_ssl_url, tls_trust_certs_file_path=tls_pki.other_ca,
               tls_allow_insecure_connection=True)
    try:
        assert round_trip(c, "client-tls-insecure") == b"over tls"
    finally:
        c.close()


def test_hostname_validation(tls_pki: Pki) -> None:
    settings = broker_tls_settings(tls_pki, tls_certificate_file_path=tls_pki.broker_no_san_cert,
                                   tls_key_file_path=tls_pki.broker_no_san_key)
    with Broker(storage="memory", **settings) as broker:
        strict = client(broker.pulsar_ssl_url, tls_trust_certs_file_path=tls_pki.ca,
                        tls_validate_hostname=True)
        lax = client(broker.pulsar_ssl_url, tls_trust_certs_file_path=tls_pki.ca)
        try:
            with pytest.raises(ConnectError, match="mismatch"):
                strict.create_producer("client-tls-hostname")
            assert round_trip(lax, "client-tls-hostname") == b"over tls"
        finally:
            strict.close()
            lax.close()


def test_a_client_certificates_cn_is_its_role(cert_broker: Broker, tls_pki: Pki) -> None:
    alice = client(cert_broker.pulsar_ssl_url, tls_trust_certs_file_path=tls_pki.ca,
                   authentication=AuthenticationTLS(tls_pki.alice_cert, tls_pki.alice_key))
    bob = client(cert_broker.pulsar_ssl_url, tls_trust_certs_file_path=tls_pki.ca,
                 authentication=AuthenticationTLS(tls_pki.bob_cert, tls_pki.bob_key))
    try:
        assert round_trip(alice, "client-tls-auth") == b"over tls"
        with pytest.raises(AuthorizationError):
            bob.create_producer("client-tls-auth")
        roles = cert_broker.call(lambda _s: sorted(
            s.role for listener in cert_broker._listeners for s in listener.sessions.values()
        ))
        assert "alice" in roles and set(roles) <= {"alice", "bob"}
    finally:
        alice.close()
        bob.close()


def test_no_client_certificate_where_one_is_required(cert_broker: Broker, tls_pki: Pki) -> None:
    anonymous = client(cert_broker.pulsar_ssl_url, tls_trust_certs_file_path=tls_pki.ca)
    try:
        with pytest.raises(ConnectError, match="CERTIFICATE_REQUIRED") as caught:
            anonymous.create_producer("client-tls-anonymous")
        assert "\n" not in str(caught.value)
    finally:
        anonymous.close()


def test_an_unreadable_trust_file_is_a_one_line_error(tls_pki: Pki) -> None:
    with pytest.raises(InvalidConfiguration,
                       match=r"^tls_trust_certs_file_path: cannot load '/nonexistent/ca.pem'"):
        Client("pulsar+ssl://127.0.0.1:6651", tls_trust_certs_file_path="/nonexistent/ca.pem")
    with pytest.raises(InvalidConfiguration, match="TLS client certificate"):
        Client("pulsar+ssl://127.0.0.1:6651", tls_trust_certs_file_path=tls_pki.ca,
               authentication=AuthenticationTLS(tls_pki.alice_cert, tls_pki.bob_key))
