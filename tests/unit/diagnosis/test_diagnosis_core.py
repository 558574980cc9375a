"""``pulsarlab.diagnose`` on the stats of a pulsarlab core: each diagnosis from a scenario
that produces it (sans-I/O, manual clock)."""

from __future__ import annotations

import pytest

from pulsarlab.broker import KeySharedMeta, KeySharedMetaMode, SubType
from pulsarlab.diagnosis import diagnose, exact_state

NS = "public/default"
T = "why"
FULL = f"persistent://{NS}/{T}"


def why(h, sub="s", **kwargs):
    return diagnose(h.service.topic_stats(T), sub, internal_stats=h.service.internal_stats(T),
                    topic=FULL, **kwargs)


def only(diagnosis, code):
    found = [f for f in diagnosis.findings if f.code == code]
    assert found, diagnosis
    return found[0]


def test_receiver_queue_full(make_harness):
    h = make_harness()
    c = h.subscribe(T, "s", "slow-app", SubType.Shared, permits=5)
    h.publish(T, 12)
    assert len(h.take(c)) == 5
    d = why(h)
    f = only(d, "receiver-queue-full")
    assert f.consumer == "slow-app" and "0 available permits" in f.text
    assert "5 messages delivered and unacked, backlog 12" in f.text
    assert f.tutorial.startswith("notebooks/08-")
    assert d.source == "stats + internal stats"


def test_consumer_unacked_limit(make_harness):
    h = make_harness(max_unacked_messages_per_consumer=4)
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=100)
    h.publish(T, 10)
    assert len(h.take(c)) == 4
    d = why(h, consumer="c")
    assert d.codes == ["consumer-unacked-limit"]
    assert "holds 4 unacked messages" in d.findings[0].text
    assert "maxUnackedMessagesPerConsumer" in d.findings[0].text


def test_subscription_unacked_limit(make_harness):
    h = make_harness(max_unacked_messages_per_subscription=8)
    h.subscribe(T, "s", "a", SubType.Shared, permits=1000)
    h.publish(T, 20)
    f = only(why(h), "subscription-unacked-limit")
    assert "holds 20 unacked messages and reached" in f.text and "half" in f.text


def test_key_shared_3_3_recently_joined_names_the_holder(make_harness):
    h = make_harness(pulsar_version="3.3")
    a = h.subscribe(T, "s", "old", SubType.Key_Shared, permits=100)
    first = h.publish(T, 20, key=None)
    for i in range(20):
        h.publish(T, 1, key=f"k{i}")
    held = h.take(a)  # old holds every message unacked
    assert len(held) == 40
    h.subscribe(T, "s", "new", SubType.Key_Shared, permits=100)
    stats = h.service.topic_stats(T)["subscriptions"]["s"]
    join = stats["consumersAfterMarkDeletePosition"]["new"]
    f = only(why(h), "recently-joined")
    assert f.consumer == "new" and f"position was {join}" in f.text
    md = h.service.internal_stats(T)["cursors"]["s"]["markDeletePosition"]
    assert f"(now {md})" in f.text and "old (40 unacked)" in f.text
    # With the core's exact state: the oldest unacked message and who holds it.
    core = exact_state(h.service, FULL, "s")
    d = why(h, core=core)
    assert d.source.endswith("the pulsarlab core's exact state")
    text = only(d, "recently-joined").text
    assert f"the oldest unacked message, {first[0][0]}:{first[0][1]}, is held by old" in text
    # Asking about the holder explains the same thing; once old acks, nothing is held.
    assert only(why(h, consumer="old"), "recently-joined").consumer == "new"
    h.ack(a, held)
    assert "recently-joined" not in why(h).codes


def _moved_key(h, a):
    """Publish one message on a key of ``a``, then add ``b`` until it takes that key."""
    d = h.service.topics[FULL].subscriptions["s"].dispatcher
    for i in range(200):
        key = f"key-{i}"
        if d.owner_of(d.selector.make_sticky_key_hash(key.encode())) is a:
            break
    h.publish(T, 1, key=key)
    assert h.take(a)
    for n in range(20):
        b = h.subscribe(T, "s", f"b{n}", SubType.Key_Shared, permits=100)
        if d.owner_of(d.selector.make_sticky_key_hash(key.encode())) is b:
            return key, b
    raise AssertionError("no consumer took the key")


