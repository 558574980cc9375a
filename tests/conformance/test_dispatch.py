"""Key_Shared, Failover, dead letters, delayed delivery and unload: real Pulsar vs pulsarlab."""

from __future__ import annotations

import time

import pulsar
import pytest

from .conftest import WAIT_MS, admin_path, drain, receive_n, values

KEYS = [f"key-{i}" for i in range(24)]


def _by_key(msgs) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for m in msgs:
        out.setdefault(m.partition_key(), []).append(m.data().decode())
    return out


def _key_shared(s, topic, name, **kw):
    return s.client.subscribe(topic, "ks", consumer_type=pulsar.ConsumerType.KeyShared,
                              consumer_name=name, **kw)


def _send_keys(s, topic, rounds=2, prefix=""):
    p = s.client.create_producer(topic)
    for r in range(rounds):
        for k in KEYS:
            p.send(f"{prefix}{k}/{r}".encode(), partition_key=k)


# KeySharedSubscriptionTest.testSendAndReceiveWithHashRangeAutoSplitStickyKeyConsumerSelector
# (consistent hashing: which named consumer owns which key, and per-key order)
def test_key_shared_key_ownership_and_order(compare) -> None:
    def scenario(s):
        t = s.topic("ksown")
        consumers = {n: _key_shared(s, t, n) for n in ("c1", "c2", "c3")}
        _send_keys(s, t)
        return {n: _by_key(drain(c)) for n, c in consumers.items()}

    compare(scenario)


# KeySharedSubscriptionTest.testOrderingKey... an ordering key wins over the partition key
def test_key_shared_ordering_key_routes_before_the_partition_key(compare) -> None:
    def scenario(s):
        t = s.topic("ksorder")
        consumers = {n: _key_shared(s, t, n) for n in ("c1", "c2", "c3")}
        p = s.client.create_producer(t)
        for i, k in enumerate(KEYS):
            p.send(f"m{i}".encode(), partition_key="same", ordering_key=k)
        return {n: values(drain(c)) for n, c in consumers.items()}

    compare(scenario)


# KeySharedSubscriptionTest.testRemoveFirstConsumer: a consumer leaves with unacked messages;
# its keys move to the others, who get those messages again
def test_key_shared_consumer_leaving_hands_over_its_keys(compare) -> None:
    def scenario(s):
        t = s.topic("ksleave")
        consumers = {n: _key_shared(s, t, n) for n in ("c1", "c2", "c3")}
        _send_keys(s, t, rounds=1)
        kept = {n: _by_key(drain(c, ack=(n != "c1"))) for n, c in consumers.items()}
        consumers.pop("c1").close()
        again = {n: _by_key(drain(c)) for n, c in consumers.items()}
        return kept, again

    compare(scenario)


# KeySharedSubscriptionTest.testContinueDispatchMessagesWhenMessageDelayed... a new consumer
# joining while earlier messages are unacked (3.3: recently joined consumers; 4.0: PIP-379
# draining hashes): what the newcomer gets before and after the old consumer acks
def test_key_shared_new_consumer_waits_for_unacked_keys(compare) -> None:
    def scenario(s):
        t = s.topic("ksjoin")
        c1 = _key_shared(s, t, "c1")
        _send_keys(s, t, rounds=1, prefix="a:")
        first = receive_n(c1, len(KEYS), ack=False)
        c2 = _key_shared(s, t, "c2")
        _send_keys(s, t, rounds=1, prefix="b:")
        c2_before = sorted(values(drain(c2)))
        c1_before = sorted(values(drain(c1, ack=False)))
        for m in first:
            c1.acknowledge(m)
        c2_after = sorted(values(drain(c2)))
        c1_after = sorted(values(drain(c1)))
        return c2_before, c1_before, c2_after, c1_after

    compare(scenario)


