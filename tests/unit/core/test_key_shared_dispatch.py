"""R-KEYSHARED dispatch: keys stick to consumers, and the 3.x recently-joined rule."""

import pytest

from pulsarlab.broker import KeySharedMeta, KeySharedMetaMode, SubType
from pulsarlab.broker.errors import ConsumerAssignError
from pulsarlab.broker.selectors import sticky_key_hash

T = "ks"
FULL = f"persistent://public/default/{T}"


def _sub(h):
    return h.service.topics[FULL].subscriptions["s"]


def _owner_keys(h, consumer, n=3):
    selector = _sub(h).dispatcher.selector
    keys = [f"key-{i}" for i in range(500)]
    return [k for k in keys if selector.select(sticky_key_hash(k.encode())) is consumer][:n]


def test_each_key_goes_to_one_consumer(harness):
    h = harness
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=1000)
    b = h.subscribe(T, "s", "B", SubType.Key_Shared, permits=1000)
    for i in range(50):
        h.publish(T, 2, key=f"k{i % 10}")
    got_a, got_b = set(h.take(a)), set(h.take(b))
    assert len(got_a) + len(got_b) == 100 and not got_a & got_b
    assert got_a and got_b


def test_key_less_messages_all_go_to_one_consumer(harness):
    h = harness
    consumers = [h.subscribe(T, "s", f"C{i}", SubType.Key_Shared, permits=1000) for i in range(4)]
    h.publish(T, 20)
    counts = sorted(len(h.take(c)) for c in consumers)
    assert counts == [0, 0, 0, 20]


def test_stuck_consumer_blocks_newly_joined_one_until_mark_delete_passes(harness):
    h = harness
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=1000)
    old = h.publish(T, 5, key="warmup")
    assert h.take(a) == old
    b = h.subscribe(T, "s", "B", SubType.Key_Shared, permits=1000)
    stats = h.service.topic_stats(T)["subscriptions"]["s"]
    join_mark = stats["consumersAfterMarkDeletePosition"]["B"]
    assert join_mark == f"{old[-1][0]}:{old[-1][1] + 1}"
    b_keys = _owner_keys(h, b)
    new = [h.publish(T, 1, key=k)[0] for k in b_keys]
    assert h.take(b) == []  # held back: A has not acked what came before B joined
    # The held entries wait in replay: none may be replayed to B yet (3.3's
    # filterOutEntriesWillBeDiscarded), and A, not recently joined and with permits, still
    # needs normal reads (hasConsumersNeededNormalRead), so the later ones are read too.
    assert _sub(h).dispatcher.replay.positions() == new
    h.ack(a, old[:-1])
    assert h.take(b) == []
    h.ack(a, old[-1:])  # mark-delete reaches the join mark: B is released
    assert h.take(b) == new
    assert h.service.topic_stats(T)["subscriptions"]["s"]["consumersAfterMarkDeletePosition"] == {}


def test_allow_out_of_order_delivery_turns_the_rule_off(harness):
    h = harness
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=1000)
    h.publish(T, 5, key="warmup")
    h.take(a)
    meta = KeySharedMeta(allow_out_of_order_delivery=True)
    b = h.subscribe(T, "s", "B", SubType.Key_Shared, permits=1000, key_shared_meta=meta)
    new = [h.publish(T, 1, key=k)[0] for k in _owner_keys(h, b)]
    assert h.take(b) == new
    assert h.service.topic_stats(T)["subscriptions"]["s"]["consumersAfterMarkDeletePosition"] == {}


def test_join_mark_not_recorded_when_nothing_is_outstanding(harness):
    h = harness
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=1000)
    msgs = h.publish(T, 3, key="x")
    h.take(a)
    h.ack(a, msgs)
    h.subscribe(T, "s", "B", SubType.Key_Shared, permits=1000)
    assert h.service.topic_stats(T)["subscriptions"]["s"]["consumersAfterMarkDeletePosition"] == {}


