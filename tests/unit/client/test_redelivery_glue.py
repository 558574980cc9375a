"""R-REDELIVER / R-DLQ: the client's redelivery glue on a fake clock and a fake connection.

The sans-I/O trackers have their own tests (tests/unit/redelivery); these drive a real
``Consumer`` + ``TopicConsumer`` whose connection is a fake with a simulated clock, and
check what reaches the wire: when ``REDELIVER_UNACKNOWLEDGED`` goes out, with which
positions, reason and times, what is acked, and what is published to the dead-letter and
retry-letter topics.
"""

from __future__ import annotations

import concurrent.futures
import datetime
import itertools
import re
from typing import Any

import pytest

import pulsarlab
from pulsarlab.broker.client import (
    Client,
    ConsumerDeadLetterPolicy,
    ConsumerType,
    InvalidConfiguration,
    MessageId,
    MultiplierRedeliveryBackoff,
    ProducerQueueIsFull,
    redelivery,
)
from pulsarlab.broker.client import client as client_module
from pulsarlab.broker.client import topic_consumer as tc_module
from pulsarlab.broker.client.batch import OutgoingMessage
from pulsarlab.broker.client.connection import Command, TimerHandle
from pulsarlab.broker.client.consumer import Consumer
from pulsarlab.broker.client.topic_consumer import ConsumerConfig, TopicConsumer
from pulsarlab.broker.entry import MessageMetadata
from pulsarlab.broker.format.batch import encode_pulsar_batch, pulsar_batch_items
from pulsarlab.broker.format.metadata import pulsar_metadata

TOPIC = "persistent://public/default/t"
T0 = 1_000_000


class FakeConn:
    """Runs posted work at once; timers run when the test advances the clock."""

    operation_timeout = 5.0
    closed = False
    batch_items = staticmethod(pulsar_batch_items)
    encode_batch = staticmethod(encode_pulsar_batch)

    def __init__(self) -> None:
        self.now = T0
        self.sent: list[tuple[int, str, dict[str, Any]]] = []
        self.timers: list[TimerHandle] = []
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._ids = itertools.count(1)

    def clock(self) -> int:
        return self.now

    def new_id(self) -> int:
        return next(self._ids)

    def unregister_consumer(self, consumer_id: int) -> None:
        pass

    def post(self, fn: Any) -> None:
        fn()

    def send(self, name: str, payloads: tuple = (), **fields: Any) -> None:
        self.sent.append((self.now, name, fields))

    def send_now(self, name: str, rid: int, payloads: tuple = (), **fields: Any) -> None:
        self.sent.append((self.now, name, fields))

    def schedule(self, delay_ms: float, fn: Any) -> TimerHandle:
        handle = TimerHandle(self.now + max(0, int(delay_ms)), fn)
        self.timers.append(handle)
        return handle

    def request(self, name: str, payloads: tuple = (), **fields: Any) -> concurrent.futures.Future:
        self.requests.append((name, fields))
        future: concurrent.futures.Future = concurrent.futures.Future()
        future.set_result(Command("SUCCESS", 0, {}))
        return future

    def wait(self, future: concurrent.futures.Future, timeout: float | None = -1.0) -> Any:
        return future.result()

    def advance(self, ms: int) -> None:
        """Move the clock forward, running each due timer at its own deadline."""
        end = self.now + ms
        while True:
            due = [h for h in self.timers if not h.cancelled and h.deadline <= end]
            if not due:
                break
            handle = min(due, key=lambda h: h.deadline)
            self.timers.remove(handle)
            self.now = max(self.now, handle.deadline)
            handle.fn()
        self.now = end

    def commands(self, name: str) -> list[tuple[int, dict[str, Any]]]:
        return [(t, f) for t, n, f in self.sent if n == name]


class FakeProducer:
    def __init__(self, log: list, topic: str, options: dict[str, Any]) -> None:
        self.log = log
        self.topic = topic
        self.options = options
        self.fail: Exception | None = None

    def send(self, content: Any, **kwargs: Any) -> MessageId:
        if self.fail is not None:
            raise self.fail
        self.log.append(("send", self.topic, content, kwargs))
        return MessageId(-1, 9, len(self.log))

    def close(self) -> None:
        self.log.append(("close", self.topic))


