"""Tokens signed with a private key, checked with tokenPublicKey / tokenPublicAlg (RS256,
PS256, ES256 …) as Pulsar's AuthenticationProviderToken does."""

from __future__ import annotations

import base64
import json

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from pulsarlab.broker import BrokerSettings, tokens
from pulsarlab.broker.errors import AuthenticationError, InvalidArgument
from pulsarlab.broker.pulsar_conf import settings_from_properties
from pulsarlab.broker.security import Authenticator


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign(private_key, alg: str, claims: dict) -> str:
    """A JWT as ``pulsar tokens create --private-key`` makes one."""
    head = b64url(json.dumps({"alg": alg}).encode())
    body = b64url(json.dumps(claims).encode())
    data = f"{head}.{body}".encode()
    if alg.startswith("ES"):
        r, s = decode_dss_signature(private_key.sign(data, ec.ECDSA(hashes.SHA256())))
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    elif alg.startswith("PS"):
        signature = private_key.sign(data, padding.PSS(
            mgf=padding.MGF1(hashes.SHA256()), salt_length=padding.PSS.DIGEST_LENGTH),
            hashes.SHA256())
    else:
        signature = private_key.sign(data, padding.PKCS1v15(), hashes.SHA256())
    return f"{head}.{body}.{b64url(signature)}"


def der_spec(private_key) -> str:
    der = private_key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return "data:;base64," + base64.b64encode(der).decode()


@pytest.mark.parametrize("alg", ["RS256", "PS256", "ES256"])
def test_a_public_key_checks_private_key_tokens(alg: str) -> None:
    key = (ec.generate_private_key(ec.SECP256R1()) if alg == "ES256"
           else rsa.generate_private_key(public_exponent=65537, key_size=2048))
    conf = settings_from_properties(
        f"authenticationEnabled=true\ntokenPublicKey={der_spec(key)}\ntokenPublicAlg={alg}\n")
    auth = Authenticator(BrokerSettings.from_kwargs(**conf.settings))
    assert auth.authenticate(sign(key, alg, {"sub": "alice"})) == "alice"
    other = (ec.generate_private_key(ec.SECP256R1()) if alg == "ES256"
             else rsa.generate_private_key(public_exponent=65537, key_size=2048))
    with pytest.raises(AuthenticationError, match="does not match the broker's public key"):
        auth.authenticate(sign(other, alg, {"sub": "alice"}))
    with pytest.raises(AuthenticationError, match="has expired"):
        auth.authenticate(sign(key, alg, {"sub": "alice", "exp": 1}))
    hs = tokens.create_token(b"s" * 32, "alice")
    with pytest.raises(AuthenticationError, match="'HS256' is not accepted"):
        auth.authenticate(hs)  # a secret-key token cannot pass as a public-key one
    with pytest.raises(InvalidArgument, match="checks tokens with a public key"):
        auth.create_token("alice")


def test_pem_public_key_file_and_bad_keys(tmp_path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "public.pem"
    pem.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    auth = Authenticator(BrokerSettings.from_kwargs(
        authentication_enabled=True, token_public_key=f"file://{pem}"))
    assert auth.authenticate(sign(key, "RS256", {"sub": "bob"})) == "bob"
    for spec, alg, message in [
        (f"file://{pem}", "ES256", "does not fit tokenPublicAlg ES256"),
        (f"file://{pem}", "HS256", "tokenPublicAlg 'HS256' is not one of"),
        ("data:;base64,AAAA", "RS256", "neither DER nor PEM"),
        ("file:///nonexistent/public.der", "RS256", "cannot read the token public key"),
    ]:
        with pytest.raises(InvalidArgument, match=message):
            Authenticator(BrokerSettings.from_kwargs(
                authentication_enabled=True, token_public_key=spec, token_public_alg=alg))


@pytest.mark.parametrize("alg", ["RS256", "ES256"])
def test_the_token_command_makes_key_pairs_and_signs_with_them(tmp_path, alg: str) -> None:
    import os
    import stat
    import subprocess
    import sys

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pulsarlab.broker.cli", "token", *args],
                              capture_output=True, text=True, timeout=60)

    private, public = tmp_path / "my-private.key", tmp_path / "my-public.key"
    made = run("create-key-pair", "--output-private-key", str(private),
               "--output-public-key", str(public), "-a", alg)
    assert made.returncode == 0, made.stderr
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o600
    created = run("create", "--private-key", f"file://{private}", "-a", alg, "-s", "alice")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    checked = run("validate", "--public-key", f"file://{public}", "-a", alg, token)
    assert (checked.returncode, checked.stdout.strip()) == (0, "alice")
    auth = Authenticator(BrokerSettings.from_kwargs(
        authentication_enabled=True, token_public_key=f"file://{public}", token_public_alg=alg))
    assert auth.authenticate(token) == "alice"
