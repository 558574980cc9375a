"""A Pulsar-frame consumer over ZeroMQ and an official pulsar:// consumer on one Key_Shared
subscription: one ServerCnx class serves both, so they share the keys as two pulsar://
consumers would."""

from __future__ import annotations

import time
from collections import defaultdict

import pytest

from pulsarlab import Broker
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api

from .dealer import PulsarDealer, T, command

pulsar = pytest.importorskip("pulsar", reason="the official pulsar-client (dev extra) is needed")

_KEYS = [f"key-{i}" for i in range(20)]
_COUNT = 200
_TURN_MS = 10  # each side is read in turn, this long at most when it has nothing


def test_zeromq_and_official_consumers_share_a_key_shared_subscription() -> None:
    topic = "persistent://public/default/mixed-key-shared"
    with Broker(storage="memory") as b:
        client = pulsar.Client(b.pulsar_url, operation_timeout_seconds=10,
                               logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        dealer = PulsarDealer(b.service_url)
        try:
            dealer.connect()
            dealer.subscribe(topic, "ks", sub_type=api.CommandSubscribe.Key_Shared,
                             keySharedMeta=api.KeySharedMeta(keySharedMode=api.AUTO_SPLIT))
            official = client.subscribe(topic, "ks", consumer_type=pulsar.ConsumerType.KeyShared)
            producer = client.create_producer(topic, batching_enabled=False)
            for i in range(_COUNT):
                producer.send_async(f"{i}".encode(), None, partition_key=_KEYS[i % len(_KEYS)])
            producer.flush()

            got: dict[str, dict[str, list[int]]] = {"zmq": defaultdict(list),
                                                     "official": defaultdict(list)}
            deadline = time.monotonic() + 30
            while sum(len(v) for side in got.values() for v in side.values()) < _COUNT:
                assert time.monotonic() < deadline, f"only {got} arrived"
                frame = dealer.recv(_TURN_MS)
                if frame is not None:
                    assert frame.command.type == T.MESSAGE
                    key = api.MessageMetadata.FromString(frame.metadata).partition_key
                    got["zmq"][key].append(int(frame.payload))
                    mid = frame.command.message.message_id
                    dealer.send(command(T.ACK, "ack", consumer_id=1,
                                        ack_type=api.CommandAck.Individual,
                                        message_id=[api.MessageIdData(ledgerId=mid.ledgerId,
                                                                      entryId=mid.entryId)]))
                    continue
                try:
                    msg = official.receive(timeout_millis=_TURN_MS)
                except pulsar.Timeout:
                    continue
                got["official"][msg.partition_key()].append(int(msg.data()))
                official.acknowledge(msg)
            zmq_keys, official_keys = set(got["zmq"]), set(got["official"])
            assert zmq_keys and official_keys, "both consumers own some keys"
            assert not zmq_keys & official_keys, "a key goes to one consumer only"
            assert zmq_keys | official_keys == set(_KEYS)
            for side in got.values():
                for key, values in side.items():
                    expected = [i for i in range(_COUNT) if _KEYS[i % len(_KEYS)] == key]
                    assert values == expected, f"{key}: in order, each once"
        finally:
            dealer.close()
            client.close()
