"""Who may connect: the loopback rule and authentication (limits: :mod:`.limits`).

The broker serves loopback only unless authentication is on: binding any other address
without ``authentication_enabled`` is refused before a socket is opened
(:func:`check_bind`). With authentication on, a connection's first message must be a
``CONNECT`` the :class:`Authenticator` accepts with one of Pulsar's providers
(``authentication_providers``): ``token`` (a JWT signed with the broker's secret key,
:mod:`.tokens`; its subject is the role), ``tls`` (the client certificate's CN) or
``basic`` (:mod:`.basic_auth`). A client naming no configured provider gets
``anonymous_user_role`` if one is set, and is refused otherwise.
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
from dataclasses import dataclass

from . import tokens
from .basic_auth import BasicUsers
from .errors import AuthenticationError, InvalidArgument
from .settings import BrokerSettings

__all__ = [
    "AuthState",
    "Authenticator",
    "certificate_role",
    "check_bind",
    "event_stream_check",
    "events_host",
    "is_loopback",
    "provider_names",
]

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


PROVIDER_CLASSES = {
    "token": "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
    "tls": "org.apache.pulsar.broker.authentication.AuthenticationProviderTls",
    "basic": "org.apache.pulsar.broker.authentication.AuthenticationProviderBasic",
}
_BY_CLASS = {cls: name for name, cls in PROVIDER_CLASSES.items()}
AUTH_REFRESH_DATA = b"PulsarAuthRefresh"  # what Pulsar's AUTH_CHALLENGE carries on a refresh


def provider_names(spec: str) -> tuple[str, ...]:
    """``authentication_providers`` as method names: ``token``/``tls``/``basic`` or Pulsar's
    provider class names, comma-separated; any other name is an :class:`InvalidArgument`."""
    names: list[str] = []
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        name = item if item in PROVIDER_CLASSES else _BY_CLASS.get(item)
        if name is None:
            raise InvalidArgument(
                f"authentication provider {item!r} is not one pulsarlab has "
                f"(token, tls, basic: {', '.join(PROVIDER_CLASSES.values())})"
            )
        if name not in names:
            names.append(name)
    return tuple(names)


def certificate_role(certificate: dict | None) -> str:
    """The role of a TLS client certificate: its subject's common name, as Pulsar's
    ``AuthenticationProviderTls``; :class:`AuthenticationError` without one."""
    if not certificate:
        raise AuthenticationError(
            "authentication failed: the client presented no TLS certificate "
            "(AuthenticationTLS needs the broker's tls_trust_certs_file_path)"
        )
    for rdn in certificate.get("subject", ()):
        for key, value in rdn:
            if key == "commonName" and value:
                return value
    raise AuthenticationError("authentication failed: the client certificate has no CN")


@dataclass(frozen=True, slots=True)
class AuthState:
    """Who a connection authenticated as, with which method, and until when."""

    role: str
    method: str
    expires_at: float | None = None  # epoch seconds (a token's ``exp``)

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at


class Authenticator:
    """Pulsar's ``AuthenticationService``: the configured providers (token, tls, basic),
    chosen by a CONNECT's auth method or tried in turn for an HTTP request, and the
    anonymous role for clients that name none of them."""

    def __init__(self, settings: BrokerSettings) -> None:
        self.enabled = settings.authentication_enabled
        self._key: bytes | tokens.PublicKey | None = None
        self.providers: tuple[str, ...] = ()
        self.anonymous_role = settings.anonymous_user_role or None
        self._basic: BasicUsers | None = None
        if not self.enabled:
            return
        self.providers = provider_names(settings.authentication_providers) or ("token",)
        if "token" in self.providers:
            if settings.token_secret_key:
                try:
                    self._key = tokens.load_secret_key(settings.token_secret_key)
                except ValueError as exc:
                    raise InvalidArgument(f"token_secret_key: {exc}") from None
            elif settings.token_public_key:
                try:
                    self._key = tokens.PublicKey.load(settings.token_public_key,
                                                      settings.token_public_alg)
                except ValueError as exc:
                    raise InvalidArgument(f"token_public_key: {exc}") from None
            else:  # like Jupyter: a random secret for this run; create_token issues tokens
                self._key = tokens.create_secret_key()
        if "basic" in self.providers:
            try:
                self._basic = BasicUsers.load(settings.basic_auth_conf)
            except InvalidArgument as exc:
                raise InvalidArgument(f"basic_auth_conf: {exc}") from None

    def authenticate(self, token: object) -> str:
        """The role of ``token`` (a ZeroMQ CONNECT); the anonymous role without one, if set."""
        if (token is None or token == "") and self.anonymous_role:
            return self.anonymous_role
        if "token" not in self.providers:
            raise AuthenticationError(
                "authentication failed: this broker does not accept tokens "
                f"(its providers: {', '.join(self.providers)})"
            )
        return self._token_state(token).role

    def _token_state(self, token: object, now: float | None = None) -> AuthState:
        if token is None or token == "":
            raise AuthenticationError(
                "authentication required: connect with authentication="
                "AuthenticationToken(token)"
            )
        if not isinstance(token, str):
            raise AuthenticationError("authentication failed: the token must be a string")
        assert self._key is not None
        try:
            role = tokens.verify_token(self._key, token, now)
        except tokens.InvalidToken as exc:
            raise AuthenticationError(f"authentication failed: {exc}") from None
        exp = tokens.decode_claims(token).get("exp")
        return AuthState(role, "token", float(exp) if exp is not None else None)

    def authenticate_command(
        self, method: str, data: bytes, certificate: dict | None = None,
        now: float | None = None,
    ) -> AuthState:
        """The state of a pulsar:// CONNECT (or AUTH_RESPONSE) with ``method`` and ``data``;
        a method with no provider gets the anonymous role, as Pulsar's ServerCnx does."""
        if method not in self.providers:
            if self.anonymous_role:
                return AuthState(self.anonymous_role, "none")
            raise AuthenticationError(
                f"authentication failed: no authentication provider for method {method!r} "
                f"and no anonymous role (providers: {', '.join(self.providers)})"
            )
        if method == "token":
            return self._token_state(data.decode("utf-8", "replace"), now)
        if method == "tls":
            return AuthState(certificate_role(certificate), "tls")
        assert self._basic is not None
        return AuthState(self._basic.authenticate(data.decode("utf-8", "replace")), "basic")

    def authenticate_http(
        self, authorization: str, certificate: dict | None = None, method: str = ""
    ) -> str:
        """The role of an HTTP request: the provider its ``X-Pulsar-Auth-Method-Name``
        names, else each provider in turn; the anonymous role when none accepts."""
        tried = (method,) if method else self.providers
        reasons = []
        for name in tried:
            try:
                return self._http_role(name, authorization, certificate)
            except AuthenticationError as exc:
                reasons.append(str(exc))
        if self.anonymous_role and not authorization and certificate is None:
            return self.anonymous_role
        raise AuthenticationError(
            reasons[-1] if len(reasons) == 1 else
            "Authentication required: " + "; ".join(reasons or ["no provider"])
        )

    def _http_role(self, name: str, authorization: str, certificate: dict | None) -> str:
        if name == "tls":
            return certificate_role(certificate)
        if name == "basic" and self._basic is not None:
            return self._basic.authenticate_header(authorization)
        if name == "token":
            scheme, _, token = authorization.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise AuthenticationError(
                    "Authentication required: send 'Authorization: Bearer <token>'"
                )
            return self._token_state(token.strip()).role
        raise AuthenticationError(f"no authentication provider for method {name!r}")

    def create_token(self, role: str, expires_in_seconds: int | None = None) -> str:
        """A token for ``role`` signed with this broker's key."""
        if not self.enabled or not isinstance(self._key, bytes):
            raise InvalidArgument(
                "this broker cannot sign tokens: token authentication is not enabled, or it "
                "checks tokens with a public key"
            )
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