# KeySharedSubscriptionTest: consumer stats report each consumer's hash ranges
# (3.3 keyHashRanges strings, 4.0 keyHashRangeArrays) -- the same ranges on both
def test_key_shared_hash_ranges_in_stats(compare) -> None:
    def scenario(s):
        t = s.topic("ksranges")
        for n in ("c1", "c2", "c3"):
            _key_shared(s, t, n)
        stats = s.rest_ok("GET", f"{admin_path(t)}/stats")
        out = {}
        for c in stats["subscriptions"]["ks"]["consumers"]:
            out[c["consumerName"]] = {k: c.get(k) for k in ("keyHashRanges",
                                                           "keyHashRangeArrays") if k in c}
        return out

    compare(scenario)


def _first_message(consumers: dict):
    """(name, message) of the first consumer to receive anything (the active one)."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while time.monotonic() < deadline:
        for name, c in consumers.items():
            try:
                return name, c.receive(timeout_millis=100)
            except pulsar.Timeout:
                continue
    raise AssertionError("no Failover consumer received anything")


# FailoverSubscriptionTest / PersistentFailoverE2ETest: on a non-partitioned topic the
# active consumer is picked from the name-sorted list through a hash ring of the topic name
# (AbstractDispatcherSingleActiveConsumer.peekConsumerIndexFromHashRing)
def test_failover_active_consumer_gets_everything(compare) -> None:
    def scenario(s):
        t = s.topic("fo")
        cs = {n: s.client.subscribe(t, "fo", consumer_type=pulsar.ConsumerType.Failover,
                                    consumer_name=n) for n in ("b", "a", "c")}
        p = s.client.create_producer(t)
        for i in range(6):
            p.send(f"m{i}".encode())
        active, first = _first_message(cs)
        cs[active].acknowledge(first)
        return active, {n: values(drain(c)) for n, c in cs.items()}

    compare(scenario)


# PersistentFailoverE2ETest.testSimpleConsumerEventsWithoutPartition: the active one leaves,
# the next takes over and gets what was left unacked
def test_failover_next_consumer_takes_over(compare) -> None:
    def scenario(s):
        t = s.topic("fonext")
        cs = {n: s.client.subscribe(t, "fo", consumer_type=pulsar.ConsumerType.Failover,
                                    consumer_name=n) for n in ("a", "b")}
        p = s.client.create_producer(t)
        for i in range(6):
            p.send(f"m{i}".encode())
        active, first = _first_message(cs)
        got = [first, *receive_n(cs[active], 5, ack=False)]
        for m in got[:2]:
            cs[active].acknowledge(m)
        cs.pop(active).close()
        (other,) = cs.values()
        return [(m.data().decode(), m.redelivery_count()) for m in drain(other, 3000)]

    compare(scenario)


# PersistentFailoverE2ETest.testSimpleConsumerEventsWithPartition: partition i goes to the
# consumer at index i % n of the name-sorted list
def test_failover_partitions_spread_over_consumers(compare) -> None:
    def scenario(s):
        t = s.topic("fopart")
        s.rest_ok("PUT", f"{admin_path(t)}/partitions", 4)
        cs = {n: s.client.subscribe(t, "fo", consumer_type=pulsar.ConsumerType.Failover,
                                    consumer_name=n) for n in ("x", "y")}
        p = s.client.create_producer(t, message_routing_mode=pulsar.PartitionsRoutingMode
                                     .RoundRobinDistribution, batching_enabled=False)
        for i in range(8):
            p.send(f"m{i}".encode())
        out = {}
        for n, c in cs.items():
            first = c.receive(timeout_millis=WAIT_MS)
            c.acknowledge(first)
            out[n] = sorted({s.short(m.topic_name()) for m in [first, *drain(c)]})
        return out

    compare(scenario)


# PersistentFailoverE2ETest: the topic stats name the active consumer
def test_failover_active_consumer_in_stats(compare) -> None:
    def scenario(s):
        t = s.topic("fostats")
        cs = {n: s.client.subscribe(t, "fo", consumer_type=pulsar.ConsumerType.Failover,
                                    consumer_name=n) for n in ("q", "p")}
        p = s.client.create_producer(t)
        p.send(b"x")
        active, first = _first_message(cs)
        cs[active].acknowledge(first)
        stats = s.rest_ok("GET", f"{admin_path(t)}/stats")
        return stats["subscriptions"]["fo"]["activeConsumerName"]

    compare(scenario)


# DeadLetterTopicTest.testDeadLetterTopic (nacks up to maxRedeliverCount, then the DLQ)
@pytest.mark.parametrize("sub_type", ["Shared", "KeyShared"])
def test_dead_letter_topic_after_max_redeliveries(compare, sub_type) -> None:
    def scenario(s):
        t = s.topic("dlq")
        dlq = s.client.subscribe(f"{t}-s-DLQ", "dlq-reader")
        c = s.client.subscribe(
            t, "s", consumer_type=getattr(pulsar.ConsumerType, sub_type),
            negative_ack_redelivery_delay_ms=100,
            dead_letter_policy=pulsar.ConsumerDeadLetterPolicy(max_redeliver_count=2))
        p = s.client.create_producer(t)
        for i in range(3):
            p.send(f"m{i}".encode(), partition_key=f"k{i}")
        seen = []
        while True:
            try:
                m = c.receive(timeout_millis=2000)
            except pulsar.Timeout:
                break
            seen.append((m.data().decode(), m.redelivery_count()))
            c.negative_acknowledge(m)
        dead = drain(dlq, quiet_ms=2000)
        return (sorted(seen), sorted(values(dead)),
                sorted({k for m in dead for k in m.properties()}),
                sorted({m.partition_key() for m in dead}))

    compare(scenario)


# DelayedDeliveryTest.testDelayedDelivery: Shared delays, the undelayed message comes first
def test_delayed_delivery_on_shared(compare) -> None:
    def scenario(s):
        t = s.topic("delayed")
        c = s.client.subscribe(t, "s", consumer_type=pulsar.ConsumerType.Shared)
        p = s.client.create_producer(t)
        p.send(b"late", deliver_after=__import__("datetime").timedelta(seconds=2))
        p.send(b"now")
        first = c.receive(timeout_millis=WAIT_MS)
        second = c.receive(timeout_millis=WAIT_MS)
        return [first.data().decode(), second.data().decode()]

    compare(scenario)


# DelayedDeliveryTest.testDelayedDeliveryWithMultipleConcurrentReadEntries is out;
# DelayedDeliveryTest: Exclusive/Failover subscriptions ignore the delay
@pytest.mark.parametrize("sub_type", ["Exclusive", "Failover"])
def test_delayed_delivery_ignored_on_single_consumer_types(compare, sub_type) -> None:
    def scenario(s):
        t = s.topic("delayex")
        c = s.client.subscribe(t, "s", consumer_type=getattr(pulsar.ConsumerType, sub_type))
        p = s.client.create_producer(t)
        p.send(b"late", deliver_after=__import__("datetime").timedelta(seconds=30))
        p.send(b"now")
        return values(receive_n(c, 2))

    compare(scenario)


# DelayedDeliveryTest: a deliverAt in the past is delivered at once, in order
def test_delivery_time_in_the_past_is_immediate(compare) -> None:
    def scenario(s):
        t = s.topic("delaypast")
        c = s.client.subscribe(t, "s", consumer_type=pulsar.ConsumerType.Shared)
        p = s.client.create_producer(t)
        p.send(b"past", deliver_at=1000)
        p.send(b"now")
        return values(receive_n(c, 2))

    compare(scenario)


# TopicUnloadTest / PersistentTopicTest.testUnload... admin unload closes the topic: the
# consumer reconnects and gets its unacked messages again
def test_unload_redelivers_unacked_messages(compare) -> None:
    def scenario(s):
        t = s.topic("unload")
        c = s.client.subscribe(t, "s", consumer_type=pulsar.ConsumerType.Shared)
        p = s.client.create_producer(t)
        for i in range(3):
            p.send(f"m{i}".encode())
        receive_n(c, 3, ack=False)
        s.rest_ok("PUT", f"{admin_path(t)}/unload")
        return [(m.data().decode(), m.redelivery_count()) for m in drain(c, 3000)]

    compare(scenario)
