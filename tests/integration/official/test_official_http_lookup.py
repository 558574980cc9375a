"""The official client given an http:// (or https://) service URL: it looks topics up over
REST (/lookup/v2/topic/..., partitions at /admin/v2/.../partitions) and connects to the
broker URL the answer names."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from pulsarlab import Broker

from .conftest import WAIT_MS, pulsar, quiet_logger, unique


@pytest.fixture(scope="module")
def broker(tls_pki) -> Iterator[Broker]:
    with Broker(storage="memory", broker_service_port_tls=0, web_service_port_tls=0,
                tls_certificate_file_path=tls_pki.broker_cert,
                tls_key_file_path=tls_pki.broker_key) as b:
        yield b


def get(url: str) -> tuple[int, object]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def test_rest_lookup_answers_the_broker_urls(broker: Broker) -> None:
    status, body = get(f"{broker.web_url}/lookup/v2/topic/persistent/public/default/t1")
    assert status == 200
    assert body == {
        "brokerUrl": broker.pulsar_url, "brokerUrlTls": broker.pulsar_ssl_url,
        "httpUrl": broker.web_url, "httpUrlTls": broker.web_url_tls,
        "nativeUrl": broker.pulsar_url, "brokerUrlSsl": broker.pulsar_ssl_url,
    }
    status, body = get(f"{broker.web_url}/lookup/v2/topic/persistent/public/default/t1"
                       "?listenerName=nope")
    assert (status, body) == (503, {"reason": "the broker do not have nope listener"})


@pytest.mark.parametrize("partitions", [0, 3])
def test_official_client_over_http_lookup(broker: Broker, partitions: int) -> None:
    topic = unique("http-lookup")
    if partitions:
        broker.call(lambda _s: broker.admin.call(
            "topics.create_partitioned_topic", {"topic": topic, "partitions": partitions}))
    c = pulsar.Client(broker.web_url, operation_timeout_seconds=10, logger=quiet_logger())
    try:
        consumer = c.subscribe(topic, "s")
        producer = c.create_producer(topic)
        for i in range(6):
            producer.send(f"m{i}".encode(), partition_key=f"k{i}")
        got = sorted(consumer.receive(timeout_millis=WAIT_MS).data() for _ in range(6))
        assert got == [f"m{i}".encode() for i in range(6)]
        assert c.get_topic_partitions(topic) == (
            [f"persistent://public/default/{topic}-partition-{i}" for i in range(partitions)]
            if partitions else [f"persistent://public/default/{topic}"]
        )
    finally:
        c.close()


def test_official_client_over_https_lookup_connects_with_tls(broker: Broker, tls_pki) -> None:
    topic = unique("https-lookup")
    c = pulsar.Client(broker.web_url_tls, tls_trust_certs_file_path=tls_pki.ca,
                      operation_timeout_seconds=10, logger=quiet_logger())
    try:
        consumer = c.subscribe(topic, "s")
        c.create_producer(topic).send(b"via https lookup")
        assert consumer.receive(timeout_millis=WAIT_MS).data() == b"via https lookup"
        # the answer's brokerUrlTls was used: the connection is on the pulsar+ssl:// listener
        assert broker.call(lambda _s: len(broker._listeners[1].sessions)) >= 1
    finally:
        c.close()


def test_http_lookup_with_a_token_and_authorization() -> None:
    with Broker(storage="memory", authentication_enabled=True, authorization_enabled=True,
                super_user_roles="admin") as b:
        b.call(lambda _s: b.admin.call("namespaces.grant_permission", {
            "namespace": "public/default", "role": "alice", "actions": ["produce", "consume"]}))
        url = f"{b.web_url}/lookup/v2/topic/persistent/public/default/secured"
        for role, status in (("alice", 200), ("bob", 403)):
            request = urllib.request.Request(
                url, headers={"Authorization": f"Bearer {b.create_token(role)}"})
            try:
                with urllib.request.urlopen(request, timeout=10) as answer:
                    assert answer.status == status
            except urllib.error.HTTPError as exc:
                assert exc.code == status
        c = pulsar.Client(b.web_url, operation_timeout_seconds=10, logger=quiet_logger(),
                          authentication=pulsar.AuthenticationToken(b.create_token("alice")))
        try:
            consumer = c.subscribe("secured", "s")
            c.create_producer("secured").send(b"looked up with a token")
            assert consumer.receive(timeout_millis=WAIT_MS).data() == b"looked up with a token"
        finally:
            c.close()