def test_key_shared_4_0_draining_hashes(make_harness):
    h = make_harness(pulsar_version="4.0")
    a = h.subscribe(T, "s", "a", SubType.Key_Shared, permits=100)
    key, b = _moved_key(h, a)
    h.publish(T, 1, key=key)
    assert h.take(b) == []
    d = why(h, consumer=b.consumer_name)  # the blocked consumer asks: a is named
    f = only(d, "draining-hashes")
    assert f.consumer == "a" and "1 unacked message of 1 draining hash" in f.text
    assert f"before going to {b.consumer_name}" in f.text and "blocked dispatch" in f.text
    assert f.tutorial.startswith("notebooks/16-")


def test_failover_standby(make_harness):
    h = make_harness()
    h.subscribe(T, "s", "a", SubType.Failover, permits=10)
    h.subscribe(T, "s", "b", SubType.Failover, permits=10)
    h.publish(T, 3)
    stats = h.service.topic_stats(T)["subscriptions"]["s"]
    standby = next(c["consumerName"] for c in stats["consumers"]
                   if c["consumerName"] != stats["activeConsumerName"])
    d = why(h, consumer=standby)
    assert d.codes == ["failover-standby"]
    assert f"the active consumer is {stats['activeConsumerName']}" in d.findings[0].text


def test_no_consumer_for_a_sticky_range(make_harness):
    h = make_harness(pulsar_version="3.3")
    h.subscribe(T, "s", "half", SubType.Key_Shared, permits=100,
                key_shared_meta=KeySharedMeta(KeySharedMetaMode.STICKY, ((0, 32767),)))
    f = only(why(h), "no-consumer-for-range")
    assert "[32768, 65535]" in f.text


def test_ttl_expiry_with_the_policy(make_harness):
    h = make_harness()
    h.service.set_namespace_policy(NS, "message_ttl_in_seconds", 60)
    h.subscribe(T, "s", "c", SubType.Shared)  # never asks for messages
    h.publish(T, 3)
    h.advance(61_000)
    h.advance(5 * 60_000)
    f = only(why(h, policies={"message_ttl_in_seconds": 60}), "ttl-expiry")
    assert "message TTL (60 s) expired 3 messages" in f.text


@pytest.mark.parametrize("policy, effect", [
    ("producer_request_hold", "producers are held"),
    ("consumer_backlog_eviction", "oldest messages of the slowest subscription"),
])
def test_backlog_quota(make_harness, policy, effect):
    h = make_harness()
    quota = {"limitSize": 100, "policy": policy}
    h.service.set_namespace_policy(NS, "backlog_quota", quota)
    h.subscribe(T, "s", "c", SubType.Shared)
    h.publish(T, 3, payload=b"x" * 60)
    f = only(why(h, policies={"backlog_quota": quota}), "backlog-quota")
    assert "backlog quota of 100 bytes" in f.text and effect in f.text


def test_terminated_topic(make_harness):
    h = make_harness()
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=10)
    h.publish(T, 2)
    h.ack(c, h.take(c))
    at = h.service.terminate_topic(T)
    d = why(h)
    f = only(d, "terminated")
    assert f"terminated at {at[0]}:{at[1]}" in f.text and "reached the end" in f.text


def test_delayed_delivery_backlog(make_harness):
    h = make_harness()
    h.subscribe(T, "s", "c", SubType.Shared, permits=10)
    h.publish(T, 4, deliver_at=h.clock.now_ms() + 60_000)
    f = only(why(h), "delayed-delivery")
    assert "4 of the 4 backlog messages are delayed-delivery" in f.text


def test_no_consumer_no_subscription_and_nothing_blocking(make_harness):
    h = make_harness()
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=10)
    h.publish(T, 2)
    h.ack(c, h.take(c))
    assert why(h).codes == ["nothing-blocking"]
    assert why(h, sub="nope").codes == ["no-subscription"]
    h.close(c)
    h.publish(T, 3)
    assert "3 messages wait" in only(why(h), "no-consumer").text
    with pytest.raises(ValueError, match="no consumer 'ghost'"):
        h.subscribe(T, "s", "c2", SubType.Shared)
        why(h, consumer="ghost")


def test_exact_state_names_every_holder_of_older_messages(make_harness):
    h = make_harness(pulsar_version="3.3")
    a = h.subscribe(T, "s", "a", SubType.Key_Shared, permits=100)
    b = h.subscribe(T, "s", "b", SubType.Key_Shared, permits=100)
    for i in range(40):
        h.publish(T, 1, key=f"k{i}")
    assert h.take(a) and h.take(b)  # both hold older messages unacked
    h.subscribe(T, "s", "late", SubType.Key_Shared, permits=100)
    text = only(why(h, core=exact_state(h.service, FULL, "s")), "recently-joined").text
    assert "is held by a" in text or "is held by b" in text
    assert "also hold messages before" in text
    assert exact_state(h.service, FULL, "nope") == {"pendingAcks": {}}