def test_redelivered_messages_follow_the_key_to_its_current_owner(make_harness):
    h = make_harness(key_shared_use_consistent_hashing=False)
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=1000)
    msgs = [h.publish(T, 1, key=f"k{i}")[0] for i in range(20)]
    assert h.take(a) == msgs
    b = h.subscribe(T, "s", "B", SubType.Key_Shared, permits=1000)
    h.close(a)
    # A left: everything it held goes to B, which now owns every key.
    assert sorted(h.take(b)) == msgs


def test_sticky_ranges_and_conflicts(harness):
    h = harness
    c1 = h.subscribe(
        T, "s", "C1", SubType.Key_Shared, permits=100,
        key_shared_meta=KeySharedMeta(KeySharedMetaMode.STICKY, ((0, 16383), (32768, 49151))),
    )
    h.subscribe(
        T, "s", "C2", SubType.Key_Shared, permits=100,
        key_shared_meta=KeySharedMeta(KeySharedMetaMode.STICKY, ((16384, 32767), (49152, 65535))),
    )
    (m,) = h.publish(T, 1, key="Order-3459134")  # slot 6067 -> C1
    assert h.take(c1) == [m]
    # HashRangeExclusiveStickyKeyConsumerSelector.internalAddConsumer: "Range conflict with
    # consumer " + Consumer.toString()
    with pytest.raises(ConsumerAssignError) as info:
        h.subscribe(
            T, "s", "C3", SubType.Key_Shared,
            key_shared_meta=KeySharedMeta(KeySharedMetaMode.STICKY, ((100, 200),)),
        )
    assert str(info.value) == (
        "Range conflict with consumer Consumer{subscription=PersistentSubscription{"
        f"topic=persistent://public/default/{T}, name=s}}, consumerId={c1.consumer_id}, "
        "consumerName=C1}"
    )
    assert [c.consumer_name for c in _sub(h).consumers] == ["C1", "C2"]
    stats = h.service.topic_stats(T)["subscriptions"]["s"]["consumers"]
    assert stats[0]["keyHashRanges"] == ["[0, 16383]", "[32768, 49151]"]


def test_mixing_modes_is_refused(harness):
    h = harness
    h.subscribe(T, "s", "A", SubType.Key_Shared)
    with pytest.raises(ConsumerAssignError, match="AUTO_SPLIT mode"):
        h.subscribe(
            T, "s", "B", SubType.Key_Shared,
            key_shared_meta=KeySharedMeta(KeySharedMetaMode.STICKY, ((0, 10),)),
        )


def test_auto_split_ranges_in_stats(make_harness):
    h = make_harness(key_shared_use_consistent_hashing=False)
    for name in ("C1", "C2", "C3", "C4"):
        h.subscribe(T, "s", name, SubType.Key_Shared)
    stats = h.service.topic_stats(T)["subscriptions"]["s"]["consumers"]
    ranges = {c["consumerName"]: c["keyHashRanges"] for c in stats}
    assert ranges == {
        "C3": ["[0, 16384]"],
        "C2": ["[16385, 32768]"],
        "C4": ["[32769, 49152]"],
        "C1": ["[49153, 65536]"],
    }


def test_keys_follow_the_selector_after_every_membership_change(harness):
    # The dispatcher remembers select() per key hash; a join or a leave must reset that.
    h = harness
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=1000)
    keys = [f"key-{i}" for i in range(40)]
    first = [h.publish(T, 1, key=k)[0] for k in keys]
    assert h.take(a) == first
    h.ack(a, first)
    b = h.subscribe(T, "s", "B", SubType.Key_Shared, permits=1000)
    selector = _sub(h).dispatcher.selector
    b_keys = {k for k in keys if selector.select(sticky_key_hash(k.encode())) is b}
    assert b_keys and len(b_keys) < len(keys)
    second = {k: h.publish(T, 1, key=k)[0] for k in keys}
    assert set(h.take(b)) == {second[k] for k in b_keys}
    assert set(h.take(a)) == {second[k] for k in keys if k not in b_keys}
    h.ack(a, [second[k] for k in keys if k not in b_keys])
    h.ack(b, [second[k] for k in b_keys])
    h.close(b)
    third = [h.publish(T, 1, key=k)[0] for k in keys]
    assert h.take(a) == third


