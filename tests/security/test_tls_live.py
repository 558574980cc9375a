"""TLS listeners: pulsar+ssl:// for the official client and https:// for the admin API, with
TLS client-certificate authentication (the role is the certificate's CN)."""

from __future__ import annotations

import json
import logging
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from pulsarlab import Broker
from pulsarlab.broker.errors import InvalidArgument

from .tls_pki import Pki, broker_tls_settings

pulsar = pytest.importorskip("pulsar", reason="the official pulsar-client (dev extra) is needed")

TLS_AUTH = "org.apache.pulsar.broker.authentication.AuthenticationProviderTls"


@pytest.fixture(scope="module")
def pki(tls_pki: Pki) -> Pki:
    return tls_pki


tls_settings = broker_tls_settings


@pytest.fixture(scope="module")
def tls_broker(pki: Pki) -> Iterator[Broker]:
    with Broker(storage="memory", **tls_settings(pki)) as broker:
        yield broker


@pytest.fixture(scope="module")
def cert_broker(pki: Pki) -> Iterator[Broker]:
    """TLS authentication and authorization: alice may produce and consume, bob nothing."""
    settings = tls_settings(
        pki, authentication_enabled=True, authorization_enabled=True,
        authentication_providers=f"{TLS_AUTH},token", super_user_roles="admin",
        tls_require_trusted_client_cert_on_connect=True,
    )
    with Broker(storage="memory", **settings) as broker:
        broker.call(lambda _s: broker.admin.call(
            "namespaces.grant_permission",
            {"namespace": "public/default", "role": "alice", "actions": ["produce", "consume"]},
        ))
        yield broker


def client(url: str, **kwargs: object) -> pulsar.Client:
    return pulsar.Client(url, operation_timeout_seconds=5, connection_timeout_ms=3000,
                         logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error), **kwargs)


def round_trip_with(url: str, topic: str, **kwargs: object) -> bytes:
    """One message through a fresh client built with ``kwargs``."""
    c = client(url, **kwargs)
    try:
        return round_trip(c, topic)
    finally:
        c.close()


def round_trip(c: pulsar.Client, topic: str) -> bytes:
    consumer = c.subscribe(topic, "s")
    producer = c.create_producer(topic)
    producer.send(b"over tls")
    msg = consumer.receive(timeout_millis=5000)
    consumer.acknowledge(msg)
    return msg.data()


def test_official_client_over_pulsar_ssl_with_hostname_check(tls_broker: Broker, pki: Pki) -> None:
    assert tls_broker.pulsar_ssl_url.startswith("pulsar+ssl://127.0.0.1:")
    assert round_trip_with(tls_broker.pulsar_ssl_url, "tls-basic",
                           tls_trust_certs_file_path=pki.ca,
                           tls_validate_hostname=True) == b"over tls"
    # the pulsar:// listener still serves
    assert round_trip_with(tls_broker.pulsar_url, "tls-plain") == b"over tls"


def test_a_client_that_does_not_trust_the_broker(tls_broker: Broker, pki: Pki, caplog) -> None:
    caplog.set_level(logging.INFO, logger="pulsarlab.broker.server")
    c = client(tls_broker.pulsar_ssl_url, tls_trust_certs_file_path=pki.other_ca)
    try:
        with pytest.raises(pulsar.ConnectError):
            c.create_producer("tls-untrusted")
    finally:
        c.close()
    assert round_trip_with(tls_broker.pulsar_ssl_url, "tls-insecure",
                           tls_trust_certs_file_path=pki.other_ca,
                           tls_allow_insecure_connection=True) == b"over tls"
    assert any("failed the TLS handshake" in r.getMessage() for r in caplog.records)


def test_hostname_validation_refuses_a_certificate_for_another_name(pki: Pki) -> None:
    settings = tls_settings(pki, tls_certificate_file_path=pki.broker_no_san_cert,
                            tls_key_file_path=pki.broker_no_san_key)
    with Broker(storage="memory", **settings) as broker:
        strict = client(broker.pulsar_ssl_url, tls_trust_certs_file_path=pki.ca,
                        tls_validate_hostname=True)
        lax = client(broker.pulsar_ssl_url, tls_trust_certs_file_path=pki.ca)
        try:
            with pytest.raises(pulsar.ConnectError):
                strict.create_producer("tls-hostname")
            assert round_trip(lax, "tls-hostname") == b"over tls"
        finally:
            strict.close()
            lax.close()


