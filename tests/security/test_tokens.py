"""Signed tokens (sans-I/O): HS256 JWTs with the role as subject, like Pulsar's."""

from __future__ import annotations

import base64
import hmac
import json
import stat

import pytest

from pulsarlab.broker import tokens

KEY = b"k" * 32


def _b64(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


def test_a_token_round_trips_to_its_role():
    token = tokens.create_token(KEY, "alice")
    assert token.count(".") == 2
    assert tokens.verify_token(KEY, token) == "alice"
    assert tokens.decode_claims(token) == {"sub": "alice"}


def test_the_header_is_hs256_like_pulsars():
    head = tokens.create_token(KEY, "r").split(".")[0]
    assert json.loads(base64.urlsafe_b64decode(head + "==")) == {"alg": "HS256"}


def test_a_token_signed_with_another_key_is_refused():
    token = tokens.create_token(b"x" * 32, "alice")
    with pytest.raises(tokens.InvalidToken, match="signature does not match"):
        tokens.verify_token(KEY, token)


def test_changing_the_role_breaks_the_signature():
    head, _claims, sig = tokens.create_token(KEY, "alice").split(".")
    forged = f"{head}.{_b64({'sub': 'admin'})}.{sig}"
    with pytest.raises(tokens.InvalidToken, match="signature"):
        tokens.verify_token(KEY, forged)


def test_alg_none_and_other_algorithms_are_refused():
    for alg in ("none", "HS512", "RS256", None):
        token = f"{_b64({'alg': alg})}.{_b64({'sub': 'admin'})}."
        with pytest.raises(tokens.InvalidToken, match="algorithm"):
            tokens.verify_token(KEY, token)


def test_signatures_are_compared_in_constant_time(monkeypatch):
    calls = []
    real = hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(tokens.hmac, "compare_digest", spy)
    tokens.verify_token(KEY, tokens.create_token(KEY, "alice"))
    assert len(calls) == 1


def test_expired_tokens_are_refused_and_live_ones_accepted():
    token = tokens.create_token(KEY, "alice", expires_at=1000)
    assert tokens.verify_token(KEY, token, now=999) == "alice"
    with pytest.raises(tokens.InvalidToken, match="expired"):
        tokens.verify_token(KEY, token, now=1000)


@pytest.mark.parametrize("claims", [{}, {"sub": ""}, {"sub": 3}])
def test_a_token_without_a_subject_is_refused(claims):
    head = _b64({"alg": "HS256"})
    body = _b64(claims)
    sig = base64.urlsafe_b64encode(
        hmac.new(KEY, f"{head}.{body}".encode(), "sha256").digest()
    ).rstrip(b"=").decode()
    with pytest.raises(tokens.InvalidToken, match="no subject"):
        tokens.verify_token(KEY, f"{head}.{body}.{sig}")


@pytest.mark.parametrize(
    "token", ["", "abc", "a.b", "a.b.c.d", "!!.??.$$", f"{_b64([1])}.{_b64({})}.x", "x" * 9000]
)
def test_malformed_tokens_are_one_clear_error(token):
    with pytest.raises(tokens.InvalidToken, match="malformed"):
        tokens.verify_token(KEY, token)


def test_subjects_must_be_non_empty_strings():
    with pytest.raises(ValueError, match="subject"):
        tokens.create_token(KEY, "")


def test_secret_keys_are_random_32_bytes():
    a, b = tokens.create_secret_key(), tokens.create_secret_key()
    assert len(a) == 32 and a != b


def test_secret_key_files_are_owner_only(tmp_path):
    path = tokens.write_secret_file(tmp_path / "keys" / "my.key", KEY)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes() == KEY


def test_secret_keys_load_from_files_and_data_urls(tmp_path):
    path = tokens.write_secret_file(tmp_path / "my.key", KEY)
    assert tokens.load_secret_key(f"file://{path}") == KEY
    assert tokens.load_secret_key(str(path)) == KEY
    inline = "data:;base64," + base64.b64encode(KEY).decode()
    assert tokens.load_secret_key(inline) == KEY


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("data:;base64,***", "not valid base64"),
        ("data:,abc", "data:;base64"),
        ("data:;base64," + base64.b64encode(b"short").decode(), "at least 16 bytes"),
        ("file:///nonexistent/pulsarlab.key", "cannot read"),
    ],
)
def test_bad_secret_keys_are_clear_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        tokens.load_secret_key(spec)


def test_durations_like_pulsar_tokens_expiry_time():
    assert tokens.parse_duration("30") == 30
    assert tokens.parse_duration("10m") == 600
    assert tokens.parse_duration("2d") == 2 * 86400
    assert tokens.parse_duration("1y") == 365 * 86400
    with pytest.raises(ValueError, match="duration"):
        tokens.parse_duration("soon")


def test_the_rfc_7515_hs256_example_verifies():
    """Interoperability: the JWS example of RFC 7515 (A.1) passes the signature check (it has
    no subject, so it is then refused for that reason, not for its signature)."""
    key = base64.urlsafe_b64decode(
        "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow=="
    )
    token = (
        "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9"
        ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
        ".dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    )
    with pytest.raises(tokens.InvalidToken, match="no subject"):
        tokens.verify_token(key, token, now=0)
    with pytest.raises(tokens.InvalidToken, match="expired"):
        tokens.verify_token(key, token)
    with pytest.raises(tokens.InvalidToken, match="signature"):
        tokens.verify_token(KEY, token, now=0)
