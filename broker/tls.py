"""TLS for the pulsar+ssl:// and https:// listeners (brokerServicePortTls, webServicePortTls).

:func:`server_context` builds the broker's :class:`ssl.SSLContext` from the settings Pulsar
names ``tlsCertificateFilePath``, ``tlsKeyFilePath``, ``tlsTrustCertsFilePath``,
``tlsRequireTrustedClientCertOnConnect`` and ``tlsAllowInsecureConnection``: with trusted
CAs a client may present a certificate (its CN is the role of ``AuthenticationTLS``), with
``require`` it must, and an unreadable or mismatched file is a one-line error naming the
setting before any socket is opened.

:class:`TlsConnection` is TLS without I/O (the standard library's ``SSLObject`` over two
memory buffers): the pulsar+ssl:// transport hands it the bytes it read from the socket
and writes what it returns, so the pulsar:// session above it never sees ciphertext.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from .errors import InvalidArgument
from .settings import BrokerSettings

__all__ = ["TlsConnection", "server_context", "tls_enabled"]

_READ = 1 << 16


def tls_enabled(settings: BrokerSettings) -> bool:
    """Whether any TLS listener is configured."""
    return settings.broker_service_port_tls >= 0 or settings.web_service_port_tls >= 0


def _readable(name: str, path: str) -> None:
    if not path:
        raise InvalidArgument(f"a TLS listener needs {name} (a PEM file)")
    try:
        with Path(path).open("rb") as handle:
            handle.read(1)
    except OSError as exc:
        raise InvalidArgument(f"{name}: cannot read {path!r}: {exc.strerror}") from None


def server_context(settings: BrokerSettings) -> ssl.SSLContext:
    """The broker side of TLS; :class:`InvalidArgument` naming the setting that is wrong."""
    _readable("tls_certificate_file_path", settings.tls_certificate_file_path)
    _readable("tls_key_file_path", settings.tls_key_file_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(settings.tls_certificate_file_path, settings.tls_key_file_path)
    except ssl.SSLError as exc:
        raise InvalidArgument(
            "tls_certificate_file_path / tls_key_file_path: not a PEM certificate and its "
            f"private key ({exc.reason or exc})"
        ) from None
    trust = settings.tls_trust_certs_file_path
    if trust:
        _readable("tls_trust_certs_file_path", trust)
        try:
            context.load_verify_locations(trust)
        except ssl.SSLError as exc:
            raise InvalidArgument(
                f"tls_trust_certs_file_path: no PEM certificates in {trust!r} "
                f"({exc.reason or exc})"
            ) from None
    _set_protocols(context, settings.tls_protocols)
    if settings.tls_allow_insecure_connection or not trust:
        context.verify_mode = ssl.CERT_NONE
        if settings.tls_require_trusted_client_cert_on_connect:
            raise InvalidArgument(
                "tls_require_trusted_client_cert_on_connect needs tls_trust_certs_file_path "
                "and no tls_allow_insecure_connection"
            )
    elif settings.tls_require_trusted_client_cert_on_connect:
        context.verify_mode = ssl.CERT_REQUIRED
    else:
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


def _set_protocols(context: ssl.SSLContext, spec: str) -> None:
    """Limit the listeners to the versions ``tls_protocols`` names (tlsProtocols)."""
    names = [name.strip() for name in spec.split(",") if name.strip()]
    if not names:
        return
    unknown = [name for name in names if name not in _VERSIONS]
    if unknown:
        raise InvalidArgument(
            f"tls_protocols: {', '.join(unknown)} not supported (use {', '.join(_VERSIONS)})"
        )
    versions = sorted(_VERSIONS[name] for name in names)
    context.minimum_version, context.maximum_version = versions[0], versions[-1]


class TlsConnection:
    """One server-side TLS connection, bytes in and bytes out."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self.handshake_done = False

    def receive(self, data: bytes) -> bytes:
        """Ciphertext read from the socket → the plaintext it completes (maybe none).

        A failed handshake (an untrusted or missing client certificate, a client that
        does not trust the broker) raises :class:`ssl.SSLError`; :meth:`data_to_send`
        then holds the alert for the client."""
        self._incoming.write(data)
        if not self.handshake_done:
            try:
                self._ssl.do_handshake()
            except ssl.SSLWantReadError:
                return b""
            self.handshake_done = True
        chunks = []
        while True:
            try:
                chunk = self._ssl.read(_READ)
            except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)

    def send(self, data: bytes) -> None:
        """Plaintext to encrypt for the client."""
        if data:
            self._ssl.write(data)

    def data_to_send(self) -> bytes:
        """Ciphertext (handshake records included) to write to the socket."""
        return self._outgoing.read()

    def peer_certificate(self) -> dict | None:
        """The client's verified certificate, or ``None`` when it presented none."""
        return self._ssl.getpeercert() or None if self.handshake_done else None
