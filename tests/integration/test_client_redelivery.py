"""R-REDELIVER / R-DLQ end to end over ZeroMQ: nacks, ack timeout, dead letters, retries.

Short settings keep it quick (nack back-off 100..800 ms, a 50 ms delayed-delivery tick);
nothing asserts on wall-clock timing: waits are ``receive(timeout_millis)`` deadlines and
the assertions are about order, counts, properties and the broker's event stream.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections import Counter
from typing import Any

import msgpack
import pytest
import zmq

from pulsarlab import Admin, Broker, MultiplierRedeliveryBackoff
from pulsarlab.broker.client import (
    Client,
    ConsumerDeadLetterPolicy,
    ConsumerType,
    InitialPosition,
    Timeout,
)

from .client_support import WAIT_MS, drain, receive_n, unique

EARLIEST = InitialPosition.Earliest
NS = "persistent://public/default/"


@pytest.fixture(scope="module")
def broker():
    with Broker(storage="memory", delayed_delivery_tick_ms=50) as b:
        yield b


@pytest.fixture
def client(broker):
    c = Client(broker.service_url, operation_timeout_seconds=10)
    yield c
    c.close()


class EventTap:
    """Collects the broker's event stream (a SUB socket read by a thread)."""

    def __init__(self, broker: Broker, client: Client) -> None:
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sub = zmq.Context.instance().socket(zmq.SUB)
        self._sub.linger = 0
        self._sub.rcvhwm = 0
        self._sub.setsockopt(zmq.SUBSCRIBE, b"")
        self._sub.connect(broker.events_url)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        # The subscription reaches the broker asynchronously: publish until events flow.
        warm = unique("warm-up")
        producer = client.create_producer(warm)
        deadline = time.monotonic() + 10
        while not self.matching(topic=NS + warm):
            assert time.monotonic() < deadline, "the event stream never started"
            producer.send(b"w")
            time.sleep(0.02)
        producer.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._sub.poll(50):
                _kind, body = self._sub.recv_multipart()
                with self._lock:
                    self.events.append(msgpack.unpackb(body, raw=False))
        self._sub.close()

    def matching(self, **fields: Any) -> list[dict[str, Any]]:
        with self._lock:
            events = list(self.events)
        return [e for e in events if all(e.get(k) == v for k, v in fields.items())]

    def wait_for(self, count: int, timeout_s: float = 10, **fields: Any) -> list[dict]:
        deadline = time.monotonic() + timeout_s
        while True:
            found = self.matching(**fields)
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.02)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)


@pytest.fixture
def events(broker, client):
    tap = EventTap(broker, client)
    yield tap
    tap.close()


def wait_backlog_zero(broker: Broker, topic: str, subscription: str) -> int:
    """The subscription's backlog once it reaches 0 (or whatever it is after 10 s)."""
    with Admin(broker.web_url) as admin:
        deadline = time.monotonic() + 10
        while True:
            backlog = admin.topics.get_stats(topic)["subscriptions"][subscription]["msgBacklog"]
            if backlog == 0 or time.monotonic() > deadline:
                return backlog
            time.sleep(0.05)


