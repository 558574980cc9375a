"""Pulsar's basic authentication (``AuthenticationProviderBasic``): users from an htpasswd file.

The users come from ``basic_auth_conf`` (broker.conf's ``basicAuthConf``, or the JVM option
``-Dpulsar.auth.basic.conf``), read as Pulsar reads it: ``data:`` and ``file:`` URLs, a path
that exists, or else the file's content in base64. Each line is ``user:hash``; Pulsar
accepts exactly two hash kinds, and so does this module:

* ``$apr1$salt$digest`` — Apache's MD5 (``htpasswd -m``, ``openssl passwd -apr1``);
* anything else is checked as traditional DES ``crypt`` with its first two characters as
  the salt (``htpasswd -d``). Other schemes (bcrypt ``$2y$``, ``$5$``/``$6$`` SHA-crypt,
  ``{SHA}``) never match there, so their users cannot log in; :meth:`BasicUsers.load` names
  them once so the operator knows why.

A client sends ``user:password`` as the CONNECT's auth data (method ``basic``) or as an
``Authorization: Basic base64(user:password)`` header. A wrong user and a wrong password get
the same answer, Pulsar's "Unknown user or invalid password".
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote_to_bytes

from passlib.hash import apr_md5_crypt, des_crypt

from .errors import AuthenticationError, InvalidArgument

__all__ = ["BasicUsers", "read_conf_data"]

log = logging.getLogger("pulsarlab.broker.security")

UNKNOWN_USER = "Unknown user or invalid password"
_DES = re.compile(r"[./0-9A-Za-z]{13}")


def read_conf_data(spec: str) -> bytes:
    """The bytes ``spec`` names, as Pulsar's ``readData``: a ``data:``/``file:`` URL, an
    existing path, or base64 of the content itself."""
    if spec.startswith("data:"):
        head, sep, body = spec.partition(",")
        if not sep:
            raise InvalidArgument("a data: URL needs a ',' before its content")
        if head.endswith(";base64"):
            try:
                return base64.b64decode(body, validate=True)
            except (binascii.Error, ValueError):
                raise InvalidArgument("the data: URL's base64 is not valid") from None
        return unquote_to_bytes(body)
    path = spec[len("file://"):] if spec.startswith("file://") else spec
    if spec.startswith("file:") or Path(path).exists():
        path = path[len("file:"):] if path.startswith("file:") else path
        try:
            return Path(path).read_bytes()
        except OSError as exc:
            raise InvalidArgument(f"cannot read {path!r}: {exc.strerror}") from None
    try:
        return base64.b64decode(spec, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgument(
            f"{spec!r} is no file, no data:/file: URL and not base64 (Pulsar's 'Not supported "
            "config')"
        ) from None


@dataclass(frozen=True)
class BasicUsers:
    """The users and password hashes of basic authentication."""

    hashes: dict[str, str]

    @classmethod
    def load(cls, spec: str) -> BasicUsers:
        """Read ``basic_auth_conf``; a line that is not ``user:hash`` is an error naming it."""
        if not spec:
            raise InvalidArgument(
                "basic authentication needs basic_auth_conf (basicAuthConf or "
                "-Dpulsar.auth.basic.conf): no basic authentication config provided"
            )
        text = read_conf_data(spec).decode("utf-8", "replace")
        hashes: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), 1):
            parts = line.split(":")
            if len(parts) != 2 or not parts[0]:
                raise InvalidArgument(
                    f"basic_auth_conf line {number}: the format of the password auth conf "
                    "file is invalid (one user:hash per line)"
                )
            user, hashed = parts
            if not (hashed.startswith("$apr1$") or _DES.fullmatch(hashed)):
                log.warning(
                    "basic_auth_conf line %d: user %r has a hash Pulsar does not accept "
                    "(crypt or $apr1$ only); that user cannot log in", number, user,
                )
            hashes[user] = hashed
        return cls(hashes)

    def authenticate(self, credentials: str) -> str:
        """The user of ``user:password``; :class:`AuthenticationError` otherwise."""
        parts = credentials.split(":")
        if len(parts) != 2:
            raise AuthenticationError("authentication failed: basic credentials are user:password")
        user, password = parts
        hashed = self.hashes.get(user)
        if hashed is None or not _matches(password, hashed):
            raise AuthenticationError(f"authentication failed: {UNKNOWN_USER}")
        return user

    def authenticate_header(self, header: str) -> str:
        """The user of an ``Authorization: Basic base64(user:password)`` header."""
        scheme, _, encoded = header.strip().partition(" ")
        if scheme.lower() != "basic" or not encoded.strip():
            raise AuthenticationError('Authentication token has to be started with "Basic "')
        try:
            decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise AuthenticationError("authentication failed: Base64 decoding is failure") from None
        return self.authenticate(decoded)


def _matches(password: str, hashed: str) -> bool:
    if hashed.startswith("$apr1$"):
        return hashed.count("$") == 3 and apr_md5_crypt.verify(password, hashed)
    return bool(_DES.fullmatch(hashed)) and des_crypt.verify(password, hashed)
