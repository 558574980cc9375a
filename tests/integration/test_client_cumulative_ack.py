"""A cumulative ack on a Shared subscription reaching the broker anyway is logged and ignored.

pulsarlab's ``Client`` refuses to send one (as the Java client does); a raw wire client
sends it, gets SUCCESS (Pulsar's broker answers no error), and a ``Client`` consumer that
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
from .wire_client import RawClient


@pytest.mark.parametrize("sub_type", ["Shared", "Key_Shared"])
def test_broker_ignores_a_cumulative_ack_on_a_shared_subscription(sub_type):
    with Broker(storage="memory") as broker:
        client = Client(broker.service_url, operation_timeout_seconds=10)
        topic = unique("cumulative")
        producer = client.create_producer(topic)
        for i in range(3):
            producer.send(f"m{i}".encode())
        raw = RawClient(broker.service_url)
        reply = raw.request("SUBSCRIBE", topic=topic, subscription="s", consumer_id=1,
                            sub_type=sub_type, initial_position="earliest")
        assert reply.name == "SUCCESS"
        raw.send("FLOW", consumer_id=1, permits=10)
        got = []
        while len(got) < 3:
            got += raw.wait_for("MESSAGE")["entries"]
        ledger, entry = got[-1][0], got[-1][1]
        reply = raw.request("ACK", consumer_id=1, positions=[[ledger, entry]], cumulative=True)
        assert reply.name == "SUCCESS"
        consumer_type = (ConsumerType.Shared if sub_type == "Shared"
                         else ConsumerType.KeyShared)
        consumer = client.subscribe(topic, "s", consumer_type=consumer_type,
                                    initial_position=InitialPosition.Earliest)
        raw.request("CLOSE_CONSUMER", consumer_id=1)
        again = receive_n(consumer, 3, ack=False)
        assert sorted(m.data() for m in again) == [b"m0", b"m1", b"m2"]
        with pytest.raises(CumulativeAcknowledgementNotAllowedError):
            consumer.acknowledge_cumulative(again[-1])  # the client still refuses
        raw.close()
        client.close()
