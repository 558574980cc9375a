"""Exact delivery accounting over real sockets: nothing lost, acked messages never again.

A Shared subscription of 100k messages with consumers joining and leaving, and a client
process killed without closing whose unacknowledged messages must reach the others.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap

import pytest

from pulsarlab import Broker, Client, ConsumerType, InitialPosition, Timeout

from .client_support import unique

TOTAL = 100_000


@pytest.fixture(scope="module")
def broker():
    with Broker(storage="memory") as b:
        yield b


@pytest.fixture(scope="module")
def quick_keep_alive_broker():
    # Half-second keep-alives find a killed client fast. Only the test about a killed client
    # uses them: on a loaded machine a live client can miss two of them too, and losing its
    # connection redelivers what it acked in flight (at-least-once, as in Pulsar), which the
    # exact count of the 100k test must not see.
    with Broker(storage="memory", keep_alive_interval_seconds=0.5) as b:
        yield b


def test_shared_100k_with_consumers_joining_and_leaving(broker):
    topic, sub = unique("exact"), unique("sub")
    client = Client(broker.service_url)
    try:
        consumers = [
            client.subscribe(topic, sub, consumer_type=ConsumerType.Shared,
                             consumer_name=f"c{i}", receiver_queue_size=500)
            for i in range(2)
        ]
        producer = client.create_producer(topic, block_if_queue_full=True,
                                          batching_enabled=False)
        for i in range(TOTAL):
            producer.send_async(str(i).encode(), None)
        producer.flush()
        acked: set[int] = set()
        deliveries = 0
        joined = left = False
        idle_rounds = 0
        while len(acked) < TOTAL:
            progressed = False
            for consumer in list(consumers):
                try:
                    msg = consumer.receive(timeout_millis=20)
                except Timeout:
                    continue
                progressed = True
                deliveries += 1
                index = int(msg.data())
                assert index not in acked, f"message {index} came back after its ack"
                if left or consumer is not consumers[0] or len(acked) < TOTAL // 2:
                    consumer.acknowledge(msg)
                    acked.add(index)
                if not joined and len(acked) >= TOTAL // 4:
                    consumers.append(client.subscribe(
                        topic, sub, consumer_type=ConsumerType.Shared, consumer_name="late",
                        receiver_queue_size=500))
                    joined = True
                if not left and len(acked) >= TOTAL // 2 + 1000:
                    # c0 stops acking at the half-way mark, then leaves with what it holds.
                    leaver = consumers.pop(0)
                    leaver.close()
                    left = True
                    break
            idle_rounds = 0 if progressed else idle_rounds + 1
            assert idle_rounds < 500, f"delivery stalled with {TOTAL - len(acked)} unacked"

        assert acked == set(range(TOTAL))
        assert deliveries >= TOTAL
        for consumer in consumers:
            with pytest.raises(Timeout):
                consumer.receive(timeout_millis=300)
    finally:
        client.close()


CHILD = textwrap.dedent(
    """
    import os, sys
    from pulsarlab import Client, ConsumerType
    client = Client(sys.argv[1])
    consumer = client.subscribe(sys.argv[2], sys.argv[3], consumer_type=ConsumerType.Shared,
                                consumer_name="doomed", receiver_queue_size=1000)
    got = [consumer.receive(timeout_millis=10000) for _ in range(int(sys.argv[4]))]
    print("holding", len(got), flush=True)
    sys.stdin.readline()
    os._exit(0)   # no close, no acks: as if the process was killed
    """
)


def test_client_killed_without_closing_hands_its_messages_to_others(quick_keep_alive_broker):
    broker = quick_keep_alive_broker
    topic, sub = unique("killed"), unique("sub")
    client = Client(broker.service_url)
    try:
        producer = client.create_producer(topic)
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, broker.service_url, topic, sub, "10"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        try:
            # The doomed consumer subscribes first; wait until it has subscribed.
            for _ in range(200):
                stats = client_stats(broker, topic)
                if sub in stats.get("subscriptions", {}):
                    break
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.wait(timeout=0.05)
            for i in range(10):
                producer.send(str(i).encode())
            assert child.stdout is not None
            assert child.stdout.readline().startswith("holding 10")
            survivor = client.subscribe(topic, sub, consumer_type=ConsumerType.Shared,
                                        initial_position=InitialPosition.Earliest)
            child.stdin.write("\n")
            child.stdin.flush()
            child.wait(timeout=30)
            got = sorted(int(survivor.receive(timeout_millis=15_000).data()) for _ in range(10))
            assert got == list(range(10))
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(10)
    finally:
        client.close()


def client_stats(broker, topic):
    from pulsarlab import Admin

    with Admin(broker.web_url) as admin:
        try:
            return admin.topics.get_stats(topic)
        except Exception:
            return {}
