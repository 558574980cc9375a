"""Pulsar 4.0 Key_Shared (PIP-379 draining hashes), each rule pinned to the Java it follows."""

from dataclasses import dataclass

import pytest

from pulsarlab.broker import KeySharedMeta, KeySharedMode, SubType
from pulsarlab.broker.dispatchers.key_shared_draining import (
    KeySharedDrainingDispatcher,
    effective_look_ahead_limit,
)
from pulsarlab.broker.errors import SubscriptionTypeMismatch
from pulsarlab.broker.settings import BrokerSettings

T = "ks40"
FULL = f"persistent://public/default/{T}"


@dataclass(eq=False)
class _Name:
    """A consumer-shaped name for trying a join on a copy of the selector."""

    consumer_name: str


@pytest.fixture
def h(make_harness):
    """A core that behaves as Pulsar 4.0."""
    return make_harness(pulsar_version="4.0")


def _dispatcher(h) -> KeySharedDrainingDispatcher:
    return h.service.topics[FULL].subscriptions["s"].dispatcher


def _keys_of(h, consumer, n=1, exclude=()):
    d = _dispatcher(h)
    out = []
    for i in range(5000):
        key = f"key-{i}"
        if key in exclude:
            continue
        if d.owner_of(d.selector.make_sticky_key_hash(key.encode())) is consumer:
            out.append(key)
            if len(out) == n:
                return out
    raise AssertionError("no key found")


def _moved_key(h, a, b_name, **subscribe_kwargs):
    """A key of ``a`` with one message pending on ``a``, then ``b`` joins and takes it."""
    d = _dispatcher(h)
    for i in range(5000):
        key = f"key-{i}"
        if d.owner_of(d.selector.make_sticky_key_hash(key.encode())) is not a:
            continue
        # Which keys b will take depends only on the ring: try it on a copy of the names.
        probe = type(d.selector)()
        for c in d.selector.consumers:
            probe.add_consumer(c)
        probe.add_consumer(_Name(b_name))
        if probe.select(probe.make_sticky_key_hash(key.encode())) is not a:
            first = h.publish(T, 1, key=key)
            assert h.take(a) == first
            b = h.subscribe(T, "s", b_name, SubType.Key_Shared, permits=100, **subscribe_kwargs)
            return key, first[0], b
    raise AssertionError("no moving key found")


def test_pulsar_version_4_0_selects_the_pip379_dispatcher(make_harness):
    """``pulsar_version="4.0"`` routes Key_Shared to the PIP-379 dispatcher; 3.3 keeps the
    classic one (``subscriptionKeySharedUseClassicPersistentImplementation``)."""
    from pulsarlab.broker.dispatchers.key_shared import KeySharedDispatcher

    for version, kind in (("4.0", KeySharedDrainingDispatcher), ("3.3", KeySharedDispatcher)):
        h = make_harness(pulsar_version=version)
        h.subscribe(T, "s", "A", SubType.Key_Shared)
        assert type(_dispatcher(h)) is kind


def _sub_stats(h):
    return h.service.topic_stats(T)["subscriptions"]["s"]


def test_a_moved_key_waits_until_the_old_owner_acks(h):
    """``registerDrainingHashes`` + ``canDispatchEntry``: the new owner gets nothing of a key
    its old owner still has unacked; ``reduceRefCount`` releases it after the ack and the read
    comes ``keySharedUnblockingIntervalMs`` later (``RescheduleReadHandler``)."""
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=100)
    key, first, b = _moved_key(h, a, "B")
    second = h.publish(T, 1, key=key)
    assert h.take(b) == [] and h.take(a) == []
    d = _dispatcher(h)
    assert d.replay.positions() == second
    stats = _sub_stats(h)
    a_stats = next(c for c in stats["consumers"] if c["consumerName"] == "A")
    assert a_stats["drainingHashesCount"] == 1 and a_stats["drainingHashesUnackedMessages"] == 1
    assert a_stats["drainingHashes"][0]["unackMsgs"] == 1
    assert a_stats["drainingHashes"][0]["blockedAttempts"] >= 1
    assert stats["drainingHashesCount"] == 1
    h.ack(a, [first])
    assert h.take(b) == []  # not at once: after the unblocking interval
    h.advance(10)
    assert h.take(b) == second
    stats = _sub_stats(h)
    assert stats["drainingHashesCount"] == 0 and stats["drainingHashesClearedTotal"] == 1