def test_redelivery_goes_out_at_once_after_a_blocked_replay_is_acked(harness):
    # A's key waits in replay while A has no permits; B reads past it. Acks with nothing
    # new to read take the dispatcher's shortcut; a replay that appears later must still
    # go out on the next dispatch, not wait for new entries.
    h = harness
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=0)
    b = h.subscribe(T, "s", "B", SubType.Key_Shared, permits=10)
    held = h.publish(T, 1, key=_owner_keys(h, a, 1)[0])
    mine = h.publish(T, 1, key=_owner_keys(h, b, 1)[0])
    assert h.take(b) == mine
    assert _sub(h).dispatcher.replay.positions() == held
    h.ack(b, held)
    assert _sub(h).dispatcher.replay.positions() == []
    h.service.redeliver_unacknowledged(b.consumer_id, mine)
    h.drain()
    assert h.take_full(b) == [(mine[0], 1, None)]
    h.flow(a, 5)
    assert h.take(a) == []  # acked while waiting: never delivered


def test_entries_since_first_not_acked_counts_the_read_position(harness):
    """``ManagedCursorImpl.getNumberOfEntriesSinceFirstNotAckedMessage`` counts
    ``(markDelete, readPosition]`` with ``ManagedLedgerImpl.getNumberOfEntries``' position
    arithmetic, the read position included: one delivered, unacked message counts 2, so
    ``PersistentStickyKeyDispatcherMultipleConsumers.addConsumer`` (``> 1``) records a
    consumer joining now as recently joined."""
    a = harness.subscribe(T, "s", "A", SubType.Key_Shared, permits=10)
    (m,) = harness.publish(T, 1, key="k")
    assert harness.take(a) == [m]
    cursor = harness.service.internal_stats(T)["cursors"]["s"]
    assert cursor["numberOfEntriesSinceFirstNotAckedMessage"] == 2
    harness.subscribe(T, "s", "B", SubType.Key_Shared, permits=10)
    stats = harness.service.topic_stats(T)["subscriptions"]["s"]
    mark = f"{m[0]}:{m[1] + 1}"
    assert stats["consumersAfterMarkDeletePosition"] == {"B": mark}


def test_entries_since_first_not_acked_across_ledgers(make_harness):
    """Across ledgers ``getNumberOfEntries`` adds the read position's entry id + 1, the
    rest of the mark-delete's ledger and every ledger in between."""
    harness = make_harness(managed_ledger_max_entries_per_ledger=2,
                           managed_ledger_min_ledger_rollover_time_minutes=0)
    a = harness.subscribe(T, "s", "A", SubType.Key_Shared, permits=10)
    msgs = [p for _ in range(5) for p in harness.publish(T, 1, key="k")]
    assert harness.take(a) == msgs
    ledgers = sorted({p[0] for p in msgs})
    assert len(ledgers) == 3  # 2 + 2 + 1 entries
    cursor = harness.service.internal_stats(T)["cursors"]["s"]
    read = cursor["readPosition"]
    assert read == f"{ledgers[2]}:1"
    assert cursor["numberOfEntriesSinceFirstNotAckedMessage"] == (1 + 1) + 2 + 2
    harness.ack(a, msgs[:3])  # mark-delete in the second ledger, entry 0
    cursor = harness.service.internal_stats(T)["cursors"]["s"]
    assert cursor["numberOfEntriesSinceFirstNotAckedMessage"] == (1 + 1) + (2 - 1)


