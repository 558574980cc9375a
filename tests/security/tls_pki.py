"""A throw-away certificate authority for the TLS tests, made at run time with ``cryptography``.

:func:`make_pki` writes PEM files into a directory: a CA, the broker's certificate for
127.0.0.1 / localhost (and one without those names, for hostname checks), client
certificates whose CN is the role (``alice``, ``bob``), and a second CA with a client of its
own that the broker does not trust.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Pki:
    ca: str
    broker_cert: str
    broker_key: str
    broker_no_san_cert: str
    broker_no_san_key: str
    alice_cert: str
    alice_key: str
    bob_cert: str
    bob_key: str
    other_ca: str
    rogue_cert: str
    rogue_key: str


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _issue(subject: str, key: ec.EllipticCurvePrivateKey, issuer: tuple | None,
           *, ca: bool = False, names: list[x509.GeneralName] | None = None) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    issuer_name, issuer_key = issuer if issuer else (_name(subject), key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _write(where: Path, stem: str, cert: x509.Certificate,
           key: ec.EllipticCurvePrivateKey | None = None) -> tuple[str, str]:
    cert_path = where / f"{stem}.cert.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path = where / f"{stem}.key.pem"
    if key is not None:
        key_path.write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ))
    return str(cert_path), str(key_path)


def broker_tls_settings(pki: Pki, **extra: object) -> dict[str, object]:
    """A broker's settings for pulsar+ssl:// and https:// listeners on free ports."""
    return {
        "broker_service_port_tls": 0, "web_service_port_tls": 0,
        "tls_certificate_file_path": pki.broker_cert, "tls_key_file_path": pki.broker_key,
        "tls_trust_certs_file_path": pki.ca, **extra,
    }


def make_pki(where: Path) -> Pki:
    """A CA, a broker certificate, client certificates and an untrusted CA, as PEM files."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _issue("pulsarlab test CA", ca_key, None, ca=True)
    ca = (_name("pulsarlab test CA"), ca_key)
    other_key = ec.generate_private_key(ec.SECP256R1())
    other_cert = _issue("another CA", other_key, None, ca=True)
    other = (_name("another CA"), other_key)
    files: dict[str, str] = {}
    files["ca"] = _write(where, "ca", ca_cert)[0]
    files["other_ca"] = _write(where, "other-ca", other_cert)[0]
    names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    made = [
        ("broker", "broker", ca, names),
        ("broker_no_san", "broker.example", ca, [x509.DNSName("broker.example")]),
        ("alice", "alice", ca, None),
        ("bob", "bob", ca, None),
        ("rogue", "alice", other, None),
    ]
    for stem, cn, issuer, alt in made:
        key = ec.generate_private_key(ec.SECP256R1())
        cert_path, key_path = _write(where, stem, _issue(cn, key, issuer, names=alt), key)
        files[f"{stem}_cert"], files[f"{stem}_key"] = cert_path, key_path
    return Pki(**files)
