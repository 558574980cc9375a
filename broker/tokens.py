"""Signed auth tokens like Pulsar's: HMAC-SHA256 JSON Web Tokens whose ``sub`` is the role.

Pulsar's token authentication (``AuthenticationProviderToken``) accepts JWTs signed with a
secret key (HS256) or a private key. pulsarlab checks both (a private key's tokens with
:class:`PublicKey`, ``tokenPublicKey``/``tokenPublicAlg``) and issues the secret-key kind,
which is what ``pulsar tokens create-secret-key`` / ``pulsar tokens create --subject ROLE``
produce:

* a secret key is 32 random bytes from :mod:`secrets` (as Jupyter makes its tokens),
  stored raw in a file (mode 0600) or passed inline; broker settings and the command line
  name it ``file:///path/to/key`` (or a bare path) or ``data:;base64,<base64>``;
* a token is ``base64url(header).base64url(claims).base64url(HMAC-SHA256(key, first two))``
  with header ``{"alg": "HS256"}`` and claims ``{"sub": ROLE}`` plus an optional ``exp``
  (seconds since the epoch).

:func:`verify_token` checks the algorithm (only HS256: ``none`` and the rest are refused),
compares the signature in constant time (:func:`hmac.compare_digest`), then the expiry,
and returns the role. Everything here is pure: no I/O except the key-file helpers.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import re
import secrets
import time
from pathlib import Path
from typing import Any

__all__ = [
    "InvalidToken",
    "PrivateKey",
    "PublicKey",
    "create_key_pair",
    "create_secret_key",
    "create_token",
    "decode_claims",
    "load_secret_key",
    "parse_duration",
    "verify_token",
    "write_secret_file",
]

SECRET_KEY_BYTES = 32
_HEADER = {"alg": "HS256"}


class InvalidToken(ValueError):
    """A token that is malformed, badly signed, expired or without a subject."""


def create_secret_key() -> bytes:
    """A fresh HS256 secret key: 32 bytes from the OS's cryptographic source."""
    return secrets.token_bytes(SECRET_KEY_BYTES)


