"""TlsConnection without sockets: a client SSLObject and the broker's side over memory."""

from __future__ import annotations

import ssl

import pytest

from pulsarlab.broker import BrokerSettings
from pulsarlab.broker.tls import TlsConnection, server_context

from .tls_pki import Pki


def settings(pki: Pki, **extra: object) -> BrokerSettings:
    return BrokerSettings.from_kwargs(**{
        "broker_service_port_tls": 0, "tls_certificate_file_path": pki.broker_cert,
        "tls_key_file_path": pki.broker_key, "tls_trust_certs_file_path": pki.ca, **extra})


def client_side(pki: Pki, cert: str | None = None, key: str | None = None,
                newest: ssl.TLSVersion = ssl.TLSVersion.MAXIMUM_SUPPORTED):
    context = ssl.create_default_context(cafile=pki.ca)
    context.maximum_version = newest
    if cert:
        context.load_cert_chain(cert, key)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    return context.wrap_bio(incoming, outgoing, server_hostname="localhost"), incoming, outgoing


def handshake(server: TlsConnection, client, incoming, outgoing) -> bytes:
    """Run both sides until the client is done; the plaintext the server got meanwhile."""
    plain = b""
    for _ in range(10):
        try:
            client.do_handshake()
            done = True
        except ssl.SSLWantReadError:
            done = False
        plain += server.receive(outgoing.read())
        incoming.write(server.data_to_send())
        if done and server.handshake_done:
            return plain
    raise AssertionError("the handshake did not finish")


@pytest.fixture
def pki(tls_pki: Pki) -> Pki:
    return tls_pki


def test_round_trip_and_the_client_certificate(pki: Pki) -> None:
    server = TlsConnection(server_context(settings(pki)))
    client, incoming, outgoing = client_side(pki, pki.alice_cert, pki.alice_key)
    handshake(server, client, incoming, outgoing)
    assert dict(x[0] for x in server.peer_certificate()["subject"])["commonName"] == "alice"
    client.write(b"CONNECT")
    assert server.receive(outgoing.read()) == b"CONNECT"
    server.send(b"CONNECTED")
    incoming.write(server.data_to_send())
    assert client.read() == b"CONNECTED"


def test_no_client_certificate_is_fine_unless_required(pki: Pki) -> None:
    server = TlsConnection(server_context(settings(pki)))
    client, incoming, outgoing = client_side(pki)
    handshake(server, client, incoming, outgoing)
    assert server.peer_certificate() is None
    strict = TlsConnection(server_context(
        settings(pki, tls_require_trusted_client_cert_on_connect=True)))
    client, incoming, outgoing = client_side(pki)
    with pytest.raises(ssl.SSLError):
        handshake(strict, client, incoming, outgoing)


def test_an_untrusted_client_certificate_fails_the_handshake(pki: Pki) -> None:
    server = TlsConnection(server_context(settings(pki)))
    client, incoming, outgoing = client_side(pki, pki.rogue_cert, pki.rogue_key)
    with pytest.raises(ssl.SSLError, match="CERTIFICATE_VERIFY_FAILED"):
        handshake(server, client, incoming, outgoing)
    assert server.data_to_send()  # the alert for the client


def test_require_without_a_trust_store_is_refused(pki: Pki) -> None:
    from pulsarlab.broker.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="needs tls_trust_certs_file_path"):
        server_context(settings(pki, tls_trust_certs_file_path="",
                                tls_require_trusted_client_cert_on_connect=True))


def test_tls_protocols_limit_the_versions(pki: Pki) -> None:
    from pulsarlab.broker.errors import InvalidArgument

    context = server_context(settings(pki, tls_protocols="TLSv1.3"))
    assert context.minimum_version == ssl.TLSVersion.TLSv1_3
    server = TlsConnection(context)
    client, incoming, outgoing = client_side(pki)
    handshake(server, client, incoming, outgoing)
    assert client.version() == "TLSv1.3"
    old = TlsConnection(context)
    client, incoming, outgoing = client_side(pki, newest=ssl.TLSVersion.TLSv1_2)
    with pytest.raises(ssl.SSLError):
        handshake(old, client, incoming, outgoing)
    with pytest.raises(InvalidArgument, match="tls_protocols: TLSv1 not supported"):
        server_context(settings(pki, tls_protocols="TLSv1.2,TLSv1"))
