"""R-ACK: individual, cumulative and batch-index acks; the cursor and its holes."""

import pytest

from pulsarlab.broker import SubType
from pulsarlab.broker.errors import InvalidArgument
from pulsarlab.broker.events import EventType

T = "acks"


def test_spec_example_only_4_acked_then_both_consumers_crash(harness):
    """Messages 1..6, B acks 4 alone; after both crash only 1,2,3,5,6 come back."""
    a = harness.subscribe(T, "s", "A", SubType.Shared, permits=3)
    b = harness.subscribe(T, "s", "B", SubType.Shared, permits=3)
    msgs = harness.publish(T, 6)
    got_a, got_b = harness.take(a), harness.take(b)
    assert sorted(got_a + got_b) == msgs
    fourth = msgs[3]
    owner = b if fourth in got_b else a
    harness.ack(owner, [fourth])
    cursor = harness.service.topics[f"persistent://public/default/{T}"].subscriptions["s"].cursor
    assert cursor.mark_delete_position == (msgs[0][0], msgs[0][1] - 1)
    (l3, e3), (l4, e4) = msgs[2], msgs[3]
    assert str(cursor.individually_deleted) == f"[({l3}:{e3}..{l4}:{e4}]]"
    harness.close(a)
    harness.close(b)
    c = harness.subscribe(T, "s", "C", SubType.Shared, permits=100)
    assert sorted(harness.take(c)) == [m for m in msgs if m != fourth]


def test_mark_delete_advances_over_contiguous_acks(harness):
    c = harness.subscribe(T, "s", "c", SubType.Shared, permits=10)
    msgs = harness.publish(T, 5)
    harness.take(c)
    harness.ack(c, [msgs[1], msgs[2]])
    cursor = harness.service.topics[f"persistent://public/default/{T}"].subscriptions["s"].cursor
    assert cursor.mark_delete_position < msgs[0]
    harness.ack(c, [msgs[0]])
    assert cursor.mark_delete_position == msgs[2]
    assert len(cursor.individually_deleted) == 0
    assert cursor.number_of_entries_in_backlog() == 2
    assert harness.events_of(EventType.CURSOR_MOVED)


def test_acked_messages_never_come_back(harness):
    c = harness.subscribe(T, "s", "c", SubType.Shared, permits=10)
    msgs = harness.publish(T, 4)
    harness.take(c)
    harness.ack(c, [msgs[0], msgs[2]])
    harness.service.redeliver_unacknowledged(c.consumer_id)
    harness.drain()
    assert sorted(harness.take(c)) == [msgs[1], msgs[3]]


def test_cumulative_ack_on_exclusive_moves_mark_delete(harness):
    c = harness.subscribe(T, "s", "c", SubType.Exclusive, permits=10)
    msgs = harness.publish(T, 5)
    harness.take(c)
    harness.ack(c, [msgs[3]], cumulative=True)
    stats = harness.service.internal_stats(T)
    assert stats["cursors"]["s"]["markDeletePosition"] == f"{msgs[3][0]}:{msgs[3][1]}"
    assert harness.service.topic_stats(T)["subscriptions"]["s"]["msgBacklog"] == 1


@pytest.mark.parametrize("sub_type", [SubType.Shared, SubType.Key_Shared])
def test_cumulative_ack_ignored_on_shared_types(harness, sub_type, caplog):
    """``Consumer.messageAcked``: a cumulative ack on an individual-ack subscription is
    logged ("Received cumulative ack on shared subscription, ignoring") and ignored; the
    broker answers no error."""
    c = harness.subscribe(T, "s", "c", sub_type, permits=10)
    msgs = harness.publish(T, 3)
    harness.take(c)
    with caplog.at_level("WARNING", logger="pulsarlab.broker.subscription"):
        harness.ack(c, [msgs[2]], cumulative=True)
    assert "Received cumulative ack" in caplog.text and "ignoring" in caplog.text
    cursor = harness.service.topics[f"persistent://public/default/{T}"].subscriptions["s"].cursor
    assert cursor.mark_delete_position < msgs[0]
    assert len(c.pending_acks) == 3
    assert not harness.events_of(EventType.ACKED)


def test_ack_beyond_end_is_a_clear_error(harness):
    c = harness.subscribe(T, "s", "c", SubType.Shared, permits=10)
    msgs = harness.publish(T, 1)
    with pytest.raises(InvalidArgument, match="beyond the last entry"):
        harness.ack(c, [(999, 0)])
    # Several beyond the end: the error names the first of them, and nothing is acked.
    with pytest.raises(InvalidArgument, match="ack for 998:3 is beyond"):
        harness.ack(c, [msgs[0], (998, 3), (999, 1)])
    assert harness.service.topic_stats(T)["subscriptions"]["s"]["msgBacklog"] == 1


