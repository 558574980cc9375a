"""A script written only against official ``pulsar-client`` names and arguments.

``script(pulsar, service_url)`` would run unchanged with ``import pulsar`` and a real
cluster's ``pulsar://`` URL; here it gets ``import pulsarlab as pulsar`` and a pulsarlab
broker. Keep it to the official API: no pulsarlab extensions.
"""

from __future__ import annotations

import threading
import uuid

import pytest

import pulsarlab
from pulsarlab import Broker


def script(pulsar, service_url: str) -> dict:
    client = pulsar.Client(service_url, operation_timeout_seconds=10)
    topic = f"persistent://public/default/official-{uuid.uuid4().hex[:8]}"
    report: dict = {}
    try:
        c1 = client.subscribe(topic, "orders", consumer_type=pulsar.ConsumerType.KeyShared,
                              consumer_name="c1", negative_ack_redelivery_delay_ms=200,
                              initial_position=pulsar.InitialPosition.Earliest)
        c2 = client.subscribe(topic, "orders", consumer_type=pulsar.ConsumerType.KeyShared,
                              consumer_name="c2", negative_ack_redelivery_delay_ms=200,
                              key_shared_policy=pulsar.ConsumerKeySharedPolicy(
                                  key_shared_mode=pulsar.KeySharedMode.AutoSplit))
        producer = client.create_producer(topic, producer_name="official-producer",
                                          block_if_queue_full=True)
        sent = {}
        for i in range(20):
            key = f"order-{i % 5}"
            sent[producer.send(f"event-{i}".encode(), partition_key=key,
                               properties={"n": str(i)})] = key
        receipts = []
        done = threading.Event()

        def on_sent(res, msg_id):
            receipts.append(res)
            done.set()

        producer.send_async(b"last", on_sent, partition_key="order-0")
        producer.flush()
        done.wait(10)
        report["async_result"] = receipts[0] if receipts else None
        owners: dict = {}
        total = 0
        nacked = None
        for name, consumer in (("c1", c1), ("c2", c2)):
            while True:
                try:
                    msg = consumer.receive(timeout_millis=1000)
                except pulsar.Timeout:
                    break
                if nacked is None:
                    nacked = msg.data()
                    consumer.negative_acknowledge(msg)  # comes back after 200 ms
                    continue
                if msg.data() == nacked:
                    report["redelivered"] = msg.redelivery_count()
                owners.setdefault(msg.partition_key(), set()).add(name)
                consumer.acknowledge(msg)
                total += 1
        report["total"] = total
        report["keys_on_one_consumer"] = all(len(v) == 1 for v in owners.values())
        try:
            c1.acknowledge_cumulative(next(iter(sent)))
        except pulsar.CumulativeAcknowledgementNotAllowedError:
            report["cumulative_refused"] = True
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        read = []
        while reader.has_message_available():
            read.append(reader.read_next(timeout_millis=5000).data())
        report["read"] = len(read)
        report["producer_name"] = producer.producer_name()
        report["last_sequence_id"] = producer.last_sequence_id()
        reader.close()
        c1.close()
        c2.close()
        producer.close()
    finally:
        client.close()
    return report


@pytest.fixture(scope="module")
def broker():
    with Broker(storage="memory") as b:
        yield b


def test_official_script_runs_against_pulsarlab(broker):
    report = script(pulsarlab, broker.service_url)
    assert report["async_result"] == pulsarlab.Result.Ok
    assert report["total"] == 21
    assert report["redelivered"] == 1
    assert report["keys_on_one_consumer"]
    assert report["cumulative_refused"]
    assert report["read"] == 21
    assert report["producer_name"] == "official-producer"
    assert report["last_sequence_id"] == 20
