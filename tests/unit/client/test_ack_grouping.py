"""Ack grouping: timing thresholds, cumulative high-water mark, batch and batch-index acks."""

from __future__ import annotations

from pulsarlab.broker import MessageId
from pulsarlab.broker.client.ack_grouping import AckGroupingTracker


def mid(entry: int, index: int = -1, size: int = 0, ledger: int = 1) -> MessageId:
    return MessageId(-1, ledger, entry, index, size)


def test_individual_acks_wait_for_the_group():
    t = AckGroupingTracker(group_time_ms=100, max_group_size=3)
    assert t.add_individual(mid(1)) is False
    assert t.add_individual(mid(2)) is False
    assert t.add_individual(mid(3)) is True  # 3 pending: flush now
    flush = t.flush()
    assert flush.individual == [(1, 1), (1, 2), (1, 3)]
    assert flush.commands() == [{"positions": [[1, 1], [1, 2], [1, 3]]}]
    assert t.flush().is_empty


def test_group_time_zero_flushes_every_ack():
    t = AckGroupingTracker(group_time_ms=0)
    assert t.add_individual(mid(1)) is True
    assert t.add_cumulative(mid(2)) is True


def test_cumulative_keeps_the_highest():
    t = AckGroupingTracker()
    t.add_cumulative(mid(5))
    t.add_cumulative(mid(3))
    t.add_cumulative(mid(7))
    t.add_cumulative(mid(6))
    flush = t.flush()
    assert flush.cumulative == (1, 7)
    assert flush.commands() == [{"positions": [[1, 7]], "cumulative": True}]


def test_partial_batch_is_not_acked_without_batch_index_acks():
    t = AckGroupingTracker(batch_index_ack_enabled=False)
    t.on_batch_received((1, 4), 3)
    t.add_individual(mid(4, 0, 3))
    t.add_individual(mid(4, 2, 3))
    assert t.flush().is_empty
    t.add_individual(mid(4, 1, 3))
    assert t.flush().individual == [(1, 4)]


def test_partial_batch_sends_ack_sets_with_batch_index_acks():
    t = AckGroupingTracker(batch_index_ack_enabled=True)
    t.on_batch_received((1, 4), 3)
    t.add_individual(mid(4, 0, 3))
    t.add_individual(mid(4, 2, 3))
    flush = t.flush()
    assert flush.ack_sets == [[1, 4, 0b010, 3]]
    assert flush.commands() == [{"positions": [[1, 4]], "ack_sets": [[1, 4, 0b010, 3]]}]
    t.add_individual(mid(4, 1, 3))
    flush = t.flush()
    assert flush.individual == [(1, 4)] and flush.ack_sets == []


def test_broker_ack_set_seeds_the_batch_state():
    t = AckGroupingTracker()
    t.on_batch_received((1, 4), 4, unacked_bits=0b1100)  # 0 and 1 acked before
    t.add_individual(mid(4, 2, 4))
    assert t.flush().is_empty
    t.add_individual(mid(4, 3, 4))
    assert t.flush().individual == [(1, 4)]


def test_cumulative_inside_a_batch_acks_the_previous_entry():
    t = AckGroupingTracker(batch_index_ack_enabled=False)
    t.on_batch_received((1, 4), 3)
    t.add_cumulative(mid(4, 1, 3))
    flush = t.flush()
    assert flush.cumulative == (1, 3) and flush.cumulative_ack_set is None
    t.add_cumulative(mid(4, 2, 3))  # the whole batch now
    assert t.flush().cumulative == (1, 4)


def test_cumulative_inside_a_batch_with_batch_index_acks():
    t = AckGroupingTracker(batch_index_ack_enabled=True)
    t.on_batch_received((1, 4), 4)
    t.add_cumulative(mid(4, 1, 4))
    flush = t.flush()
    assert flush.cumulative == (1, 4)
    assert flush.cumulative_ack_set == [1, 4, 0b1100, 4]
    assert flush.commands() == [
        {"positions": [[1, 4]], "cumulative": True, "ack_sets": [[1, 4, 0b1100, 4]]}
    ]


def test_duplicates_are_recognised():
    t = AckGroupingTracker()
    t.add_individual(mid(9))
    assert t.is_duplicate((1, 9))
    t.add_cumulative(mid(5))
    assert t.is_duplicate((1, 3)) and t.is_duplicate((1, 5))
    assert not t.is_duplicate((1, 6))
    t.flush()
    assert t.is_duplicate((1, 5))  # sent cumulative still covers it
    t.reset_cumulative()
    assert not t.is_duplicate((1, 5))


def test_individual_and_cumulative_in_one_flush():
    t = AckGroupingTracker()
    t.add_individual(mid(8))
    t.add_cumulative(mid(5))
    assert [c.get("cumulative", False) for c in t.flush().commands()] == [False, True]


def test_a_burst_of_received_messages_acks_as_one_by_one():
    """add_individuals keeps the state of the batch acked just before (messages are acked
    in runs of one batch): interleaved batches, a repeated ack and an ack after the batch
    completed give what acking each message on its own gives, with and without ack sets."""
    from pulsarlab.broker.client.message import Delivery, delivered

    def received(entry: int, index: int, size: int = 3) -> object:
        delivery = deliveries.setdefault(entry, Delivery("t", -1, 1, entry, size, 0, "p",
                                                         None, 0, None))
        return delivered((None,) * 7, delivery, index, None)

    for batch_index_acks in (False, True):
        deliveries: dict[int, Delivery] = {}
        burst = [received(e, i) for e, i in [(0, 0), (0, 1), (1, 0), (0, 2), (0, 2), (1, 1),
                                             (1, 1), (2, -1)]]
        burst.append(mid(3, 1, 2))
        burst.append(received(0, 0))  # batch 0 was completed: its state starts again
        together = AckGroupingTracker(batch_index_ack_enabled=batch_index_acks)
        alone = AckGroupingTracker(batch_index_ack_enabled=batch_index_acks)
        for t in (together, alone):
            for entry in (0, 1):
                t.on_batch_received((1, entry), 3)
        together.add_individuals(burst)
        for m in burst:
            alone.add_individual(m)
        assert together._batches == alone._batches
        assert together.flush() == alone.flush()