def test_batch_index_ack_needs_both_flags_else_batch_comes_back_whole(make_harness):
    h = make_harness()  # broker flag off
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=100, batch_index_ack_enabled=True)
    (pos,) = h.publish(T, 1, batch=4)
    h.take(c)
    # The client acks indexes 0 and 1: remaining bits 0b1100. Broker flag off => whole ack.
    h.ack(c, [pos], ack_sets={pos: (0b1100, 4)})
    cursor = h.service.topics[f"persistent://public/default/{T}"].subscriptions["s"].cursor
    assert cursor.is_deleted(pos)


def test_batch_index_ack_partial_batch_redelivered_with_ack_set(make_harness):
    h = make_harness(acknowledgment_at_batch_index_level_enabled=True)
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=100, batch_index_ack_enabled=True)
    (pos,) = h.publish(T, 1, batch=4)
    h.take(c)
    h.ack(c, [pos], ack_sets={pos: (0b1100, 4)})
    cursor = h.service.topics[f"persistent://public/default/{T}"].subscriptions["s"].cursor
    assert not cursor.is_deleted(pos)
    assert cursor.batch_deleted[pos] == 0b1100
    h.service.redeliver_unacknowledged(c.consumer_id)
    h.drain()
    [(position, count, ack_set)] = h.take_full(c)
    assert position == pos and ack_set == 0b1100 and count == 1
    h.ack(c, [pos], ack_sets={pos: (0b0000, 4)})
    assert cursor.is_deleted(pos)


def test_partly_acked_batch_without_batch_index_ack_comes_back_whole(make_harness):
    h = make_harness(acknowledgment_at_batch_index_level_enabled=True)
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=100)  # consumer flag off
    (pos,) = h.publish(T, 1, batch=4)
    h.take(c)
    h.service.redeliver_unacknowledged(c.consumer_id)
    h.drain()
    [(position, _count, ack_set)] = h.take_full(c)
    assert position == pos and ack_set is None


def test_cursor_state_round_trip(harness):
    from pulsarlab.broker.cursor import ManagedCursor

    c = harness.subscribe(T, "s", "c", SubType.Shared, permits=10)
    msgs = harness.publish(T, 6)
    harness.take(c)
    harness.ack(c, [msgs[0], msgs[3], msgs[4]])
    sub = harness.service.topics[f"persistent://public/default/{T}"].subscriptions["s"]
    copy = ManagedCursor.from_state("s", sub.topic.ledger, sub.cursor.state())
    assert copy.mark_delete_position == sub.cursor.mark_delete_position
    assert list(copy.individually_deleted) == list(sub.cursor.individually_deleted)
    assert copy.read_position == msgs[1]


def test_backlog_counts_entries_not_acked(harness):
    c = harness.subscribe(T, "s", "c", SubType.Shared, permits=10)
    msgs = harness.publish(T, 5)
    harness.take(c)
    harness.ack(c, [msgs[1], msgs[3]])
    assert harness.service.topic_stats(T)["subscriptions"]["s"]["msgBacklog"] == 3


def test_delete_in_runs_leaves_the_ranges_one_by_one_acks_leave():
    # The cursor merges a run of consecutive entries into one range; whatever the order,
    # gaps, repeats and ledger boundaries, the acked set must be the one-by-one result.
    import random

    from pulsarlab.broker.cursor import ManagedCursor
    from pulsarlab.broker.storage import MemoryStorage
    from pulsarlab.broker.storage.base import LedgerConfig

    rng = random.Random(7)
    for _ in range(200):
        ledger = MemoryStorage().open_ledger("l", LedgerConfig(max_entries_per_ledger=7), 0)
        positions = []
        for _ in range(40):
            positions.append(ledger.add_entry(b"e", 0))
            ledger.sync()
        start = ledger.previous_position(positions[0])
        batched = ManagedCursor("a", ledger, start)
        single = ManagedCursor("b", ledger, start)
        acked: set = set()
        for _ in range(6):
            k = rng.randrange(len(positions))
            acks = positions[k:k + rng.randrange(1, 12)] + rng.sample(positions, 3)
            if rng.random() < 0.5:
                acks.sort()
            batched.delete(acks)
            for p in acks:
                single.delete([p])
            acked.update(acks)
            assert all(batched.is_deleted(p) == (p in acked) for p in positions)
            assert batched.mark_delete_position == single.mark_delete_position
            assert str(batched.individually_deleted) == str(single.individually_deleted)
            assert all(batched.is_deleted(p) == single.is_deleted(p) for p in positions)
