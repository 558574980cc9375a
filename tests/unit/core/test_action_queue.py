"""The queries a face asks of the core's action queue (instead of reading the outbox): an
answer queued behind pending actions, a closing connection's actions taken out, an
answer placed before a given action."""

from __future__ import annotations

from pulsarlab.broker.actions import ConsumerClosed, ReachedEndOfTopic


def test_an_answer_waits_only_behind_pending_actions(harness):
    service = harness.service
    service.take_actions()
    assert service.push_behind_pending(ConsumerClosed(1, "c", "x")) is False
    assert service.take_actions() == []  # nothing pending: not queued, it goes out at once
    first = ConsumerClosed(1, "a", "seek")
    service.push(first)
    answer = ConsumerClosed(2, "b", "answer")
    assert service.push_behind_pending(answer) is True
    assert service.take_actions() == [first, answer]


def test_a_connection_takes_its_own_actions_out_in_order(harness):
    service = harness.service
    service.take_actions()
    a1, b1, a2 = (ConsumerClosed(1, "a", "1"), ConsumerClosed(2, "b", "2"),
                  ConsumerClosed(3, "a", "3"))
    for action in (a1, b1, a2):
        service.push(action)
    assert service.take_actions_for("a") == [a1, a2]
    assert service.take_actions_for("a") == []
    assert service.take_actions() == [b1]


def test_an_action_is_found_after_a_mark_and_an_answer_put_before_it(harness):
    service = harness.service
    service.take_actions()
    before = ConsumerClosed(1, "a", "before the mark")
    service.push(before)
    mark = service.actions_mark()
    other, end = ReachedEndOfTopic(2, "a"), ReachedEndOfTopic(3, "a")
    service.push(other)
    service.push(end)

    def is_end_of_3(action):
        return type(action) is ReachedEndOfTopic and action.consumer_id == 3

    assert service.find_action(mark, is_end_of_3) == 2
    assert service.find_action(service.actions_mark(), is_end_of_3) is None
    answer = ConsumerClosed(3, "a", "answer")
    service.insert_action(2, answer)
    assert service.take_actions() == [before, other, answer, end]


def test_one_commit_answers_each_run_of_a_producers_sends_in_one_action_in_order(harness):
    from pulsarlab.broker.actions import SendReceipts
    from pulsarlab.broker.entry import MessageMetadata

    service = harness.service
    a = service.create_producer("t", "a", conn="ca").producer_id
    b = service.create_producer("t", "b", conn="cb").producer_id
    service.take_actions()
    for producer, sequence_id in ((a, 1), (a, 2), (b, 1), (a, 3)):
        service.send(producer, MessageMetadata(sequence_id=sequence_id), b"x")
    service.commit()
    receipts = [action for action in service.take_actions()
                if isinstance(action, SendReceipts)]
    assert [(r.producer_id, r.conn, [s for s, _, _ in r.receipts]) for r in receipts] == [
        (a, "ca", [1, 2]), (b, "cb", [1]), (a, "ca", [3])]
    positions = [(ledger, entry) for r in receipts for _, ledger, entry in r.receipts]
    assert [entry for _, entry in positions] == [0, 1, 2, 3]  # in the order stored
    assert [r.sequence_id for r in receipts[0].each()] == [1, 2]