def test_unblocking_interval_zero_reads_at_once(make_harness):
    """``keySharedUnblockingIntervalMs=0``: the released hash is read right after the ack."""
    h = make_harness(pulsar_version="4.0", key_shared_unblocking_interval_ms=0)
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=100)
    key, first, b = _moved_key(h, a, "B")
    second = h.publish(T, 1, key=key)
    h.ack(a, [first])
    assert h.take(b) == second


def test_keys_that_moved_without_pending_acks_flow_at_once(h):
    """No 3.x "recently joined" hold: only draining hashes wait (PIP-379 replaces
    ``recentlyJoinedConsumers``), so a new consumer gets its other keys immediately even
    while the old owner has unacked messages."""
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=100)
    key, _first, b = _moved_key(h, a, "B")
    other = _keys_of(h, b, 3, exclude={key})
    sent = [h.publish(T, 1, key=k)[0] for k in other]
    assert h.take(b) == sent
    assert _sub_stats(h)["consumersAfterMarkDeletePosition"] == {}


def test_hash_returning_to_its_draining_owner_is_not_blocked(h):
    """``shouldBlockStickyKeyHash``: the draining entry is dropped when the hash comes back."""
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=100)
    key, _first, b = _moved_key(h, a, "B")
    h.close(b)
    again = h.publish(T, 1, key=key)
    assert h.take(a) == again
    a_stats = _sub_stats(h)["consumers"][0]
    assert a_stats["drainingHashesCount"] == 0 and a_stats["drainingHashesClearedTotal"] == 1


def test_closing_the_draining_consumer_hands_its_messages_over_in_order(h):
    """``removeConsumer``: pending acks go to replay, the close releases the hash
    (``reduceRefCount(closing=true)``) and the new owner gets old then new, in order."""
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=100)
    key, first, b = _moved_key(h, a, "B")
    second = h.publish(T, 1, key=key)
    assert h.take(b) == []
    h.close(a)
    assert h.take(b) == [first, *second]


def test_redelivery_request_releases_the_hash(h):
    """``redeliverUnacknowledgedMessages`` removes pending acks, which lowers the refCount."""
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=100)
    key, first, b = _moved_key(h, a, "B")
    second = h.publish(T, 1, key=key)
    h.service.redeliver_unacknowledged(a.consumer_id, [first])
    h.drain()
    assert h.take(b) == [first, *second]


def test_sticky_mode_has_no_hand_off(h):
    """``drainingHashesRequired = AUTO_SPLIT && !allowOutOfOrderDelivery`` (PR #23275)."""
    meta_a = KeySharedMeta(KeySharedMode.STICKY, ((0, 32767),))
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=100, key_shared_meta=meta_a)
    d = _dispatcher(h)
    assert not d.draining_hashes_required
    meta_b = KeySharedMeta(KeySharedMode.STICKY, ((32768, 65535),))
    b = h.subscribe(T, "s", "B", SubType.Key_Shared, permits=100, key_shared_meta=meta_b)
    keys_b = _keys_of(h, b, 2)
    got = [h.publish(T, 1, key=k)[0] for k in keys_b]
    assert h.take(b) == got and h.take(a) == []


def test_allow_out_of_order_delivery_turns_draining_off(h):
    """Out-of-order subscriptions keep no draining hashes; the moved key flows at once."""
    meta = KeySharedMeta(allow_out_of_order_delivery=True)
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=100, key_shared_meta=meta)
    key, _first, b = _moved_key(h, a, "B", key_shared_meta=meta)
    second = h.publish(T, 1, key=key)
    assert h.take(b) == second
    assert _sub_stats(h)["allowOutOfOrderDelivery"] is True


def test_a_consumer_with_the_other_policy_is_refused(h):
    """``checkForConsumerCompatibilityErrorWithDispatcher``: one policy per subscription."""
    h.subscribe(T, "s", "A", SubType.Key_Shared, permits=100)
    meta = KeySharedMeta(allow_out_of_order_delivery=True)
    with pytest.raises(SubscriptionTypeMismatch, match="does not allow out of order delivery"):
        h.subscribe(T, "s", "B", SubType.Key_Shared, key_shared_meta=meta)
    sticky = KeySharedMeta(KeySharedMode.STICKY, ((0, 10),))
    with pytest.raises(SubscriptionTypeMismatch, match="key_shared mode of 'AUTO_SPLIT'"):
        h.subscribe(T, "s", "C", SubType.Key_Shared, key_shared_meta=sticky)
    assert [c.consumer_name for c in _dispatcher(h).consumers] == ["A"]


