"""Signed auth tokens like Pulsar's: HMAC-SHA256 JSON Web Tokens whose ``sub`` is the role.

Pulsar's token authentication (``AuthenticationProviderToken``) accepts JWTs signed with a
secret key (HS256) or a private key; pulsarlab implements the secret-key kind, which is what
``pulsar tokens create-secret-key`` / ``pulsar tokens create --subject ROLE`` produce:

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


def load_secret_key(spec: str | bytes) -> bytes:
    """The key named by ``spec``: raw bytes, ``file:///path``, a path, or ``data:;base64,…``."""
    if isinstance(spec, bytes):
        key = spec
    elif spec.startswith("data:"):
        _, sep, encoded = spec.partition(",")
        if not sep or ";base64" not in spec[: len(spec) - len(encoded)]:
            raise ValueError("an inline secret key must look like data:;base64,<base64>")
        try:
            key = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("the inline secret key is not valid base64") from None
    else:
        path = spec[len("file://"):] if spec.startswith("file://") else spec
        try:
            key = Path(path).read_bytes()
        except OSError as exc:
            raise ValueError(f"cannot read the token secret key {path!r}: {exc.strerror}") from None
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


def create_token(key: bytes, subject: str, expires_at: int | None = None) -> str:
    """A token for role ``subject``, valid until ``expires_at`` (epoch seconds) if given."""
    if not isinstance(subject, str) or not subject:
        raise ValueError("a token subject (role) must be a non-empty string")
    claims: dict[str, Any] = {"sub": subject}
    if expires_at is not None:
        claims["exp"] = int(expires_at)
    head = _b64(json.dumps(_HEADER, separators=(",", ":")).encode())
    body = _b64(json.dumps(claims, separators=(",", ":")).encode())
    signing_input = f"{head}.{body}"
    return f"{signing_input}.{_b64(_sign(key, signing_input))}"


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


def verify_token(key: bytes, token: str, now: float | None = None) -> str:
    """The role of a valid ``token`` signed with ``key``; :class:`InvalidToken` otherwise."""
    header, claims, signing_input, signature = _split(token)
    if header.get("alg") != "HS256":
        raise InvalidToken(f"token algorithm {header.get('alg')!r} is not accepted (HS256 only)")
    if not hmac.compare_digest(_sign(key, signing_input), signature):
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


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def parse_duration(text: str) -> int:
    """Seconds in a duration like ``30s``, ``10m``, ``12h``, ``7d``, ``2w``, ``1y``."""
    match = re.fullmatch(r"\s*(\d+)\s*([smhdwy]?)\s*", text or "")
    if not match:
        raise ValueError(f"a duration looks like 30s, 10m, 12h, 7d, 2w or 1y, not {text!r}")
    return int(match.group(1)) * _UNITS[match.group(2) or "s"]
