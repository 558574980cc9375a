"""Issue 23 with the official client: messages that once stopped the broker are stored and
delivered (or refused), and a reader finds the messages of a topic after a restart."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

import pulsarlab
from pulsarlab import Broker

from .conftest import WAIT_MS, quiet_logger, unique


@pytest.fixture
def zmq_client(broker: Broker) -> Iterator[pulsarlab.Client]:
    c = pulsarlab.Client(broker.service_url)
    yield c
    c.close()


def test_an_event_time_of_2_64_minus_1_is_stored_and_delivered_everywhere(
    broker: Broker, client: pulsar.Client, zmq_client: pulsarlab.Client
) -> None:
    topic = unique("poison-event-time")
    consumer = client.subscribe(topic, "official")
    ours = zmq_client.subscribe(topic, "zmq")
    producer = client.create_producer(topic)
    producer.send(b"x", event_timestamp=2**64 - 1)
    producer.send(b"after")
    got = [consumer.receive(timeout_millis=WAIT_MS) for _ in range(2)]
    assert [(m.data(), m.event_timestamp()) for m in got] == [(b"x", 2**64 - 1), (b"after", 0)]
    mine = [ours.receive(timeout_millis=WAIT_MS) for _ in range(2)]
    assert [(m.data(), m.event_timestamp()) for m in mine] == [(b"x", 2**64 - 1),
                                                               (b"after", 0)]
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert reader.read_next(timeout_millis=WAIT_MS).event_timestamp() == 2**64 - 1
    assert broker.running


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the RSA key pair")
def test_an_encrypted_batch_reaches_a_zmq_consumer_raw_and_the_broker_goes_on(
    broker: Broker, client: pulsar.Client, zmq_client: pulsarlab.Client, tmp_path: Path
) -> None:
    private, public = tmp_path / "private.pem", tmp_path / "public.pem"
    subprocess.run(["openssl", "genrsa", "-out", str(private), "2048"], check=True,
                   capture_output=True)
    subprocess.run(["openssl", "rsa", "-in", str(private), "-pubout", "-out", str(public)],
                   check=True, capture_output=True)
    topic = unique("poison-encrypted")
    ours = zmq_client.subscribe(topic, "zmq")
    keys = pulsar.CryptoKeyReader(str(public), str(private))
    producer = client.create_producer(
        topic, encryption_key="k", crypto_key_reader=keys, batching_enabled=True,
        batching_max_publish_delay_ms=50, batching_max_messages=3,
    )
    for i in range(3):
        producer.send_async(f"secret-{i}".encode(), None)
    producer.flush()
    raw = ours.receive(timeout_millis=WAIT_MS)  # the batch, as stored: one message
    assert b"secret" not in raw.data()
    ours.acknowledge(raw)
    client.create_producer(topic).send(b"plain")
    assert ours.receive(timeout_millis=WAIT_MS).data() == b"plain"
    # The official consumer with the key still decrypts the batch.
    official = client.subscribe(topic, "official", crypto_key_reader=keys,
                                initial_position=pulsar.InitialPosition.Earliest)
    got = sorted(official.receive(timeout_millis=WAIT_MS).data() for _ in range(4))
    assert got == [b"plain", b"secret-0", b"secret-1", b"secret-2"]
    assert broker.running


def test_a_reader_finds_the_messages_of_a_topic_after_a_restart(tmp_path: Path) -> None:
    """The restart opens a new, empty ledger: the last message id must skip it."""
    data_dir = str(tmp_path / "data")
    topic = "persistent://public/default/restart-reader"
    with Broker(data_dir) as first:
        c = pulsar.Client(first.pulsar_url, logger=quiet_logger())
        producer = c.create_producer(topic, batching_enabled=False)
        for i in range(3):
            producer.send(f"m{i}".encode())
        c.close()
    with Broker(data_dir) as second:
        c = pulsar.Client(second.pulsar_url, logger=quiet_logger())
        try:
            reader = c.create_reader(topic, pulsar.MessageId.earliest)
            got = []
            while reader.has_message_available():
                got.append(reader.read_next(timeout_millis=WAIT_MS).data())
            assert got == [b"m0", b"m1", b"m2"]
        finally:
            c.close()
        url = f"{second.web_url}/admin/v2/persistent/public/default/restart-reader/lastMessageId"
        with urllib.request.urlopen(url, timeout=10) as answer:
            last = json.load(answer)
        assert (last["ledgerId"], last["entryId"]) == (0, 2)
        with pulsarlab.Client(second.service_url) as ours:
            zmq_reader = ours.create_reader(topic, pulsarlab.MessageId.earliest)
            assert zmq_reader.has_message_available()