def write_secret_file(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` readable by its owner only (0600), replacing it."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    return target


def _key_bytes(spec: str, what: str) -> bytes:
    """The bytes of a key named ``file:///path``, a path, or ``data:;base64,…``."""
    if spec.startswith("data:"):
        _, sep, encoded = spec.partition(",")
        if not sep or ";base64" not in spec[: len(spec) - len(encoded)]:
            raise ValueError(f"an inline {what} must look like data:;base64,<base64>")
        try:
            return base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"the inline {what} is not valid base64") from None
    path = spec[len("file://"):] if spec.startswith("file://") else spec
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read the {what} {path!r}: {exc.strerror}") from None


def load_secret_key(spec: str | bytes) -> bytes:
    """The key named by ``spec``: raw bytes, ``file:///path``, a path, or ``data:;base64,…``."""
    key = spec if isinstance(spec, bytes) else _key_bytes(spec, "token secret key")
    if len(key) < 16:
        raise ValueError(f"a token secret key needs at least 16 bytes, this one has {len(key)}")
    return key


def read_token(spec: str) -> str:
    """A client's token given as itself or as ``file:///path`` of a file holding it."""
    if not spec.startswith("file://"):
        return spec.strip()
    path = spec[len("file://"):]
    try:
        return Path(path).read_text().strip()
    except OSError as exc:
        raise ValueError(f"cannot read the token file {path!r}: {exc.strerror}") from None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    if not re.fullmatch(r"[A-Za-z0-9_-]*", text):
        raise InvalidToken("malformed token: not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise InvalidToken("malformed token: not base64url") from None


def _sign(key: bytes, signing_input: str) -> bytes:
    return hmac.new(key, signing_input.encode("ascii"), hashlib.sha256).digest()


def create_token(key: bytes | PrivateKey, subject: str, expires_at: int | None = None) -> str:
    """A token for role ``subject``, valid until ``expires_at`` (epoch seconds) if given;
    signed with an HS256 secret ``key`` or a :class:`PrivateKey`."""
    if not isinstance(subject, str) or not subject:
        raise ValueError("a token subject (role) must be a non-empty string")
    claims: dict[str, Any] = {"sub": subject}
    if expires_at is not None:
        claims["exp"] = int(expires_at)
    header = {"alg": key.algorithm} if isinstance(key, PrivateKey) else _HEADER
    head = _b64(json.dumps(header, separators=(",", ":")).encode())
    body = _b64(json.dumps(claims, separators=(",", ":")).encode())
    signing_input = f"{head}.{body}"
    signature = (key.sign(signing_input.encode("ascii")) if isinstance(key, PrivateKey)
                 else _sign(key, signing_input))
    return f"{signing_input}.{_b64(signature)}"


def _split(token: str) -> tuple[dict[str, Any], dict[str, Any], str, bytes]:
    if not isinstance(token, str) or token.count(".") != 2 or len(token) > 8192:
        raise InvalidToken("malformed token: expected header.claims.signature")
    head, body, sig = token.split(".")
    try:
        header = json.loads(_unb64(head))
        claims = json.loads(_unb64(body))
    except (UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, InvalidToken):
            raise
        raise InvalidToken("malformed token: header or claims are not JSON") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise InvalidToken("malformed token: header and claims must be JSON objects")
    return header, claims, f"{head}.{body}", _unb64(sig)


def decode_claims(token: str) -> dict[str, Any]:
    """The claims of ``token`` without checking its signature (``pulsar tokens show``)."""
    return _split(token)[1]


def verify_token(key: bytes | PublicKey, token: str, now: float | None = None) -> str:
    """The role of a valid ``token`` signed with ``key`` (an HS256 secret, or a
    :class:`PublicKey`); :class:`InvalidToken` otherwise."""
    header, claims, signing_input, signature = _split(token)
    if isinstance(key, PublicKey):
        key.verify(header.get("alg"), signing_input.encode("ascii"), signature)
    elif header.get("alg") != "HS256":
        raise InvalidToken(f"token algorithm {header.get('alg')!r} is not accepted (HS256 only)")
    elif not hmac.compare_digest(_sign(key, signing_input), signature):
        raise InvalidToken("token signature does not match the broker's secret key")
    exp = claims.get("exp")
    if exp is not None:
        if not isinstance(exp, int | float) or isinstance(exp, bool):
            raise InvalidToken("token expiry 'exp' must be a number of seconds")
        if (time.time() if now is None else now) >= exp:
            raise InvalidToken("token has expired")
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise InvalidToken("token has no subject (role)")
    return subject


_HASHES = {"256": "SHA256", "384": "SHA384", "512": "SHA512"}
PUBLIC_ALGORITHMS = tuple(f"{kind}{bits}" for kind in ("RS", "PS", "ES") for bits in _HASHES)


class PublicKey:
    """A public key tokens are checked with (Pulsar's ``tokenPublicKey`` with
    ``tokenPublicAlg``): RSA for RS*/PS*, elliptic curve for ES*. Needs ``cryptography``."""

    def __init__(self, key: Any, algorithm: str) -> None:
        self.key = key
        self.algorithm = algorithm

    @classmethod
    def load(cls, spec: str, algorithm: str = "RS256") -> PublicKey:
        """``tokenPublicKey`` (``file:///path``, a path or ``data:;base64,…``; DER as
        ``pulsar tokens create-key-pair`` writes it, or PEM) for ``tokenPublicAlg``."""
        _check_algorithm(algorithm)
        try:
            from cryptography.hazmat.primitives import serialization
            from cryptography.hazmat.primitives.asymmetric import ec, rsa
        except ImportError:  # pragma: no cover - cryptography is a dependency
            raise ValueError("token_public_key needs the cryptography package") from None
        data = _key_bytes(spec, "token public key")
        try:
            key = serialization.load_der_public_key(data)
        except ValueError:
            try:
                key = serialization.load_pem_public_key(data)
            except ValueError:
                raise ValueError("the token public key is neither DER nor PEM") from None
        wanted = ec.EllipticCurvePublicKey if algorithm.startswith("ES") else rsa.RSAPublicKey
        if not isinstance(key, wanted):
            raise ValueError(f"the token public key does not fit tokenPublicAlg {algorithm}")
        return cls(key, algorithm)

    def verify(self, algorithm: object, signing_input: bytes, signature: bytes) -> None:
        """Check one signature; :class:`InvalidToken` naming what is wrong."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

        if algorithm != self.algorithm:
            raise InvalidToken(f"token algorithm {algorithm!r} is not accepted "
                               f"({self.algorithm} only)")
        if self.algorithm.startswith("ES"):
            half = len(signature) // 2
            signature = encode_dss_signature(int.from_bytes(signature[:half], "big"),
                                             int.from_bytes(signature[half:], "big"))
        try:
            self.key.verify(signature, signing_input, *_padding(self.algorithm))
        except InvalidSignature:
            raise InvalidToken("token signature does not match the broker's public key") from None


def _check_algorithm(algorithm: str) -> None:
    if algorithm not in PUBLIC_ALGORITHMS:
        raise ValueError(f"tokenPublicAlg {algorithm!r} is not one of "
                         f"{', '.join(PUBLIC_ALGORITHMS)}")


def _padding(algorithm: str) -> Any:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, padding

    digest = getattr(hashes, _HASHES[algorithm[2:]])()
    if algorithm.startswith("ES"):
        return (ec.ECDSA(digest),)
    if algorithm.startswith("RS"):
        return padding.PKCS1v15(), digest
    return padding.PSS(mgf=padding.MGF1(digest), salt_length=padding.PSS.DIGEST_LENGTH), digest


class PrivateKey:
    """A private key that signs tokens (``pulsar tokens create --private-key``)."""

    def __init__(self, key: Any, algorithm: str) -> None:
        self.key = key
        self.algorithm = algorithm

    @classmethod
    def load(cls, spec: str, algorithm: str = "RS256") -> PrivateKey:
        """The key of ``file:///path`` (a path, ``data:;base64,…``), DER or PEM, PKCS#8."""
        from cryptography.hazmat.primitives import serialization

        _check_algorithm(algorithm)
        data = _key_bytes(spec, "token private key")
        try:
            key = serialization.load_der_private_key(data, None)
        except ValueError:
            try:
                key = serialization.load_pem_private_key(data, None)
            except ValueError:
                raise ValueError("the token private key is neither DER nor PEM") from None
        return cls(key, algorithm)

    def sign(self, signing_input: bytes) -> bytes:
        from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

        signature = self.key.sign(signing_input, *_padding(self.algorithm))
        if self.algorithm.startswith("ES"):  # JWS wants r || s, each the curve's size
            size = (self.key.curve.key_size + 7) // 8
            r, s = decode_dss_signature(signature)
            return r.to_bytes(size, "big") + s.to_bytes(size, "big")
        return signature


def create_key_pair(algorithm: str = "RS256") -> tuple[bytes, bytes]:
    """``(private key, public key)``, DER (PKCS#8 and X.509), as ``pulsar tokens
    create-key-pair`` writes them: RSA 2048 for RS*/PS*, the matching curve for ES*."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    _check_algorithm(algorithm)
    curves = {"ES256": ec.SECP256R1(), "ES384": ec.SECP384R1(), "ES512": ec.SECP521R1()}
    key = (ec.generate_private_key(curves[algorithm]) if algorithm in curves
           else rsa.generate_private_key(public_exponent=65537, key_size=2048))
    private = key.private_bytes(serialization.Encoding.DER,
                                serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.DER,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def parse_duration(text: str) -> int:
    """Seconds in a duration like ``30s``, ``10m``, ``12h``, ``7d``, ``2w``, ``1y``."""
    match = re.fullmatch(r"\s*(\d+)\s*([smhdwy]?)\s*", text or "")
    if not match:
        raise ValueError(f"a duration looks like 30s, 10m, 12h, 7d, 2w or 1y, not {text!r}")
    return int(match.group(1)) * _UNITS[match.group(2) or "s"]
