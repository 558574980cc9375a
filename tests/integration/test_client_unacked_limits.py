"""Unacked-message limits end to end: a pulsarlab ``Client`` consumer blocked and unblocked.

No wall-clock assertions: messages are awaited with ``receive`` deadlines, and "nothing
more was sent" is read from the broker's own stats once the last expected message is in
(the broker sends a turn's messages in one step, so its counters are final by then).
"""

from __future__ import annotations

import contextlib

import pytest

from pulsarlab import Broker
from pulsarlab.broker.client import Client, ConsumerType, InitialPosition

from .client_support import receive_n, unique

EARLIEST = InitialPosition.Earliest


@contextlib.contextmanager
def broker_and_client(**settings):
    with Broker(storage="memory", **settings) as broker:
        client = Client(broker.service_url, operation_timeout_seconds=10)
        try:
            yield broker, client
        finally:
            client.close()


def sub_stats(broker, topic, sub):
    return broker.call(lambda service: service.topic_stats(topic))["subscriptions"][sub]


@pytest.mark.parametrize("consumer_type", [ConsumerType.Shared, ConsumerType.KeyShared])
def test_consumer_limit_blocks_and_acks_unblock(consumer_type):
    with broker_and_client(max_unacked_messages_per_consumer=10) as (broker, client):
        topic = unique("limit-consumer")
        consumer = client.subscribe(topic, "s", consumer_type=consumer_type,
                                    initial_position=EARLIEST,
                                    acknowledgements_group_time_ms=0)
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(40):
            producer.send(f"m{i}".encode())
        first = receive_n(consumer, 10, ack=False)
        stats = sub_stats(broker, topic, "s")["consumers"][0]
        assert stats["blockedConsumerOnUnackedMsgs"] is True
        assert stats["msgOutCounter"] == 10
        for msg in first[:5]:
            consumer.acknowledge(msg)
        more = receive_n(consumer, 5, ack=False)
        assert [m.data() for m in more] == [f"m{i}".encode() for i in range(10, 15)]
        stats = sub_stats(broker, topic, "s")["consumers"][0]
        assert stats["msgOutCounter"] == 15  # Pulsar sends exactly max - unacked = 5
        assert stats["unackedMessages"] == 10
        assert stats["blockedConsumerOnUnackedMsgs"] is True


@pytest.mark.parametrize("consumer_type", [ConsumerType.Shared, ConsumerType.KeyShared])
def test_nacks_from_a_blocked_consumer_come_back(consumer_type):
    with broker_and_client(max_unacked_messages_per_consumer=10) as (broker, client):
        topic = unique("limit-nack")
        consumer = client.subscribe(topic, "s", consumer_type=consumer_type,
                                    initial_position=EARLIEST,
                                    negative_ack_redelivery_delay_ms=100)
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(12):
            producer.send(f"m{i}".encode())
        first = receive_n(consumer, 10, ack=False)
        assert sub_stats(broker, topic, "s")["consumers"][0]["blockedConsumerOnUnackedMsgs"]
        for msg in first[3:5]:
            consumer.negative_acknowledge(msg)
        again = receive_n(consumer, 2, ack=False)
        assert [m.data() for m in again] == [b"m3", b"m4"]
        assert [m.redelivery_count() for m in again] == [1, 1]
        stats = sub_stats(broker, topic, "s")["consumers"][0]
        assert stats["unackedMessages"] == 10 and stats["blockedConsumerOnUnackedMsgs"] is True


@pytest.mark.parametrize("consumer_type", [ConsumerType.Shared, ConsumerType.KeyShared])
def test_subscription_limit_blocks_reads_and_acks_unblock(consumer_type):
    with broker_and_client(max_unacked_messages_per_subscription=6) as (broker, client):
        topic = unique("limit-sub")
        consumer = client.subscribe(topic, "s", consumer_type=consumer_type,
                                    initial_position=EARLIEST,
                                    acknowledgements_group_time_ms=0)
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(6):
            producer.send(f"m{i}".encode())
        first = receive_n(consumer, 6, ack=False)
        for i in range(6, 10):
            producer.send(f"m{i}".encode())  # stored once the receipt is back
        stats = sub_stats(broker, topic, "s")
        assert stats["blockedSubscriptionOnUnackedMsgs"] is True
        assert stats["msgBacklog"] == 10 and stats["consumers"][0]["msgOutCounter"] == 6
        for msg in first[:4]:
            consumer.acknowledge(msg)  # 2 unacked < 6 / 2: reads resume
        more = receive_n(consumer, 4, ack=False)
        assert [m.data() for m in more] == [f"m{i}".encode() for i in range(6, 10)]
        assert sub_stats(broker, topic, "s")["blockedSubscriptionOnUnackedMsgs"] is True