@pytest.mark.parametrize("version", ["3.3", "3.3.2", "3.3.1", "3.3.0"])
def test_key_hash_ranges_in_stats_look_like_the_versions(make_harness, version):
    """``PersistentSubscription.getStats`` prints ``selector.getConsumerKeyHashRanges()`` with
    ``Range.toString``; which ``ConsistentHashingStickyKeyConsumerSelector`` depends on the
    release: 3.3.2+ reports one range per point plus the wrap range ``[last + 1,
    2147483646]`` on the first point's consumer; 3.3.0/3.3.1 one range per point, no wrap."""
    from pulsarlab.broker.selectors import (
        consumer_point_hash,
        consumer_point_hash_with_name_index,
    )

    harness = make_harness(pulsar_version=version)
    for name in ("C1", "C2"):
        harness.subscribe(T, "s", name, SubType.Key_Shared, permits=10)
    stats = harness.service.topic_stats(T)["subscriptions"]["s"]["consumers"]
    ranges = {c["consumerName"]: c["keyHashRanges"] for c in stats}
    replacing = version not in ("3.3.1", "3.3.0")
    points = {
        name: sorted(
            consumer_point_hash_with_name_index(name, 0, i) if replacing
            else consumer_point_hash(name, i)
            for i in range(100)
        )
        for name in ("C1", "C2")
    }
    ring = sorted((p, n) for n, ps in points.items() for p in ps)
    expected: dict[str, list[str]] = {"C1": [], "C2": []}
    start = 0
    for point, name in ring:
        expected[name].append(f"[{start}, {point}]")
        start = point + 1
    if replacing:
        expected[ring[0][1]].append(f"[{ring[-1][0] + 1}, 2147483646]")
    assert ranges == expected


@pytest.mark.parametrize(("version", "gap_owner"), [("3.3", None), ("3.3.8", "C1")])
def test_sticky_gap_by_version(make_harness, version, gap_owner):
    """3.3.0–3.3.8's ``HashRangeExclusiveStickyKeyConsumerSelector.select`` returned the
    consumer when ``floorEntry`` and ``ceilingEntry`` agreed, so C1 also got the gap between
    its own ranges; 3.3.9+ (PR #24730) selects by ``Range.contains`` and nobody gets it."""
    from pulsarlab.broker.selectors import slot, sticky_key_hash

    h = make_harness(pulsar_version=version)
    c1 = h.subscribe(
        T, "s", "C1", SubType.Key_Shared, permits=100,
        key_shared_meta=KeySharedMeta(KeySharedMetaMode.STICKY, ((0, 16383), (32768, 49151))),
    )
    h.subscribe(
        T, "s", "C2", SubType.Key_Shared, permits=100,
        key_shared_meta=KeySharedMeta(KeySharedMetaMode.STICKY, ((49152, 65535),)),
    )
    key = next(k for k in (f"k{i}" for i in range(1000))
               if 16384 <= slot(sticky_key_hash(k.encode())) <= 32767)
    (m,) = h.publish(T, 1, key=key)
    assert h.take(c1) == ([m] if gap_owner == "C1" else [])
    assert h.service.topic_stats(T)["subscriptions"]["s"]["msgInReplay"] == (
        0 if gap_owner else 1
    )


def test_other_consumers_keep_receiving_while_a_newcomer_is_held_back(harness):
    # Pulsar 3.3: replay entries only the recently joined consumer could take are filtered
    # out of the replay read and a normal read serves the others (PR #7105); found by
    # tests/conformance (test_key_shared_new_consumer_waits_for_unacked_keys).
    h = harness
    a = h.subscribe(T, "s", "A", SubType.Key_Shared, permits=1000)
    old = h.publish(T, 5, key="warmup")
    assert h.take(a) == old
    b = h.subscribe(T, "s", "B", SubType.Key_Shared, permits=1000)
    b_keys, a_keys = _owner_keys(h, b), _owner_keys(h, a)
    sent_b, sent_a = [], []
    for kb, ka in zip(b_keys, a_keys, strict=False):
        sent_b += h.publish(T, 1, key=kb)
        sent_a += h.publish(T, 1, key=ka)
    assert h.take(b) == []
    assert h.take(a) == sent_a
    h.ack(a, old)
    assert h.take(b) == sent_b
