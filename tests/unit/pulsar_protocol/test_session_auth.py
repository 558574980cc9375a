"""Authentication on a pulsar:// session: several providers, the anonymous role, and the
refresh of expired tokens with AUTH_CHALLENGE (Pulsar's authenticationRefreshCheckSeconds)."""

from __future__ import annotations

import base64

from passlib.hash import apr_md5_crypt, des_crypt

from pulsarlab.broker import tokens
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.security import AUTH_REFRESH_DATA

from .support import Harness, T, command

KEY = b"k" * 32
KEY_SPEC = "data:;base64," + base64.b64encode(KEY).decode()


def users_conf() -> str:
    lines = f"alice:{des_crypt.hash('wonder')}\nbob:{apr_md5_crypt.hash('builder')}\n"
    return "data:;base64," + base64.b64encode(lines.encode()).decode()


def harness(**extra: object) -> Harness:
    return Harness(authentication_enabled=True, token_secret_key=KEY_SPEC,
                   basic_auth_conf=users_conf(),
                   authentication_providers="token,basic,tls", **extra)


def token(h: Harness, role: str, lifetime_s: int | None = None) -> bytes:
    expires = None if lifetime_s is None else h.clock.now_ms() // 1000 + lifetime_s
    return tokens.create_token(KEY, role, expires).encode()


def test_each_provider_by_its_method_name() -> None:
    h = harness()
    cases = [
        ("token", token(h, "carol"), None, "carol"),
        ("basic", b"alice:wonder", None, "alice"),
        ("basic", b"bob:builder", None, "bob"),
        ("tls", b"", {"subject": ((("commonName", "dave"),),)}, "dave"),
    ]
    for method, data, certificate, role in cases:
        s = h.session()
        s.peer_certificate = certificate
        assert h.connect(s, auth_method_name=method, auth_data=data).type == T.CONNECTED
        assert s.role == role


def test_refusals_name_pulsars_error_and_close() -> None:
    h = harness()
    for method, data in [("basic", b"alice:wrong"), ("basic", b"eve:wonder"),
                         ("token", token(h, "carol", -1)), ("tls", b""), ("none", b"")]:
        s = h.session()
        reply = h.connect(s, auth_method_name=method, auth_data=data)
        assert reply.type == T.ERROR and reply.error.error == api.AuthenticationError, method
        assert s.closed
    s = h.session()
    reply = h.connect(s, auth_method_name="basic", auth_data=b"eve:wonder")
    assert reply.error.message == "authentication failed: Unknown user or invalid password"
    assert h.connect(h.session(), auth_method_name="token",
                     auth_data=token(h, "carol", -1)).error.message.endswith("token has expired")


def test_anonymous_role_for_a_client_naming_no_provider() -> None:
    h = harness(anonymous_user_role="guest")
    for fields in ({}, {"auth_method_name": "kerberos", "auth_data": b"x"}):
        s = h.session()
        assert h.connect(s, **fields).type == T.CONNECTED
        assert s.role == "guest"
    s = h.session()  # a provider it names still has to accept it
    assert h.connect(s, auth_method_name="basic", auth_data=b"alice:no").type == T.ERROR


def connected_with_expiring_token(h: Harness, refresh: bool = True):
    s = h.session()
    flags = api.FeatureFlags(supports_auth_refresh=refresh)
    assert h.connect(s, auth_method_name="token", auth_data=token(h, "carol", 60),
                     feature_flags=flags).type == T.CONNECTED
    return s


def test_an_expired_token_is_challenged_and_refreshed() -> None:
    h = harness()
    s = connected_with_expiring_token(h)
    s.check_authentication()
    assert h.run(s) == []  # still valid: nothing to do
    h.clock.advance(61_000)
    s.check_authentication()
    (challenge,) = h.run(s)
    assert challenge.type == T.AUTH_CHALLENGE
    assert challenge.authChallenge.challenge.auth_method_name == "token"
    assert challenge.authChallenge.challenge.auth_data == AUTH_REFRESH_DATA
    response = api.AuthData(auth_method_name="token", auth_data=token(h, "carol", 60))
    assert h.run(s, command(T.AUTH_RESPONSE, "authResponse", response=response)) == []
    assert not s.closed and s.auth_state.expires_at == h.clock.now_ms() // 1000 + 60
    h.clock.advance(30_000)
    s.check_authentication()
    assert h.run(s) == [] and not s.closed


def test_an_unanswered_challenge_closes_the_connection() -> None:
    h = harness()
    s = connected_with_expiring_token(h)
    h.clock.advance(61_000)
    s.check_authentication()
    h.run(s)
    s.check_authentication()
    assert s.closed and "did not answer the AUTH_CHALLENGE" in s.close_reason


def test_a_refresh_with_a_bad_or_other_token_closes_the_connection() -> None:
    h = harness()
    for role, lifetime, reason in [("mallory", 60, "the role cannot change"),
                                   ("carol", -5, "authentication refresh failed")]:
        s = connected_with_expiring_token(h)
        h.clock.advance(61_000)
        s.check_authentication()
        h.run(s)
        data = token(h, role, lifetime)
        h.run(s, command(T.AUTH_RESPONSE, "authResponse",
                         response=api.AuthData(auth_method_name="token", auth_data=data)))
        assert s.closed and reason in s.close_reason


def test_a_client_that_cannot_refresh_is_disconnected_on_expiry() -> None:
    h = harness()
    s = connected_with_expiring_token(h, refresh=False)
    h.clock.advance(61_000)
    s.check_authentication()
    assert s.closed and "cannot refresh" in s.close_reason