class FakeClient:
    def __init__(self, conn: FakeConn) -> None:
        self._conn = conn
        self.log: list[tuple] = []
        self.producers: dict[str, FakeProducer] = {}

    def create_producer(self, topic: str, **options: Any) -> FakeProducer:
        self.log.append(("create_producer", topic, options))
        producer = self.producers.setdefault(topic, FakeProducer(self.log, topic, options))
        return producer

    def _forget(self, handle: Any) -> None:
        pass


class GlueConsumer(Consumer):
    """A real Consumer whose dead-letter jobs wait for the test to run them."""

    def __init__(self, client: FakeClient, config: ConsumerConfig) -> None:
        super().__init__(client, config, TOPIC)
        self.jobs: list[Any] = []

    def _background(self, job: Any) -> bool:
        self.jobs.append(job)
        return True

    def run_jobs(self) -> None:
        jobs, self.jobs = self.jobs, []
        for job in jobs:
            job()


@pytest.fixture
def conn(monkeypatch):
    fake = FakeConn()
    monkeypatch.setattr(tc_module, "now_ms", fake.clock)
    return fake


def make(conn: FakeConn, consumer_type: ConsumerType = ConsumerType.Shared,
         **settings: Any) -> tuple[GlueConsumer, TopicConsumer]:
    settings.setdefault("acknowledgements_group_time_ms", 0)
    config = ConsumerConfig(subscription="sub", consumer_type=consumer_type,
                            consumer_name="c1", **settings)
    consumer = GlueConsumer(FakeClient(conn), config)
    tc = TopicConsumer(consumer, TOPIC, config)
    tc.connected = True
    consumer._consumers.append(tc)
    consumer._by_topic[TOPIC] = tc
    if tc.unacked is not None:
        tc._io_arm_unacked_timer()  # open() does this after SUBSCRIBE
    return consumer, tc


def deliver(tc: TopicConsumer, entry_id: int, redelivery_count: int = 0,
            batch: int | None = None, **meta: Any) -> None:
    if batch is None:
        metadata = MessageMetadata(producer_name="p", sequence_id=entry_id, **meta)
        payload = f"m{entry_id}".encode()
    else:
        metadata = MessageMetadata(producer_name="p", sequence_id=entry_id,
                                   num_messages_in_batch=batch, **meta)
        payload = encode_pulsar_batch([OutgoingMessage(payload=f"m{entry_id}.{i}".encode())
                                       for i in range(batch)])
    tc.on_entries([((1, entry_id, -1, redelivery_count, None), pulsar_metadata(metadata),
                    payload)])


def redelivered(conn: FakeConn) -> list[tuple[int, list | None, str, list | None]]:
    return [(t, f.get("positions"), f["reason"], f.get("requested_at"))
            for t, f in conn.commands("REDELIVER_UNACKNOWLEDGED")]


def acked(conn: FakeConn) -> list[list[int]]:
    return [p for _, f in conn.commands("ACK") for p in f["positions"]]


# -- negative acks ------------------------------------------------------------------------


def test_nacks_fire_on_a_delay_over_3_timer_and_are_grouped(conn):
    consumer, tc = make(conn, negative_ack_redelivery_delay_ms=300)
    for i in range(3):
        deliver(tc, i)
    m0, m1, m2 = (consumer.receive(0) for _ in range(3))
    consumer.negative_acknowledge(m0)  # due T0+300; the timer starts: every 100 ms
    conn.advance(20)
    consumer.negative_acknowledge(m1)  # due T0+320
    conn.advance(70)
    consumer.negative_acknowledge(m2)  # due T0+390
    conn.advance(1000)
    assert redelivered(conn) == [
        (T0 + 300, [[1, 0]], "nack", [T0]),
        (T0 + 400, [[1, 1], [1, 2]], "nack", [T0 + 20, T0 + 90]),
    ]
    assert not [h for h in conn.timers if not h.cancelled]  # idle once nothing is pending


def test_nack_backoff_follows_the_message_redelivery_count(conn):
    backoff = MultiplierRedeliveryBackoff(1000, 60_000, 2.0)
    consumer, tc = make(conn, negative_ack_redelivery_backoff=backoff)
    deliver(tc, 0, redelivery_count=2)
    deliver(tc, 1, redelivery_count=2)
    m0, m1 = consumer.receive(0), consumer.receive(0)
    consumer.negative_acknowledge(m0)  # 1000 * 2**2 = 4 s
    consumer.negative_acknowledge(m1.message_id())  # a bare id counts as 0: 1 s (Java)
    conn.advance(10_000)
    # Timer every max(next(0), 100) / 3 = 333 ms: the first tick at or after each due time.
    assert redelivered(conn) == [(T0 + 1332, [[1, 1]], "nack", [T0]),
                                 (T0 + 3996 + 333, [[1, 0]], "nack", [T0])]