def test_tls_authentication_role_is_the_certificate_cn(cert_broker: Broker, pki: Pki) -> None:
    alice = client(cert_broker.pulsar_ssl_url, tls_trust_certs_file_path=pki.ca,
                   authentication=pulsar.AuthenticationTLS(pki.alice_cert, pki.alice_key))
    bob = client(cert_broker.pulsar_ssl_url, tls_trust_certs_file_path=pki.ca,
                 authentication=pulsar.AuthenticationTLS(pki.bob_cert, pki.bob_key))
    try:
        assert round_trip(alice, "tls-auth") == b"over tls"
        with pytest.raises(pulsar.AuthorizationError):
            bob.create_producer("tls-auth")
    finally:
        alice.close()
        bob.close()
    roles = cert_broker.call(lambda _s: sorted(
        s.role for listener in cert_broker._listeners for s in listener.sessions.values()
    ))
    assert set(roles) <= {"alice", "bob"}


def test_untrusted_or_missing_client_certificate_is_refused(
    cert_broker: Broker, pki: Pki, caplog
) -> None:
    caplog.set_level(logging.INFO, logger="pulsarlab.broker.server")
    stored_before = cert_broker.call(lambda s: sorted(s.topics))
    rogue = client(cert_broker.pulsar_ssl_url, tls_trust_certs_file_path=pki.ca,
                   authentication=pulsar.AuthenticationTLS(pki.rogue_cert, pki.rogue_key))
    anonymous = client(cert_broker.pulsar_ssl_url, tls_trust_certs_file_path=pki.ca)
    try:
        for c in (rogue, anonymous):
            with pytest.raises((pulsar.ConnectError, pulsar.Timeout)):  # it retries
                c.create_producer("tls-refused")
    finally:
        rogue.close()
        anonymous.close()
    assert cert_broker.call(lambda s: sorted(s.topics)) == stored_before
    handshake = [r for r in caplog.records if "failed the TLS handshake" in r.getMessage()]
    assert handshake and all("\n" not in r.getMessage() for r in handshake)
    # one line per refused connection: nothing else about them at INFO
    assert [r for r in caplog.records if r.levelno >= logging.INFO] == handshake


def _get(url: str, context: ssl.SSLContext) -> tuple[int, object]:
    try:
        with urllib.request.urlopen(url, context=context, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def test_https_admin_with_client_certificates(cert_broker: Broker, pki: Pki) -> None:
    url = f"{cert_broker.web_url_tls}/admin/v2/persistent/public/default/partitioned"
    assert url.startswith("https://127.0.0.1:")
    alice = ssl.create_default_context(cafile=pki.ca)
    alice.load_cert_chain(pki.alice_cert, pki.alice_key)
    status, body = _get(url, alice)
    assert status == 200 and isinstance(body, list)
    nobody = ssl.create_default_context(cafile=pki.ca)
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        _get(url, nobody)  # tls_require_trusted_client_cert_on_connect: no handshake


def test_https_without_required_client_certs(tls_broker: Broker, pki: Pki) -> None:
    status, body = _get(f"{tls_broker.web_url_tls}/admin/v2/clusters",
                        ssl.create_default_context(cafile=pki.ca))
    assert status == 200 and body == ["standalone"]


@pytest.mark.parametrize(("setting", "message"), [
    ("tls_key_file_path", "tls_key_file_path: cannot read '/nonexistent/key.pem'"),
    ("tls_certificate_file_path",
     "tls_certificate_file_path: cannot read '/nonexistent/key.pem'"),
    ("tls_trust_certs_file_path",
     "tls_trust_certs_file_path: cannot read '/nonexistent/key.pem'"),
])
def test_an_unreadable_file_is_a_one_line_error(pki: Pki, setting: str, message: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        Broker(storage="memory", **tls_settings(pki, **{setting: "/nonexistent/key.pem"}))
    assert str(caught.value).startswith(message)


def test_a_key_that_is_not_the_certificates(pki: Pki) -> None:
    with pytest.raises(InvalidArgument, match="not a PEM certificate and its private key"):
        Broker(storage="memory", **tls_settings(pki, tls_key_file_path=pki.alice_key))
