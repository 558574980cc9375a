"""A cumulative ack on a Shared subscription reaching the broker anyway is logged and ignored.

pulsarlab's ``Client`` refuses to send one (as the Java client does); a raw Pulsar-frame
peer over ZeroMQ sends it, gets its ACK_RESPONSE without an error (Pulsar's broker answers
none), and a ``Client`` consumer that
takes over the subscription receives every message again: nothing was acknowledged.
"""

from __future__ import annotations

import pytest

from pulsarlab import Broker
from pulsarlab.broker.client import (
    Client,
    ConsumerType,
    CumulativeAcknowledgementNotAllowedError,
    InitialPosition,
)

from .client_support import receive_n, unique
from .zmq_pulsar.dealer import PulsarDealer, T, api, command


@pytest.mark.parametrize("sub_type", ["Shared", "Key_Shared"])
def test_broker_ignores_a_cumulative_ack_on_a_shared_subscription(sub_type):
    with Broker(storage="memory") as broker:
        client = Client(broker.service_url, operation_timeout_seconds=10)
        topic = unique("cumulative")
        producer = client.create_producer(topic)
        for i in range(3):
            producer.send(f"m{i}".encode())
        raw = PulsarDealer(broker.service_url)
        assert raw.connect().type == T.CONNECTED
        raw.subscribe(topic, "s", sub_type=api.CommandSubscribe.SubType.Value(sub_type),
                      permits=10, initialPosition=api.CommandSubscribe.Earliest)
        got = [raw.expect(T.MESSAGE).message.message_id for _ in range(3)]
        raw.send(command(T.ACK, "ack", consumer_id=1, ack_type=api.CommandAck.Cumulative,
                         message_id=[api.MessageIdData(ledgerId=got[-1].ledgerId,
                                                       entryId=got[-1].entryId)],
                         request_id=raw.request_id()))
        response = raw.expect(T.ACK_RESPONSE).ackResponse
        assert not response.HasField("error"), response
        consumer_type = (ConsumerType.Shared if sub_type == "Shared"
                         else ConsumerType.KeyShared)
        consumer = client.subscribe(topic, "s", consumer_type=consumer_type,
                                    initial_position=InitialPosition.Earliest)
        raw.send(command(T.CLOSE_CONSUMER, "close_consumer", consumer_id=1,
                         request_id=raw.request_id()))
        raw.expect(T.SUCCESS)
        again = receive_n(consumer, 3, ack=False)
        assert sorted(m.data() for m in again) == [b"m0", b"m1", b"m2"]
        with pytest.raises(CumulativeAcknowledgementNotAllowedError):
            consumer.acknowledge_cumulative(again[-1])  # the client still refuses
        raw.close()
        client.close()