def test_ack_cancels_a_pending_nack(conn):
    consumer, tc = make(conn, negative_ack_redelivery_delay_ms=300)
    deliver(tc, 0)
    m0 = consumer.receive(0)
    consumer.negative_acknowledge(m0)
    consumer.acknowledge(m0)
    conn.advance(1000)
    assert redelivered(conn) == [] and acked(conn) == [[1, 0]]


def test_batch_index_is_dropped_for_nacks(conn):
    consumer, tc = make(conn, negative_ack_redelivery_delay_ms=300)
    deliver(tc, 4, batch=3)
    msgs = [consumer.receive(0) for _ in range(3)]
    consumer.negative_acknowledge(msgs[0])
    consumer.negative_acknowledge(msgs[2])
    conn.advance(1000)
    assert [(p, r) for _, p, r, _ in redelivered(conn)] == [([[1, 4]], "nack")]


def test_exclusive_turns_a_nack_into_a_full_redelivery(conn):
    consumer, tc = make(conn, ConsumerType.Exclusive, negative_ack_redelivery_delay_ms=300)
    for i in range(3):
        deliver(tc, i)
    m0 = consumer.receive(0)
    consumer.negative_acknowledge(m0)
    conn.advance(1000)
    assert redelivered(conn) == [(T0 + 300, None, "nack", None)]
    assert consumer._queue == type(consumer._queue)()  # the prefetched two were dropped


# -- ack timeout --------------------------------------------------------------------------


def test_ack_timeout_starts_when_the_application_receives(conn):
    consumer, tc = make(conn, unacked_messages_timeout_ms=10_000, tick_duration_ms=1000)
    deliver(tc, 0)
    deliver(tc, 1)
    conn.advance(30_000)  # sitting in the receive queue: never timed out
    assert redelivered(conn) == []
    received_at = conn.now
    m0 = consumer.receive(0)
    conn.advance(500)
    m1 = consumer.receive(0)
    consumer.acknowledge(m1)
    conn.advance(30_000)
    [(at, positions, reason, times)] = redelivered(conn)
    assert positions == [[1, 0]] and reason == "ack_timeout" and times == [at]
    # ceil(T/t)*t < wait <= (ceil(T/t)+1)*t after tracking (the wheel's bounds).
    assert received_at + 10_000 < at <= received_at + 11_000
    assert m0.data() == b"m0"


def test_ack_timeout_backoff_adds_to_the_timeout(conn):
    backoff = MultiplierRedeliveryBackoff(1000, 60_000, 2.0)
    consumer, tc = make(conn, unacked_messages_timeout_ms=10_000, tick_duration_ms=100,
                        ack_timeout_redelivery_backoff=backoff)
    deliver(tc, 0, redelivery_count=3)
    conn.advance(50)
    tracked = conn.now
    consumer.receive(0)
    conn.advance(40_000)
    [(at, positions, reason, _)] = redelivered(conn)
    assert positions == [[1, 0]] and reason == "ack_timeout"
    assert tracked + 10_000 + 8_000 <= at < tracked + 10_000 + 8_000 + 100


def test_cumulative_ack_removes_every_lower_id_from_the_ack_timeout(conn):
    for ack_up_to, expect_redelivery in ((2, False), (1, True)):
        consumer, tc = make(conn, ConsumerType.Failover, unacked_messages_timeout_ms=10_000)
        start = len(redelivered(conn))
        for i in range(3):
            deliver(tc, 10 * ack_up_to + i)
        msgs = [consumer.receive(0) for _ in range(3)]
        consumer.acknowledge_cumulative(msgs[ack_up_to])
        conn.advance(20_000)
        new = redelivered(conn)[start:]
        # Failover: a timeout redelivers everything the consumer holds (no positions).
        assert [(p, r) for _, p, r, _ in new] == ([(None, "ack_timeout")]
                                                  if expect_redelivery else [])
        tc.closed = True
        tc._io_closed()  # its wheel stops turning


