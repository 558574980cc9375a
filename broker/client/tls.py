"""TLS for the client's ``pulsar+ssl://`` connections: the official client's options as an
:class:`ssl.SSLContext`, and TLS failures as one-line errors.

The options are the official ``pulsar.Client``'s: ``tls_trust_certs_file_path`` (the CAs the
broker's certificate must chain to; the system's CAs without it),
``tls_allow_insecure_connection`` (accept any certificate), ``tls_validate_hostname`` (the
certificate must name the host, off by default as in Pulsar's clients) and a client
certificate with its key (``AuthenticationTLS(cert, key)`` or ``tls_certificate_file_path``
/ ``tls_private_key_file_path``), sent in the handshake so a broker with
``AuthenticationProviderTls`` takes its CN as the role.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from .exceptions import InvalidConfiguration

__all__ = ["TlsOptions", "client_context", "handshake_error"]


@dataclass(frozen=True, slots=True)
class TlsOptions:
    trust_certs_file_path: str | None = None
    allow_insecure_connection: bool = False
    validate_hostname: bool = False
    certificate_file_path: str | None = None
    private_key_file_path: str | None = None


def client_context(options: TlsOptions) -> ssl.SSLContext:
    """The context every ``pulsar+ssl://`` socket of a client is wrapped with; an unreadable
    file is an ``InvalidConfiguration`` naming the option."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if options.allow_insecure_connection:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.check_hostname = options.validate_hostname
        context.verify_mode = ssl.CERT_REQUIRED
        if options.trust_certs_file_path:
            _load(lambda: context.load_verify_locations(cafile=options.trust_certs_file_path),
                  "tls_trust_certs_file_path", options.trust_certs_file_path)
        else:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if options.certificate_file_path or options.private_key_file_path:
        if not (options.certificate_file_path and options.private_key_file_path):
            raise InvalidConfiguration(
                "a TLS client certificate needs both its certificate and its private key file")
        _load(lambda: context.load_cert_chain(options.certificate_file_path,
                                              options.private_key_file_path),
              "the TLS client certificate", options.certificate_file_path)
    return context


def _load(load: object, what: str, path: str) -> None:
    try:
        load()  # type: ignore[operator]
    except (OSError, ssl.SSLError) as exc:
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc
        raise InvalidConfiguration(f"{what}: cannot load {path!r}: {reason}") from None


def handshake_error(url: str, exc: BaseException) -> str:
    """One line saying why the TLS handshake with ``url`` failed."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        reason = exc.verify_message or exc.reason or "certificate verify failed"
        return f"TLS handshake with {url} failed: the broker's certificate is not trusted " \
               f"({reason})"
    reason = getattr(exc, "reason", None) or str(exc).splitlines()[0] or type(exc).__name__
    return f"TLS handshake with {url} failed: {reason}"
