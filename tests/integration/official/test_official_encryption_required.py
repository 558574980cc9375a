"""A namespace with ``encryptionRequired`` (set over REST) and the official client: a
producer with a ``crypto_key_reader`` publishes; one without is refused with Pulsar's
MetadataError, which the C++ client counts as retryable (``isResultRetryable``), so it
retries until its operation timeout and raises ``Timeout``, as against Pulsar itself; an
unencrypted message gets SEND_ERROR MetadataError and the client resends it until its send
timeout. Nothing unencrypted is stored."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from .conftest import WAIT_MS, pulsar, quiet_logger, rest, unique


@pytest.fixture
def key_reader(tmp_path) -> pulsar.CryptoKeyReader:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = tmp_path / "private.pem"
    public = tmp_path / "public.pem"
    private.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ))
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo,
    ))
    return pulsar.CryptoKeyReader(str(public), str(private))


def test_encryption_required_namespace(broker, client: pulsar.Client, key_reader) -> None:
    namespace = f"public/{unique('sealed')}"
    rest(broker, "PUT", f"/admin/v2/namespaces/{namespace}")
    path = f"/admin/v2/namespaces/{namespace}/encryptionRequired"
    assert rest(broker, "GET", path) is False
    rest(broker, "POST", path, True)
    assert rest(broker, "GET", path) is True
    assert rest(broker, "GET", f"/admin/v2/namespaces/{namespace}")["encryption_required"]
    topic = f"persistent://{namespace}/{unique('t')}"
    topic_path = topic.replace("persistent://", "/admin/v2/persistent/")

    impatient = pulsar.Client(broker.pulsar_url, operation_timeout_seconds=2,
                              logger=quiet_logger())
    try:
        with pytest.raises(pulsar.Timeout):
            impatient.create_producer(topic)
    finally:
        impatient.close()

    producer = client.create_producer(
        topic, encryption_key="app", crypto_key_reader=key_reader, batching_enabled=False
    )
    consumer = client.subscribe(topic, unique("sub"), crypto_key_reader=key_reader)
    producer.send(b"secret")
    assert consumer.receive(WAIT_MS).data() == b"secret"

    stats = rest(broker, "GET", f"{topic_path}/stats")
    assert [p["producerName"] for p in stats["publishers"]] == [producer.producer_name()]
    assert stats["msgInCounter"] == 1

    rest(broker, "POST", path, False)
    plain = client.create_producer(topic, send_timeout_millis=1500, batching_enabled=False)
    plain.send(b"clear again")
    assert consumer.receive(WAIT_MS).data() == b"clear again"
    rest(broker, "POST", path, True)  # the plain producer's next message is refused
    with pytest.raises(pulsar.Timeout):
        plain.send(b"clear, refused")
    assert rest(broker, "GET", f"{topic_path}/stats")["msgInCounter"] == 2
