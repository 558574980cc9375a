"""A consumer's pending acks: the lowest one, found without a scan unless replays came in."""

from pulsarlab.broker import SubType
from pulsarlab.broker.consumer import ServerConsumer

T = "pending"


def test_lowest_pending_in_dispatch_order_and_after_a_replay():
    c = ServerConsumer(1, "c")
    assert c.lowest_pending() is None
    for entry in (3, 4, 5):
        c.add_pending((1, entry), 1, 0)
    assert c.lowest_pending() == (1, 3)
    c.remove_pending((1, 3))
    assert c.lowest_pending() == (1, 4)
    c.add_pending((1, 1), 1, 0)  # a replay goes back
    assert c.lowest_pending() == (1, 1)
    c.remove_pending((1, 1))
    assert c.lowest_pending() == (1, 4)
    for entry in (4, 5):
        c.remove_pending((1, entry))
    assert c.lowest_pending() is None
    c.add_pending((1, 9), 1, 0)  # emptied: in order again
    c.add_pending((1, 10), 1, 0)
    assert c.lowest_pending() == (1, 9)


def test_mark_delete_move_drops_replayed_pending_entries_below_it(harness):
    """B holds its own entries and, after A leaves, A's older ones: a skip-all by the
    broker moves the mark-delete past all of them and B owes nothing."""
    a = harness.subscribe(T, "s", "A", SubType.Shared, permits=3)
    b = harness.subscribe(T, "s", "B", SubType.Shared, permits=3)
    harness.publish(T, 6)
    got_b = harness.take(b)
    assert len(got_b) == 3
    harness.close(a)
    harness.flow(b, 3)
    assert len(harness.take(b)) == 3
    assert b.unacked_messages == 6
    assert b.lowest_pending() == min(b.pending_acks)
    harness.service.skip_all_messages(T, "s")
    harness.drain()
    assert b.pending_acks == {}
    assert b.unacked_messages == 0


def test_mark_delete_move_keeps_pending_entries_above_it(harness):
    c = harness.subscribe(T, "s", "c", SubType.Shared, permits=10)
    msgs = harness.publish(T, 5)
    harness.take(c)
    harness.service.skip_messages(T, "s", 2)
    harness.drain()
    assert sorted(c.pending_acks) == msgs[2:]
    assert c.lowest_pending() == msgs[2]


def test_lowest_pending_after_acks_behind_a_held_message_and_a_take_all():
    """One message held while thousands behind it are acknowledged: the lowest stays
    right, and the positions kept to find it stay bounded by those still pending."""
    c = ServerConsumer(1, "c")
    for entry in range(5000):
        c.add_pending((1, entry), 1, 0)
    for entry in range(1, 4990):
        c.remove_pending((1, entry))
        assert c.lowest_pending() == (1, 0)
    assert len(c._pending_order) <= 64 + 2 * len(c.pending_acks) + 1
    c.remove_pending((1, 0))
    assert c.lowest_pending() == (1, 4990)
    c.take_all_pending()
    assert c.lowest_pending() is None
    c.add_pending((2, 7), 1, 0)
    assert c.lowest_pending() == (2, 7)


def test_entries_added_together_count_once_each_and_keep_the_order():
    """A dispatch adds its entries in one call: an entry already owed is not counted
    again; a replay in the middle of the call makes the lowest a scan, still right."""
    c = ServerConsumer(1, "c")
    c.add_pendings([((1, e), b"", (2, 0)) for e in (3, 4, 5)])
    c.add_pendings([((1, 5), b"", (2, 0)), ((1, 6), b"", (1, 0))])
    assert (c.unacked_messages, c.lowest_pending()) == (7, (1, 3))
    c.add_pendings([((1, 7), b"", (1, 0)), ((1, 1), b"", (1, 0))])
    assert (c.unacked_messages, c.lowest_pending()) == (9, (1, 1))
    assert c.remove_pendings([(1, 1), (9, 9), (1, 3)]) == [(9, 9)]
    assert (c.unacked_messages, c.lowest_pending()) == (6, (1, 4))
