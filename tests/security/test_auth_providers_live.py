"""Several providers at once (token, basic, TLS), the anonymous role, and token suppliers with
re-authentication on expiry, driven with the official client (and pulsarlab's where it goes)."""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from passlib.hash import apr_md5_crypt, des_crypt

import pulsarlab
from pulsarlab import Broker

from .support import wait_until
from .tls_pki import Pki

pulsar = pytest.importorskip("pulsar", reason="the official pulsar-client (dev extra) is needed")

PROVIDERS = ",".join(f"org.apache.pulsar.broker.authentication.AuthenticationProvider{n}"
                     for n in ("Token", "Basic", "Tls"))


def quiet() -> object:
    return pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)


def client(url: str, **kwargs: object) -> pulsar.Client:
    return pulsar.Client(url, operation_timeout_seconds=5, logger=quiet(), **kwargs)


@pytest.fixture(scope="module")
def users(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("basic") / "users"
    path.write_text(f"alice:{des_crypt.hash('wonder')}\nbob:{apr_md5_crypt.hash('builder')}\n")
    return str(path)


@pytest.fixture(scope="module")
def broker(users: str, tls_pki: Pki) -> Iterator[Broker]:
    with Broker(storage="memory", authentication_enabled=True,
                authentication_providers=PROVIDERS, basic_auth_conf=users,
                broker_service_port_tls=0, tls_certificate_file_path=tls_pki.broker_cert,
                tls_key_file_path=tls_pki.broker_key,
                tls_trust_certs_file_path=tls_pki.ca) as b:
        yield b


def produce_one(c: pulsar.Client, topic: str) -> None:
    producer = c.create_producer(topic)
    producer.send(b"hello")
    producer.close()


def roles(broker: Broker) -> list[str]:
    return broker.call(lambda _s: sorted(
        s.role for listener in broker._listeners for s in listener.sessions.values()
        if s.connected
    ))


@pytest.mark.parametrize("method", [None, "basic"])
def test_basic_authentication_with_and_without_method(broker: Broker, method) -> None:
    auth = (pulsar.AuthenticationBasic("alice", "wonder") if method is None
            else pulsar.AuthenticationBasic("bob", "builder", method=method))
    c = client(broker.pulsar_url, authentication=auth)
    try:
        produce_one(c, f"basic-{method}")
        assert ("alice" if method is None else "bob") in roles(broker)
    finally:
        c.close()


def test_token_and_tls_beside_basic(broker: Broker, tls_pki: Pki) -> None:
    token = client(broker.pulsar_url,
                   authentication=pulsar.AuthenticationToken(broker.create_token("carol")))
    tls = client(broker.pulsar_ssl_url, tls_trust_certs_file_path=tls_pki.ca,
                 authentication=pulsar.AuthenticationTLS(tls_pki.bob_cert, tls_pki.bob_key))
    try:
        produce_one(token, "multi-token")
        produce_one(tls, "multi-tls")
        assert {"carol", "bob"} <= set(roles(broker))
    finally:
        token.close()
        tls.close()


def test_a_bad_password_or_expired_token_is_refused_and_stores_nothing(
    broker: Broker, caplog
) -> None:
    caplog.set_level(logging.INFO, logger="pulsarlab.broker.pulsar")
    refused = [
        pulsar.AuthenticationBasic("alice", "wrong"),
        pulsar.AuthenticationBasic("mallory", "wonder"),
        pulsar.AuthenticationToken(broker.create_token("carol", expires_in_seconds=-1)),
        None,
    ]
    for auth in refused:
        c = pulsar.Client(broker.pulsar_url, operation_timeout_seconds=2, logger=quiet(),
                          authentication=auth)
        try:
            # The C++ client takes any answer to CONNECT but CONNECTED for a dropped
            # connection and retries until its operation timeout, against Pulsar too.
            with pytest.raises(pulsar.Timeout):
                c.create_producer("refused-topic")
        finally:
            c.close()
    assert "persistent://public/default/refused-topic" not in broker.call(lambda s: s.topics)
    lines = [r.getMessage() for r in caplog.records if "closing a pulsar://" in r.getMessage()]
    assert any("Unknown user or invalid password" in line for line in lines)
    assert any("token has expired" in line for line in lines)


def _rest(broker: Broker, header: str | None) -> int:
    request = urllib.request.Request(f"{broker.web_url}/admin/v2/clusters")
    if header:
        request.add_header("Authorization", header)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_basic_and_token_over_rest(broker: Broker) -> None:
    basic = base64.b64encode(b"alice:wonder").decode()
    wrong = base64.b64encode(b"alice:nope").decode()
    assert _rest(broker, f"Basic {basic}") == 200
    assert _rest(broker, f"Bearer {broker.create_token('carol')}") == 200
    assert _rest(broker, f"Basic {wrong}") == 401
    assert _rest(broker, None) == 401


def test_anonymous_role_with_authorization() -> None:
    with Broker(storage="memory", authentication_enabled=True, authorization_enabled=True,
                anonymous_user_role="guest", super_user_roles="admin") as b:
        b.call(lambda _s: b.admin.call("namespaces.grant_permission", {
            "namespace": "public/default", "role": "guest", "actions": ["consume"]}))
        c = client(b.pulsar_url)
        try:
            c.subscribe("anon-topic", "s").close()  # guest may consume ...
            with pytest.raises(pulsar.AuthorizationError):
                c.create_producer("anon-topic")  # ... but not produce
        finally:
            c.close()
        ours = pulsarlab.Client(b.service_url)  # pulsarlab's client, no authentication
        try:
            ours.subscribe("anon-topic", "s2").close()
            with pytest.raises(pulsarlab.AuthorizationError):
                ours.create_producer("anon-topic")
        finally:
            ours.close()
        assert json.loads(json.dumps(b.call(lambda s: sorted(s.topics)))) == [
            "persistent://public/default/anon-topic"]


def test_token_supplier_is_asked_again_when_its_token_expires(caplog) -> None:
    caplog.set_level(logging.INFO, logger="pulsarlab.broker.pulsar")
    with Broker(storage="memory", authentication_enabled=True,
                authentication_refresh_check_seconds=1) as b:
        calls: list[float] = []
        lock = threading.Lock()

        def supplier() -> str:
            with lock:
                calls.append(time.time())
            return b.create_token("carol", expires_in_seconds=2)

        c = client(b.pulsar_url, authentication=pulsar.AuthenticationToken(supplier))
        try:
            producer = c.create_producer("refresh-topic")
            producer.send(b"before")
            first = len(calls)
            wait_until(lambda: any("refreshed the authentication credentials of role 'carol'"
                                   in r.getMessage() for r in caplog.records),
                       "a refreshed token")
            assert len(calls) > first
            producer.send(b"after")  # the same connection goes on
            assert not any("closing a pulsar://" in r.getMessage() for r in caplog.records)
        finally:
            c.close()


def test_an_expired_token_that_is_not_renewed_loses_the_connection(caplog) -> None:
    caplog.set_level(logging.INFO, logger="pulsarlab.broker.pulsar")
    with Broker(storage="memory", authentication_enabled=True,
                authentication_refresh_check_seconds=1) as b:
        token = b.create_token("carol", expires_in_seconds=2)
        c = client(b.pulsar_url, authentication=pulsar.AuthenticationToken(token))
        try:
            c.create_producer("stale-topic").send(b"while valid")
            wait_until(lambda: any("authentication refresh failed" in r.getMessage()
                                   for r in caplog.records), "the refresh to fail")
        finally:
            c.close()


def test_pulsarlab_client_with_basic_and_token(broker: Broker) -> None:
    """pulsarlab's own client over ZeroMQ: AuthenticationBasic (with and without method)
    and a token supplier; a bad password is one AuthenticationError."""
    for auth in (pulsarlab.AuthenticationBasic("alice", "wonder"),
                 pulsarlab.AuthenticationBasic("bob", "builder", method="basic"),
                 pulsarlab.AuthenticationBasic(
                     auth_params_string='{"userId": "alice", "password": "wonder"}'),
                 pulsarlab.AuthenticationToken(lambda: broker.create_token("carol"))):
        c = pulsarlab.Client(broker.service_url, authentication=auth)
        try:
            c.create_producer("ours-basic").send(b"hello")
        finally:
            c.close()
    bad = pulsarlab.Client(broker.service_url,
                           authentication=pulsarlab.AuthenticationBasic("alice", "nope"))
    try:
        with pytest.raises(pulsarlab.AuthenticationError, match="Unknown user or invalid"):
            bad.create_producer("ours-refused")
    finally:
        bad.close()
    assert "persistent://public/default/ours-refused" not in broker.call(lambda s: s.topics)
    admin = pulsarlab.Admin(broker.web_url,
                            authentication=pulsarlab.AuthenticationBasic("alice", "wonder"))
    try:
        assert "persistent://public/default/ours-basic" in admin.topics.get_list(
            "public/default")
    finally:
        admin.close()


def test_the_credentials_check_keeps_its_period_without_authentication() -> None:
    """The loop's next credentials check moves on even when there is nothing to check (a
    check date left in the past would make the loop poll without waiting)."""
    with Broker(storage="memory", authentication_refresh_check_seconds=1) as b:
        first = b.call(lambda _s: b._next_auth_check)
        wait_until(lambda: b.call(lambda _s: b._next_auth_check) > first,
                   "the next credentials check to be scheduled")
        assert b.call(lambda _s: b._next_auth_check > b.clock.now_ms())