def test_key_less_messages_spread_over_consumers(h):
    """``Commands.resolveStickyKey``: no key -> ``producerName-sequenceId`` (3.3: NONE_KEY)."""
    consumers = [h.subscribe(T, "s", f"C{i}", SubType.Key_Shared, permits=1000) for i in range(4)]
    for seq in range(40):
        h.publish(T, 1, sequence_id=seq)
    counts = [len(h.take(c)) for c in consumers]
    assert sum(counts) == 40 and sum(1 for n in counts if n) >= 3


def test_look_ahead_stops_at_the_replay_limit(make_harness):
    """``getEffectiveLookAheadLimit`` / ``isNormalReadAllowed``: entries for a consumer
    without permits pile up in replay only up to the limit; then reads stop."""
    h = make_harness(
        pulsar_version="4.0", key_shared_look_ahead_msg_in_replay_threshold_per_consumer=3
    )
    a = h.subscribe(T, "s", "A", SubType.Key_Shared)
    b = h.subscribe(T, "s", "B", SubType.Key_Shared, permits=100)
    d = _dispatcher(h)
    assert d.look_ahead_limit() == 6
    key_a, key_b = _keys_of(h, a)[0], _keys_of(h, b)[0]
    stuck = [h.publish(T, 1, key=key_a)[0] for _ in range(8)]
    late_b = h.publish(T, 1, key=key_b)
    assert d.replay.positions() == stuck[:6]
    assert h.take(b) == []  # the read that would reach it is not allowed
    h.flow(a, 100)
    assert h.take(a) == stuck
    assert h.take(b) == late_b


def test_effective_look_ahead_limit_formula():
    """``getEffectiveLookAheadLimit``: min(per consumer x consumers, per subscription), else
    the max-unacked limits."""
    s = BrokerSettings()
    assert effective_look_ahead_limit(s, 3) == 6000
    assert effective_look_ahead_limit(s, 20) == 20000
    s = BrokerSettings.from_kwargs(
        key_shared_look_ahead_msg_in_replay_threshold_per_consumer=0,
        key_shared_look_ahead_msg_in_replay_threshold_per_subscription=0,
    )
    assert effective_look_ahead_limit(s, 2) == min(200_000, 2 * 50_000)


def test_pending_ack_race_guard(h):
    """``handleAddingPendingAck``: an entry whose hash drains on another consumer is put in
    replay instead of becoming a pending ack."""
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=100)
    b = h.subscribe(T, "s", "B", SubType.Key_Shared, permits=100)
    d = _dispatcher(h)
    key = _keys_of(h, b)[0]
    slot = d.selector.make_sticky_key_hash(key.encode())
    d.draining_hashes.add_entry(a, slot)
    position = (1, 99)
    header = type("H", (), {"sticky_key_hash": slot})()
    assert d._handle_adding_pending_ack(b, (position, b"", header)) is False
    assert position in d.replay
    assert d._handle_adding_pending_ack(a, ((1, 98), b"", header)) is True


def test_stats_use_4_0_range_arrays(h):
    """``PersistentSubscription.getStatsAsync``: PIP-379 dispatchers report
    ``keyHashRangeArrays`` (``[start, end]`` pairs), not 3.x range strings."""
    h.subscribe(T, "s", "A", SubType.Key_Shared, permits=1)
    consumer = _sub_stats(h)["consumers"][0]
    assert consumer["keyHashRangeArrays"] == [[1, 65535]]
    assert "keyHashRanges" not in consumer
    assert consumer["drainingHashes"] == []


def test_a_cursor_reset_drops_the_draining_hashes(h):
    """A reset drops every pending ack (Pulsar disconnects the consumers), so no hash may
    stay draining and block the key forever."""
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=100)
    _key, first, b = _moved_key(h, a, "B")
    assert len(_dispatcher(h).draining_hashes) == 1
    h.service.topics[FULL].subscriptions["s"].reset_cursor(first)
    h.drain()
    assert len(_dispatcher(h).draining_hashes) == 0
    assert h.take(b) == [first]


def test_an_ack_without_released_hashes_dispatches_at_once(make_harness):
    """Only a released draining hash waits for the scheduled read; an ack that unblocks a
    consumer at its unacked limit lets it receive at once (``Consumer.messageAcked`` flows
    the permits)."""
    h = make_harness(pulsar_version="4.0", max_unacked_messages_per_consumer=2)
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=10)
    sent = h.publish(T, 4, key="k")
    assert h.take(a) == sent[:2]
    h.ack(a, sent[:2])
    assert h.take(a) == sent[2:]