def test_too_short_ack_timeout_or_tick_is_refused():
    client = Client("zmq://127.0.0.1:9", connection_timeout_ms=100)
    try:
        with pytest.raises(ValueError, match="greater than 10 seconds"):
            client.subscribe("t", "s", unacked_messages_timeout_ms=9_999)
        with pytest.raises(ValueError, match="tick time should be greater than 100 ms"):
            client.subscribe("t", "s", unacked_messages_timeout_ms=10_000, tick_duration_ms=50)
        with pytest.raises(ValueError, match="negative_ack_redelivery_delay_ms"):
            client.subscribe("t", "s", negative_ack_redelivery_delay_ms=-1)
        with pytest.raises(ValueError, match="MultiplierRedeliveryBackoff"):
            client.subscribe("t", "s", negative_ack_redelivery_backoff=1000)
        with pytest.raises(ValueError, match="Shared and KeyShared"):
            client.subscribe("t", "s", dead_letter_policy=ConsumerDeadLetterPolicy(3))
        with pytest.raises(ValueError, match="not a pattern"):
            client.subscribe(re.compile("t.*"), "s", ConsumerType.Shared, retry_enable=True)
    finally:
        client.shutdown()


# -- dead letters -------------------------------------------------------------------------


def dlq_sends(consumer: GlueConsumer) -> list[tuple]:
    return [e for e in consumer._client.log if e[0] == "send"]


def test_nack_at_the_max_count_dead_letters_instead_of_redelivering(conn):
    policy = ConsumerDeadLetterPolicy(2, initial_subscription_name="init")
    consumer, tc = make(conn, negative_ack_redelivery_delay_ms=300, dead_letter_policy=policy)
    deliver(tc, 0, redelivery_count=1, partition_key="k", ordering_key=b"ok",
            properties={"a": "1"})
    deliver(tc, 1, redelivery_count=2, partition_key="k", ordering_key=b"ok",
            properties={"a": "1"})
    m0, m1 = consumer.receive(0), consumer.receive(0)
    consumer.negative_acknowledge(m0)
    consumer.negative_acknowledge(m1)
    conn.advance(1000)
    assert [(p, r) for _, p, r, _ in redelivered(conn)] == [([[1, 0]], "nack")]
    assert acked(conn) == [] and len(consumer.jobs) == 1
    consumer.run_jobs()
    log = consumer._client.log
    # The DLQ producer asks for the initial subscription (no admin call).
    assert conn.requests == []
    assert log[0] == ("create_producer", f"{TOPIC}-sub-DLQ", {
        "producer_name": f"{TOPIC}-sub-c1-DLQ", "batching_enabled": False,
        "chunking_enabled": True, "block_if_queue_full": False,
        "_initial_subscription_name": "init"})
    [(_, topic, content, kwargs)] = dlq_sends(consumer)
    origin = str(m1.message_id())
    assert (topic, content) == (f"{TOPIC}-sub-DLQ", b"m1")
    assert kwargs["partition_key"] == "k" and kwargs["ordering_key"] == "ok"
    assert kwargs["properties"] == {"a": "1", "REAL_TOPIC": TOPIC, "ORIGIN_MESSAGE_ID": origin,
                                    "ORIGIN_MESSAGE_IDY_TIME": origin}
    assert acked(conn) == [[1, 1]]
    assert tc._possible_dlq == {} and tc._dlq_inflight == set()


def test_ack_timeout_at_the_max_count_dead_letters(conn):
    consumer, tc = make(conn, unacked_messages_timeout_ms=10_000,
                        dead_letter_policy=ConsumerDeadLetterPolicy(2))
    deliver(tc, 0, redelivery_count=2)
    consumer.receive(0)
    conn.advance(12_000)
    assert redelivered(conn) == [] and len(consumer.jobs) == 1
    consumer.run_jobs()
    assert [e[1] for e in dlq_sends(consumer)] == [f"{TOPIC}-sub-DLQ"]
    assert acked(conn) == [[1, 0]]


def test_message_above_the_max_is_dead_lettered_on_arrival(conn):
    consumer, tc = make(conn, dead_letter_policy=ConsumerDeadLetterPolicy(2, "my-dlq"))
    deliver(tc, 0, redelivery_count=3)
    deliver(tc, 1, redelivery_count=2)
    assert [m.data() for m in consumer._queue] == [b"m1"]  # m0 never reaches the app
    assert next(tc._consumed) == 2  # ... but counts as consumed (the next count is 2)
    consumer.run_jobs()
    assert [e[1:3] for e in dlq_sends(consumer)] == [("my-dlq", b"m0")]
    assert acked(conn) == [[1, 0]]


