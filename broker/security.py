"""Who may connect: the loopback rule and token authentication (limits: :mod:`.limits`).

The broker serves loopback only unless authentication is on: binding any other address
without ``authentication_enabled`` is refused before a socket is opened
(:func:`check_bind`). With authentication on, a connection's first message must be a
``CONNECT`` carrying a token the :class:`Authenticator` accepts (a JWT signed with the
broker's secret key, :mod:`.tokens`); the token's subject becomes the connection's role.
The event stream (PUB socket) cannot read a CONNECT, so with authentication on it binds on
loopback only (:func:`events_host`) and checks a token in the ZeroMQ handshake instead
(:func:`event_stream_check`, via :mod:`.zap`).

Everything here is sans-I/O: the server asks, these answer or raise a
:class:`~.errors.PulsarLabError` with a one-line reason.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable

from . import tokens
from .errors import AuthenticationError, InvalidArgument
from .settings import BrokerSettings

__all__ = ["Authenticator", "check_bind", "event_stream_check", "events_host", "is_loopback"]

LOOPBACK = "127.0.0.1"


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the broker on this machine."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_bind(host: str, settings: BrokerSettings) -> None:
    """Refuse a non-loopback bind address unless authentication is enabled."""
    if not is_loopback(host) and not settings.authentication_enabled:
        raise InvalidArgument(
            f"refusing to listen on {host}: a non-loopback address needs authentication "
            "(set authentication_enabled=True and a token_secret_key)"
        )


def events_host(host: str, settings: BrokerSettings) -> str:
    """Where the event stream binds: loopback whenever authentication is on."""
    if settings.authentication_enabled and not is_loopback(host):
        return LOOPBACK
    return host


class Authenticator:
    """Checks CONNECT tokens against the broker's HS256 secret key."""

    def __init__(self, settings: BrokerSettings) -> None:
        self.enabled = settings.authentication_enabled
        self._key: bytes | None = None
        if not self.enabled:
            return
        if settings.token_secret_key:
            try:
                self._key = tokens.load_secret_key(settings.token_secret_key)
            except ValueError as exc:
                raise InvalidArgument(f"token_secret_key: {exc}") from None
        else:  # like Jupyter: a random secret for this run; Broker.create_token issues tokens
            self._key = tokens.create_secret_key()

    def authenticate(self, token: object) -> str:
        """The role of ``token``; :class:`AuthenticationError` naming what is wrong."""
        if token is None or token == "":
            raise AuthenticationError(
                "authentication required: connect with authentication="
                "AuthenticationToken(token)"
            )
        if not isinstance(token, str):
            raise AuthenticationError("authentication failed: the token must be a string")
        assert self._key is not None
        try:
            return tokens.verify_token(self._key, token)
        except tokens.InvalidToken as exc:
            raise AuthenticationError(f"authentication failed: {exc}") from None

    def create_token(self, role: str, expires_in_seconds: int | None = None) -> str:
        """A token for ``role`` signed with this broker's key."""
        if not self.enabled or self._key is None:
            raise InvalidArgument("authentication is not enabled on this broker")
        expires_at = None if expires_in_seconds is None else int(time.time()) + expires_in_seconds
        return tokens.create_token(self._key, role, expires_at)


def event_stream_check(
    authenticator: Authenticator, settings: BrokerSettings
) -> Callable[[str], tuple[bool, str, str]]:
    """The ZAP check for event subscribers: a valid token, of a superuser when authorization
    is on (events name every topic). Pure, so the ZAP thread may call it."""
    superusers = frozenset(r.strip() for r in settings.super_user_roles.split(",") if r.strip())

    def check(token: str) -> tuple[bool, str, str]:
        try:
            role = authenticator.authenticate(token)
        except AuthenticationError as exc:
            return False, str(exc), ""
        if settings.authorization_enabled and role not in superusers:
            return False, f"role {role!r} is not a superuser: events name every topic", ""
        return True, "", role

    return check
