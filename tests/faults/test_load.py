"""Load: 100 producers and 100 consumers on 20 topics, all four subscription types.

Ten ``Client`` objects (one I/O thread each) share 100 producers and 100 consumers over 20
topics on one broker process (durable storage):

* 5 topics with 5 Exclusive subscriptions each (one consumer per subscription);
* 5 partitioned topics (5 partitions) with one Failover subscription of 5 consumers;
* 5 topics with one Key_Shared subscription of 5 consumers (13 keys);
* 5 topics with one Shared subscription of 5 consumers.

Every producer sends a fixed number of messages (send_async, bounded in time). At the end
the accounting is exact: every message is delivered and acknowledged exactly once per
subscription, never redelivered; Exclusive and Failover deliver in order per producer and
partition, Key_Shared in order per producer and key, each key and each Failover partition
to one consumer; every backlog is empty.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulsarlab import Admin, Client, ConsumerType, InitialPosition, Result

from .support import SESSION, BrokerProcess, wait_until

CLIENTS = 10
TOPICS = 20
PER_TOPIC = 5  # producers per topic, and consumers per topic
MESSAGES = 300  # per producer
KEYS = 13
PARTITIONS = 5
DEADLINE = 90.0  # seconds for all of production and delivery


@dataclass(frozen=True)
class Delivery:
    subscription: str  # "topic/subscription"
    consumer: str
    partition: int
    producer: str
    index: int
    key: str
    redelivery_count: int


def _kind(t: int) -> ConsumerType:
    return (ConsumerType.Exclusive, ConsumerType.Failover, ConsumerType.KeyShared,
            ConsumerType.Shared)[t // 5]


def _topic(t: int) -> str:
    return f"load-{t:02d}-{_kind(t).name.lower()}"


def test_100_producers_100_consumers_20_topics_exact_accounting(tmp_path: Path) -> None:
    SESSION.check("load", reserve=DEADLINE / 3)
    broker = BrokerProcess(
        tmp_path / "data", {"active_consumer_failover_delay_ms": 0},
        log_path=tmp_path / "broker.log",
    ).start()
    clients = [Client(broker.service_url, operation_timeout_seconds=30) for _ in range(CLIENTS)]
    deliveries: list[Delivery] = []
    lock = threading.Lock()
    try:
        with Admin(broker.web_url) as admin:
            for t in range(TOPICS):
                if _kind(t) is ConsumerType.Failover:
                    admin.topics.create_partitioned_topic(_topic(t), PARTITIONS)

        def listener_for(sub: str, name: str):
            def on_message(consumer: Any, msg: Any) -> None:
                producer, index = msg.data().decode().rsplit(":", 1)
                delivery = Delivery(sub, name, msg.message_id().partition(), producer,
                                    int(index), msg.partition_key(), msg.redelivery_count())
                with lock:
                    deliveries.append(delivery)
                consumer.acknowledge(msg)

            return on_message

        subscriptions: set[str] = set()
        for k in range(TOPICS * PER_TOPIC):  # consumer k lives on client k % CLIENTS
            t, j = k % TOPICS, k // TOPICS
            kind = _kind(t)
            sub = f"sub-{j}" if kind is ConsumerType.Exclusive else "sub"
            name = f"c{k}"
            subscriptions.add(f"{_topic(t)}/{sub}")
            clients[k % CLIENTS].subscribe(
                _topic(t), sub, consumer_type=kind, consumer_name=name,
                initial_position=InitialPosition.Earliest, receiver_queue_size=100,
                message_listener=listener_for(f"{_topic(t)}/{sub}", name),
            )
        assert len(subscriptions) == 5 * PER_TOPIC + 15

        results: Counter[Result] = Counter()
        done = threading.Semaphore(0)

        def on_sent(result: Result, _msg_id: Any) -> None:
            with lock:
                results[result] += 1
            done.release()

        producers = []
        for k in range(TOPICS * PER_TOPIC):  # producer k lives on client k % CLIENTS
            t = k % TOPICS
            producer = clients[k % CLIENTS].create_producer(
                _topic(t), producer_name=f"p{k}", block_if_queue_full=True,
                max_pending_messages=100,
            )
            producers.append((t, k, producer))

        start = time.monotonic()
        for i in range(MESSAGES):
            for _t, k, producer in producers:
                key = f"key-{i % KEYS}"
                producer.send_async(f"p{k}:{i}".encode(), on_sent, partition_key=key)
        for _ in range(TOPICS * PER_TOPIC * MESSAGES):
            assert done.acquire(timeout=max(0.1, DEADLINE - (time.monotonic() - start)))
        assert results == Counter({Result.Ok: TOPICS * PER_TOPIC * MESSAGES})

        per_topic = PER_TOPIC * MESSAGES
        expected = 5 * PER_TOPIC * per_topic + 15 * per_topic
        wait_until(lambda: len(deliveries) >= expected,
                   max(1.0, DEADLINE - (time.monotonic() - start)), f"{expected} deliveries",
                   interval=0.05)

        def drained() -> bool:
            with Admin(broker.web_url) as admin:
                for t in range(TOPICS):
                    stats = (admin.topics.get_partitioned_stats(_topic(t))
                             if _kind(t) is ConsumerType.Failover
                             else admin.topics.get_stats(_topic(t)))
                    for sub in stats["subscriptions"].values():
                        if sub["msgBacklog"] or sub["unackedMessages"]:
                            return False
            return True

        wait_until(drained, 30, "every backlog to be acknowledged", interval=0.1)
        with lock:
            got = list(deliveries)
        assert len(got) == expected, f"{len(got) - expected} extra deliveries"
        _check(got)
    finally:
        for client in clients:
            client.close()
        broker.kill()


def _check(got: list[Delivery]) -> None:
    by_sub: dict[str, list[Delivery]] = defaultdict(list)
    for d in got:
        by_sub[d.subscription].append(d)
        assert d.redelivery_count == 0, d
    for sub, items in by_sub.items():
        t = int(sub.split("-")[1])
        kind = _kind(t)
        producers = {f"p{k}" for k in range(TOPICS * PER_TOPIC) if k % TOPICS == t}
        wanted = Counter((p, i) for p in producers for i in range(MESSAGES))
        assert Counter((d.producer, d.index) for d in items) == wanted, sub

        # Order: per producer (Exclusive), per producer and partition (Failover),
        # per producer and key (Key_Shared), each as delivered to its consumer.
        if kind is ConsumerType.Shared:
            continue
        streams: dict[tuple, list[int]] = defaultdict(list)
        owners: dict[Any, set[str]] = defaultdict(set)
        for d in items:
            if kind is ConsumerType.Failover:
                streams[(d.producer, d.partition)].append(d.index)
                owners[d.partition].add(d.consumer)
            elif kind is ConsumerType.KeyShared:
                streams[(d.producer, d.key)].append(d.index)
                owners[d.key].add(d.consumer)
            else:
                streams[(d.producer,)].append(d.index)
                owners[None].add(d.consumer)
        for stream, indexes in streams.items():
            assert indexes == sorted(indexes), (sub, stream)
        for owner, consumers in owners.items():
            assert len(consumers) == 1, (sub, owner, consumers)
        if kind is ConsumerType.Failover:
            assert len(owners) == PARTITIONS
            assert len(set().union(*owners.values())) == PARTITIONS, "one partition each"