def test_poison_message_reaches_the_dlq_after_max_redeliveries(broker, client, events):
    """R-DLQ + R-REDELIVER: nacked with back-off until it lands in the DLQ, whose initial
    subscription reads it with REAL_TOPIC / ORIGIN_MESSAGE_ID; nothing else is lost."""
    topic = unique("poison")
    full = NS + topic
    policy = ConsumerDeadLetterPolicy(3, initial_subscription_name="init")
    backoff = MultiplierRedeliveryBackoff(100, 800, 2.0)
    seen: list[tuple[str, bytes, int]] = []
    lock = threading.Lock()

    def listener(consumer, msg):
        with lock:
            seen.append((consumer.consumer_name(), msg.data(), msg.redelivery_count()))
        if msg.data() == b"poison":
            consumer.negative_acknowledge(msg)
        else:
            consumer.acknowledge(msg)

    consumers = [
        client.subscribe(topic, "sub", ConsumerType.Shared, consumer_name=name,
                         message_listener=listener, initial_position=EARLIEST,
                         negative_ack_redelivery_backoff=backoff, dead_letter_policy=policy)
        for name in ("c1", "c2")
    ]
    producer = client.create_producer(topic)
    expected = [f"m{i}".encode() for i in range(40)]
    poison_id = None
    for i, payload in enumerate(expected):
        producer.send(payload)
        if i == 20:
            poison_id = producer.send(b"poison", properties={"kind": "bad"},
                                      partition_key="k-poison")
    producer.close()

    dlq = client.subscribe(f"{topic}-sub-DLQ", "init", ConsumerType.Shared)
    dead = dlq.receive(15_000)
    dlq.acknowledge(dead)
    with pytest.raises(Timeout):
        dlq.receive(300)
    assert wait_backlog_zero(broker, full, "sub") == 0
    for c in consumers:
        c.close()

    with lock:
        poison = [(name, count) for name, data, count in seen if data == b"poison"]
        others = Counter(data for _, data, _ in seen if data != b"poison")
    # Delivered exactly max_redeliver_count + 1 times, counts 0..max, then dead-lettered.
    assert [count for _, count in poison] == [0, 1, 2, 3]
    assert others == Counter(expected)  # every other message exactly once
    props = dead.properties()
    assert dead.data() == b"poison" and dead.partition_key() == "k-poison"
    assert props["kind"] == "bad" and props["REAL_TOPIC"] == full
    origin = str(poison_id)
    assert props["ORIGIN_MESSAGE_ID"] == origin and props["ORIGIN_MESSAGE_IDY_TIME"] == origin
    last_holder = poison[-1][0]
    assert dead.producer_name() == f"{full}-sub-{last_holder}-DLQ"

    position = [poison_id.ledger_id(), poison_id.entry_id()]
    nacks = events.wait_for(3, type="redelivery_requested", topic=full, reason="nack")
    nacked_poison = [e for e in nacks if position in e["positions"]]
    assert len(nacked_poison) == 3  # the 4th nack sent it to the DLQ instead
    for e in nacked_poison:
        assert len(e["requested_at"]) == len(e["positions"])
    dead_events = events.wait_for(1, type="dead_lettered", topic=NS + f"{topic}-sub-DLQ")
    assert [(e["origin_message_id"], e["real_topic"]) for e in dead_events] == [(origin, full)]


def test_fixed_nack_delay_redelivers_each_nacked_message_once(client, events):
    """R-REDELIVER: nacks with a fixed delay, grouped requests with reason and times."""
    topic = unique("nack-fixed")
    full = NS + topic
    consumer = client.subscribe(topic, "sub", ConsumerType.Shared, initial_position=EARLIEST,
                                negative_ack_redelivery_delay_ms=300)
    producer = client.create_producer(topic)
    ids = [producer.send(f"m{i}".encode()) for i in range(10)]
    producer.close()
    for msg in receive_n(consumer, 10, ack=False):
        if int(msg.data()[1:]) % 2:
            consumer.negative_acknowledge(msg)
        else:
            consumer.acknowledge(msg)
    again = receive_n(consumer, 5)
    assert sorted(m.data() for m in again) == [b"m1", b"m3", b"m5", b"m7", b"m9"]
    assert {m.redelivery_count() for m in again} == {1}
    assert drain(consumer) == []
    requested = events.wait_for(1, type="redelivery_requested", topic=full, reason="nack")
    odd = {(i.ledger_id(), i.entry_id()) for i in ids[1::2]}
    assert {tuple(p) for e in requested for p in e["positions"]} == odd
    for e in requested:
        assert len(e["requested_at"]) == len(e["positions"])
        assert all(t <= e["time"] for t in e["requested_at"])
    consumer.close()


def test_message_above_the_max_count_is_dead_lettered_without_delivery(client):
    """R-DLQ: a message arriving with redelivery_count > max never reaches the app."""
    topic = unique("over-max")
    plain = client.subscribe(topic, "sub", ConsumerType.Shared, initial_position=EARLIEST,
                             negative_ack_redelivery_delay_ms=100)
    producer = client.create_producer(topic)
    producer.send(b"tired")
    producer.close()
    while True:
        msg = plain.receive(WAIT_MS)
        if msg.redelivery_count() == 3:
            break
        plain.negative_acknowledge(msg)
    plain.close()  # count 3 stays with the entry (a close is not a redelivery request)

    guarded = client.subscribe(topic, "sub", ConsumerType.Shared,
                               dead_letter_policy=ConsumerDeadLetterPolicy(2, "over-max-dlq",
                                                                           "init"))
    dlq = client.subscribe("over-max-dlq", "init", ConsumerType.Shared)
    dead = dlq.receive(WAIT_MS)
    assert dead.data() == b"tired"
    assert dead.properties()["REAL_TOPIC"] == NS + topic
    with pytest.raises(Timeout):
        guarded.receive(300)
    guarded.close()
    dlq.close()