def test_acked_messages_are_not_dead_lettered(conn):
    consumer, tc = make(conn, negative_ack_redelivery_delay_ms=300,
                        dead_letter_policy=ConsumerDeadLetterPolicy(1))
    deliver(tc, 7, redelivery_count=1, batch=3)
    msgs = [consumer.receive(0) for _ in range(3)]
    consumer.acknowledge(msgs[0])
    consumer.negative_acknowledge(msgs[1])
    conn.advance(1000)
    consumer.run_jobs()
    # The entry's two unacked messages go to the DLQ; the acked one does not.
    assert [e[2] for e in dlq_sends(consumer)] == [b"m7.1", b"m7.2"]
    assert redelivered(conn) == []


def test_a_failed_dead_letter_falls_back_to_a_redelivery(conn):
    consumer, tc = make(conn, negative_ack_redelivery_delay_ms=300,
                        dead_letter_policy=ConsumerDeadLetterPolicy(1))
    producer = consumer._client.create_producer(f"{TOPIC}-sub-DLQ")
    producer.fail = ProducerQueueIsFull("full")
    deliver(tc, 0, redelivery_count=1)
    consumer.negative_acknowledge(consumer.receive(0))
    conn.advance(1000)
    consumer.run_jobs()
    assert [(p, r, a) for _, p, r, a in redelivered(conn)] == [([[1, 0]], "nack", [T0])]
    assert acked(conn) == [] and tc._dlq_inflight == set()


def test_exclusive_never_dead_letters(conn):
    consumer, tc = make(conn, ConsumerType.Exclusive, retry_enable=True,
                        negative_ack_redelivery_delay_ms=300,
                        dead_letter_policy=ConsumerDeadLetterPolicy(1))
    deliver(tc, 0, redelivery_count=5)
    consumer.negative_acknowledge(consumer.receive(0))
    conn.advance(1000)
    assert redelivered(conn) == [(T0 + 300, None, "nack", None)] and consumer.jobs == []


# -- retry --------------------------------------------------------------------------------


def retry_consumer(conn: FakeConn, max_count: int = 3) -> tuple[GlueConsumer, TopicConsumer]:
    policy, _ = client_module._retry_policy(
        "t", "sub", ConsumerDeadLetterPolicy(max_count)
    )
    return make(conn, retry_enable=True, dead_letter_policy=policy)


def test_reconsume_later_publishes_to_the_retry_topic_then_the_dlq(conn):
    consumer, tc = retry_consumer(conn)
    deliver(tc, 0, properties={"a": "1"})
    deliver(tc, 1, properties={"RECONSUMETIMES": "3", "REAL_TOPIC": "elsewhere"})
    m0, m1 = consumer.receive(0), consumer.receive(0)
    consumer.reconsume_later(m0, datetime.timedelta(seconds=2), properties={"why": "busy"})
    consumer.reconsume_later(m1, 0)
    [first, second] = dlq_sends(consumer)
    origin = str(m0.message_id())
    assert first[1] == f"{TOPIC}-sub-RETRY" and first[2] == b"m0"
    assert first[3]["deliver_after"] == datetime.timedelta(seconds=2)
    assert first[3]["properties"] == {
        "a": "1", "REAL_TOPIC": TOPIC, "ORIGIN_MESSAGE_ID": origin,
        "ORIGIN_MESSAGE_IDY_TIME": origin, "RECONSUMETIMES": "1", "DELAY_TIME": "2000",
        "why": "busy",
    }
    # RECONSUMETIMES would be 4 > max 3: the dead-letter topic, no delay.
    assert second[1] == f"{TOPIC}-sub-DLQ" and second[3]["deliver_after"] is None
    assert second[3]["properties"]["RECONSUMETIMES"] == "4"
    assert second[3]["properties"]["REAL_TOPIC"] == "elsewhere"  # kept from the first hop
    assert acked(conn) == [[1, 0], [1, 1]]


