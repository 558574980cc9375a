"""Basic authentication's user file as Pulsar reads it, and the HTTP side of every provider."""

from __future__ import annotations

import base64
import logging

import pytest
from passlib.hash import apr_md5_crypt, des_crypt

from pulsarlab.broker import BrokerSettings
from pulsarlab.broker.basic_auth import BasicUsers, read_conf_data
from pulsarlab.broker.errors import AuthenticationError, InvalidArgument
from pulsarlab.broker.security import Authenticator, provider_names


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_crypt_and_apr1_hashes(tmp_path) -> None:
    users = tmp_path / "users"
    users.write_text(f"alice:{des_crypt.hash('wonder')}\nbob:{apr_md5_crypt.hash('builder')}\n")
    for spec in (str(users), f"file://{users}", f"data:;base64,{b64(users.read_text())}",
                 b64(users.read_text())):
        basic = BasicUsers.load(spec)
        assert basic.authenticate("alice:wonder") == "alice"
        assert basic.authenticate("bob:builder") == "bob"
        for wrong in ("alice:builder", "bob:wonder", "carol:x"):
            with pytest.raises(AuthenticationError, match="Unknown user or invalid password"):
                basic.authenticate(wrong)


def test_a_hash_pulsar_does_not_accept_is_named_once(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="pulsarlab.broker.security")
    bcrypt_line = "carol:$2y$05$" + "x" * 53 + "\n"  # the shape of htpasswd -B
    basic = BasicUsers.load(f"data:;base64,{b64(bcrypt_line)}")
    (record,) = caplog.records
    assert "user 'carol' has a hash Pulsar does not accept" in record.getMessage()
    with pytest.raises(AuthenticationError):
        basic.authenticate("carol:pw")


@pytest.mark.parametrize(("spec", "message"), [
    ("", "no basic authentication config provided"),
    (f"data:;base64,{b64('alice')}", "line 1: the format of the password auth conf"),
    (f"data:;base64,{b64('a:b' + chr(10) + chr(10))}", "line 2: the format"),
    ("not base64 and no file!", "Not supported config"),
    ("file:///nonexistent/users", "cannot read '/nonexistent/users'"),
])
def test_a_bad_user_file_is_one_line(spec: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        BasicUsers.load(spec)


def test_data_url_without_base64() -> None:
    assert read_conf_data("data:,alice%3Ahash") == b"alice:hash"


def test_provider_names_accept_pulsars_class_names() -> None:
    assert provider_names(
        " org.apache.pulsar.broker.authentication.AuthenticationProviderBasic, tls,token,tls"
    ) == ("basic", "tls", "token")
    with pytest.raises(InvalidArgument, match="AuthenticationProviderSasl"):
        provider_names("org.apache.pulsar.broker.authentication.AuthenticationProviderSasl")


def test_http_authentication_tries_each_provider() -> None:
    users = f"data:;base64,{b64('alice:' + des_crypt.hash('wonder'))}"
    auth = Authenticator(BrokerSettings.from_kwargs(
        authentication_enabled=True, authentication_providers="token,basic,tls",
        basic_auth_conf=users,
    ))
    token = auth.create_token("carol")
    assert auth.authenticate_http(f"Bearer {token}") == "carol"
    assert auth.authenticate_http(f"Basic {b64('alice:wonder')}") == "alice"
    assert auth.authenticate_http(f"Basic {b64('alice:wonder')}", method="basic") == "alice"
    cert = {"subject": ((("countryName", "NL"),), (("commonName", "dave"),))}
    assert auth.authenticate_http("", cert) == "dave"
    with pytest.raises(AuthenticationError):
        auth.authenticate_http(f"Basic {b64('alice:nope')}")
    with pytest.raises(AuthenticationError):
        auth.authenticate_http("")
    guest = Authenticator(BrokerSettings.from_kwargs(
        authentication_enabled=True, anonymous_user_role="guest"))
    assert guest.authenticate_http("") == "guest"
    assert guest.authenticate(None) == "guest"  # a ZeroMQ CONNECT without a token
