"""The client's TLS options as an ``ssl.SSLContext`` (what ``pulsar+ssl://`` sockets are
wrapped with), and TLS failures as one line."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from pulsarlab.broker.client.exceptions import InvalidConfiguration
from pulsarlab.broker.client.tls import TlsOptions, client_context, handshake_error


def test_by_default_the_chain_is_checked_but_not_the_host_name() -> None:
    context = client_context(TlsOptions())
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname is False  # tls_validate_hostname=False, Pulsar's default
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2


def test_hostname_validation_and_insecure_mode() -> None:
    assert client_context(TlsOptions(validate_hostname=True)).check_hostname is True
    insecure = client_context(TlsOptions(allow_insecure_connection=True, validate_hostname=True))
    assert insecure.verify_mode == ssl.CERT_NONE and insecure.check_hostname is False


def test_trusted_cas_come_from_the_file(tls_pki) -> None:
    context = client_context(TlsOptions(trust_certs_file_path=tls_pki.ca))
    assert [c["subject"] for c in context.get_ca_certs()] == [
        ((("commonName", "pulsarlab test CA"),),)]


def test_bad_files_are_one_line_errors(tls_pki, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate")
    for options, start in [
        (TlsOptions(trust_certs_file_path=str(tmp_path / "missing.pem")),
         "tls_trust_certs_file_path: cannot load"),
        (TlsOptions(trust_certs_file_path=str(garbage)), "tls_trust_certs_file_path: cannot load"),
        (TlsOptions(certificate_file_path=tls_pki.alice_cert,
                    private_key_file_path=tls_pki.bob_key),
         "the TLS client certificate: cannot load"),
        (TlsOptions(certificate_file_path=tls_pki.alice_cert), "a TLS client certificate needs"),
    ]:
        with pytest.raises(InvalidConfiguration) as caught:
            client_context(options)
        assert str(caught.value).startswith(start) and "\n" not in str(caught.value)


def test_handshake_errors_are_one_line() -> None:
    untrusted = ssl.SSLCertVerificationError(1, "certificate verify failed")
    untrusted.verify_message = "self-signed certificate in certificate chain"
    assert handshake_error("pulsar+ssl://b:6651", untrusted) == (
        "TLS handshake with pulsar+ssl://b:6651 failed: the broker's certificate is not "
        "trusted (self-signed certificate in certificate chain)")
    reset = ConnectionResetError(104, "Connection reset by peer")
    assert handshake_error("pulsar+ssl://b:6651", reset).startswith(
        "TLS handshake with pulsar+ssl://b:6651 failed: ")