def test_retry_hops_then_dead_letter(broker, client, events):
    """R-DLQ retry: RECONSUMETIMES 1..max on the retry topic, then the DLQ."""
    topic = unique("retry")
    full = NS + topic
    consumer = client.subscribe(
        topic, "sub", ConsumerType.Shared, initial_position=EARLIEST, retry_enable=True,
        dead_letter_policy=ConsumerDeadLetterPolicy(3, initial_subscription_name="init"),
    )
    producer = client.create_producer(topic)
    expected = [f"ok{i}".encode() for i in range(10)]
    for payload in expected[:5]:
        producer.send(payload)
    first_id = producer.send(b"again", properties={"p": "v"}, partition_key="k")
    for payload in expected[5:]:
        producer.send(payload)
    producer.close()

    hops: list[tuple[str, str | None, str | None]] = []
    others: Counter = Counter()
    deadline = time.monotonic() + 20
    dlq = client.subscribe(f"{topic}-sub-DLQ", "init", ConsumerType.Shared)
    while len(hops) < 4 and time.monotonic() < deadline:
        try:
            msg = consumer.receive(1000)
        except Timeout:
            continue
        if msg.data() != b"again":
            others[msg.data()] += 1
            consumer.acknowledge(msg)
            continue
        props = msg.properties()
        hops.append((msg.topic_name(), props.get("RECONSUMETIMES"), props.get("DELAY_TIME")))
        delay = 100 if len(hops) % 2 else datetime.timedelta(milliseconds=100)
        consumer.reconsume_later(msg, delay, properties={"hop": str(len(hops))})
    dead = dlq.receive(WAIT_MS)
    dlq.acknowledge(dead)

    retry_topic = f"{full}-sub-RETRY"
    assert hops == [(full, None, None), (retry_topic, "1", "100"), (retry_topic, "2", "100"),
                    (retry_topic, "3", "100")]
    props = dead.properties()
    assert dead.data() == b"again" and dead.partition_key() == "k"
    assert props["RECONSUMETIMES"] == "4" and props["DELAY_TIME"] == "100"
    assert props["REAL_TOPIC"] == full and props["ORIGIN_MESSAGE_ID"] == str(first_id)
    assert props["p"] == "v" and props["hop"] == "4"
    assert drain(consumer) == []
    assert others == Counter(expected)
    assert wait_backlog_zero(broker, full, "sub") == 0
    assert wait_backlog_zero(broker, retry_topic, "sub") == 0
    retried = events.wait_for(3, type="retried", topic=retry_topic)
    assert sorted(e["reconsume_times"] for e in retried) == ["1", "2", "3"]
    dead_events = events.wait_for(1, type="dead_lettered", topic=f"{full}-sub-DLQ")
    assert [e["reconsume_times"] for e in dead_events] == ["4"]
    consumer.close()
    dlq.close()


def test_ack_timeout_redelivers_only_what_the_application_received(client, events):
    """R-REDELIVER ack timeout (10 s, 100 ms ticks): a received, unacked message comes
    back; messages waiting in the receive queue meanwhile are not timed out."""
    topic = unique("ack-timeout")
    consumer = client.subscribe(topic, "sub", ConsumerType.Shared, initial_position=EARLIEST,
                                unacked_messages_timeout_ms=10_000, tick_duration_ms=100)
    producer = client.create_producer(topic)
    ids = [producer.send(f"m{i}".encode()) for i in range(3)]
    producer.close()
    first = consumer.receive(WAIT_MS)
    assert first.data() == b"m0"
    # m1 and m2 are prefetched now; they wait in the receive queue past the timeout.
    time.sleep(10.5)
    later = receive_n(consumer, 3, ack=False, timeout_ms=WAIT_MS)
    assert [(m.data(), m.redelivery_count()) for m in later] == [
        (b"m1", 0), (b"m2", 0), (b"m0", 1)
    ]
    for m in later:
        consumer.acknowledge(m)
    assert drain(consumer) == []
    timed_out = events.wait_for(1, type="redelivery_requested", reason="ack_timeout",
                                topic=NS + topic)
    assert [e["positions"] for e in timed_out] == [[[ids[0].ledger_id(), ids[0].entry_id()]]]
    consumer.close()


def test_close_returns_prefetched_messages_unacked(client):
    """R-REDELIVER: what sits in the receive queue goes back to the subscription on close."""
    topic = unique("close-queue")
    first = client.subscribe(topic, "sub", ConsumerType.Shared, initial_position=EARLIEST,
                             unacked_messages_timeout_ms=10_000)
    producer = client.create_producer(topic)
    for i in range(5):
        producer.send(f"m{i}".encode())
    producer.close()
    got = first.receive(WAIT_MS)
    first.acknowledge(got)
    time.sleep(0.2)  # the other four are prefetched by now (not required for correctness)
    first.close()
    second = client.subscribe(topic, "sub", ConsumerType.Shared)
    rest = drain(second)
    assert sorted(m.data() for m in rest) == sorted(
        f"m{i}".encode() for i in range(5) if f"m{i}".encode() != got.data()
    )
    second.close()