def test_reconsume_later_arguments(conn):
    consumer, tc = retry_consumer(conn)
    deliver(tc, 0)
    m0 = consumer.receive(0)
    with pytest.raises(ValueError, match="delay"):
        consumer.reconsume_later(m0, 1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="received by this consumer"):
        consumer.reconsume_later(m0.message_id(), 100)  # type: ignore[arg-type]
    consumer.reconsume_later(m0, -5)
    [send] = dlq_sends(consumer)
    assert send[3]["properties"]["DELAY_TIME"] == "0" and send[3]["deliver_after"] is None
    plain, ptc = make(conn)
    deliver(ptc, 1)
    with pytest.raises(InvalidConfiguration, match="retry_enable=True"):
        plain.reconsume_later(plain.receive(0), 100)


def test_retry_enable_names_and_default_max():
    policy, retry = client_module._retry_policy("my-topic", "sub", None)
    base = "persistent://public/default/my-topic-sub"
    assert (policy.max_redeliver_count, policy.dead_letter_topic, retry) == (
        redelivery.MAX_RECONSUMETIMES, base + "-DLQ", base + "-RETRY")
    assert policy.retry_letter_topic == retry
    given = ConsumerDeadLetterPolicy(5, "dead", "init", retry_letter_topic="again")
    policy, retry = client_module._retry_policy(["a", "b"], "s", given)
    assert (policy.max_redeliver_count, policy.dead_letter_topic, retry,
            policy.initial_subscription_name) == (
        5, "persistent://public/default/dead", "persistent://public/default/again", "init")


def test_dead_letter_policy_extension_and_exports():
    policy = ConsumerDeadLetterPolicy(3, "d", "i", retry_letter_topic="r")
    assert policy.retry_letter_topic == "r" and "retry_letter_topic='r'" in repr(policy)
    assert ConsumerDeadLetterPolicy(3).retry_letter_topic is None
    with pytest.raises(TypeError):
        ConsumerDeadLetterPolicy(3, "d", "i", "r")  # type: ignore[misc]  (keyword-only)
    assert pulsarlab.MultiplierRedeliveryBackoff is redelivery.MultiplierRedeliveryBackoff
    assert MultiplierRedeliveryBackoff is redelivery.MultiplierRedeliveryBackoff


# -- receive and ack bursts ----------------------------------------------------------------


def test_flow_asks_for_the_refill_threshold_each_time_it_is_consumed(conn):
    consumer, tc = make(conn, receiver_queue_size=4)  # refill threshold 2
    deliver(tc, 0, batch=3)
    deliver(tc, 1, batch=2)
    for _ in range(5):
        consumer.receive(0)
    assert [f["permits"] for _, f in conn.commands("FLOW")] == [2, 2]
    tc.add_permits(3)  # skipped batch indexes count too: 6, 7, 8 pass two thresholds
    assert [f["permits"] for _, f in conn.commands("FLOW")] == [2, 2, 4]


def test_a_burst_of_acks_is_taken_at_once_and_acks_each_message(conn):
    consumer, tc = make(conn, acknowledgements_group_time_ms=100)
    deliver(tc, 0, batch=3)
    deliver(tc, 1)
    posted: list[Any] = []
    conn.post = posted.append  # the I/O thread is busy: acks wait for it
    messages = [consumer.receive(0) for _ in range(4)]
    for m in messages[:3]:
        consumer.acknowledge(m)
    consumer.acknowledge(messages[3].message_id())  # an id stands for its message
    consumer.acknowledge(messages[0])  # twice: no harm
    assert len(posted) == 1  # one I/O task for the whole burst
    posted.pop()()
    consumer.acknowledge(messages[1])  # after the burst was taken: a task of its own
    assert len(posted) == 1
    posted.pop()()
    conn.advance(100)
    assert sorted(acked(conn)) == [[1, 0], [1, 1]]


def test_a_cumulative_ack_in_a_burst_keeps_its_order(conn):
    consumer, tc = make(conn, ConsumerType.Exclusive, acknowledgements_group_time_ms=100)
    for i in range(3):
        deliver(tc, i)
    posted: list[Any] = []
    conn.post = posted.append
    _, m1, m2 = (consumer.receive(0) for _ in range(3))
    consumer.acknowledge(m2)
    consumer.acknowledge_cumulative(m1)
    for task in posted:  # in order, as the I/O thread runs them
        task()
    conn.advance(100)
    assert [(f["positions"], f.get("cumulative", False)) for _, f in conn.commands("ACK")] == [
        ([[1, 2]], False), ([[1, 1]], True)]
