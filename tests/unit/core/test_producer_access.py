"""Producer access modes and the topic epoch, on the core (Pulsar's ``AbstractTopic``
``incrementTopicEpochIfNeeded`` / ``handleProducerRemoved``, ``ExclusiveProducerTest``)."""

import pytest

from pulsarlab.broker import BrokerService, ManualClock, MessageMetadata
from pulsarlab.broker.actions import ProducerClosed, ProducerReady
from pulsarlab.broker.errors import (
    InvalidArgument,
    ProducerBusy,
    ProducerFenced,
    ProducerNotFound,
)
from pulsarlab.broker.events import EventType
from pulsarlab.broker.storage import DurableStorage

T = "persistent://public/default/t"


def _take(h, kind):
    return [a for a in h.service.take_actions() if isinstance(a, kind)]


def _producer(h, mode, name=None, conn="c", epoch=None):
    return h.service.create_producer(T, name, conn, access_mode=mode, topic_epoch=epoch)


@pytest.mark.parametrize("first,second,error", [
    ("Exclusive", "Exclusive", ProducerFenced),
    ("Exclusive", "Shared", ProducerBusy),
    ("Shared", "Exclusive", ProducerFenced),
    ("Exclusive", "ExclusiveWithFencing", None),
    ("Shared", "Shared", None),
    ("Shared", "ExclusiveWithFencing", None),
])
def test_access_mode_conflicts(harness, first, second, error):
    _producer(harness, first)
    if error is None:
        assert _producer(harness, second).ready
    else:
        with pytest.raises(error):
            _producer(harness, second)


def test_exclusive_producers_move_the_epoch_on_and_shared_ones_are_told_it(harness):
    s = harness.service
    first = _producer(harness, "Exclusive")
    assert first.topic_epoch == 0
    s.close_producer(first.producer_id)
    fencing = _producer(harness, "ExclusiveWithFencing")
    assert fencing.topic_epoch == 1
    s.close_producer(fencing.producer_id)
    assert _producer(harness, "Shared").topic_epoch == 1  # the topic's current epoch


def test_a_client_with_an_older_epoch_is_fenced(harness):
    s = harness.service
    s.close_producer(_producer(harness, "Exclusive").producer_id)  # epoch 0
    s.close_producer(_producer(harness, "Exclusive").producer_id)  # epoch 1
    with pytest.raises(ProducerFenced, match="Current epoch: 1, Producer epoch: 0"):
        _producer(harness, "Exclusive", epoch=0)
    # The client's own (current) epoch is kept, not moved on.
    assert _producer(harness, "Exclusive", epoch=1).topic_epoch == 1


def test_fencing_closes_the_producers_and_refuses_the_waiting_ones(harness):
    s = harness.service
    holder = _producer(harness, "Exclusive", conn="a")
    waiter = _producer(harness, "WaitForExclusive", conn="b")
    assert not waiter.ready
    taker = _producer(harness, "ExclusiveWithFencing", conn="c")
    assert taker.ready and taker.topic_epoch == 1
    closed = {(a.producer_id, a.conn, a.reason) for a in _take(harness, ProducerClosed)}
    assert closed == {(holder.producer_id, "a", "fenced"), (waiter.producer_id, "b", "fenced")}
    assert set(s.producers) == {taker.producer_id}
    # The fenced producer's client reconnects with its epoch: refused.
    with pytest.raises(ProducerFenced):
        _producer(harness, "Exclusive", epoch=0)


def test_wait_for_exclusive_waits_in_line_and_gets_the_topic_when_the_holder_leaves(harness):
    s = harness.service
    holder = _producer(harness, "Exclusive", "holder")
    first = _producer(harness, "WaitForExclusive", "first")
    second = _producer(harness, "WaitForExclusive", "second")
    assert (first.ready, second.ready) == (False, False)
    # A waiting producer is not on the topic and cannot send.
    assert set(s.get_topic(T).producers) == {holder.producer_id}
    with pytest.raises(ProducerNotFound):
        s.send(first.producer_id, MessageMetadata(), b"x")
    # While one waits, a Shared producer is busy and an Exclusive one fenced.
    with pytest.raises(ProducerBusy):
        _producer(harness, "Shared")
    with pytest.raises(ProducerFenced):
        _producer(harness, "Exclusive")
    harness.service.take_actions()
    harness.events.clear()
    s.close_producer(holder.producer_id)
    (ready,) = _take(harness, ProducerReady)
    assert (ready.producer_id, ready.topic_epoch) == (first.producer_id, 1)
    assert first.ready and not second.ready
    assert [e.data["producer"] for e in harness.events_of(EventType.PRODUCER_ADDED)] == ["first"]
    s.send(first.producer_id, MessageMetadata(), b"x")
    s.close_producer(first.producer_id)
    (ready,) = _take(harness, ProducerReady)
    assert (ready.producer_id, ready.topic_epoch) == (second.producer_id, 2)


def test_a_waiting_producer_that_leaves_gives_up_its_place(harness):
    s = harness.service
    holder = _producer(harness, "Exclusive", conn="a")
    gone = _producer(harness, "WaitForExclusive", conn="b")
    stays = _producer(harness, "WaitForExclusive", conn="c")
    s.close_connection("b")  # its connection closed while it waited
    assert gone.producer_id not in s.producers
    s.close_producer(holder.producer_id)
    assert [a.producer_id for a in _take(harness, ProducerReady)] == [stays.producer_id]


def test_a_producer_waiting_behind_shared_ones_gets_the_topic_when_the_last_leaves(harness):
    s = harness.service
    shared = [_producer(harness, "Shared") for _ in range(2)]
    waiter = _producer(harness, "WaitForExclusive")
    assert not waiter.ready
    s.close_producer(shared[0].producer_id)
    assert not _take(harness, ProducerReady)
    s.close_producer(shared[1].producer_id)
    assert [a.producer_id for a in _take(harness, ProducerReady)] == [waiter.producer_id]


def test_wait_for_exclusive_on_a_free_topic_takes_it_at_once(harness):
    assert _producer(harness, "WaitForExclusive").ready


def test_terminating_the_topic_refuses_the_waiting_producers(harness):
    s = harness.service
    _producer(harness, "Exclusive")
    waiter = _producer(harness, "WaitForExclusive")
    s.terminate_topic(T)
    closed = [a for a in _take(harness, ProducerClosed) if a.producer_id == waiter.producer_id]
    assert [a.reason for a in closed] == ["terminated"]
    assert not s.producers and not _take(harness, ProducerReady)


@pytest.mark.parametrize("mode,epoch", [("Sole", None), ("Shared", -1), ("Shared", "1")])
def test_bad_access_arguments_are_refused(harness, mode, epoch):
    with pytest.raises(InvalidArgument):
        _producer(harness, mode, epoch=epoch)
    assert not harness.service.producers


def test_the_epoch_survives_a_restart_and_goes_with_the_topic(tmp_path):
    storage = DurableStorage(tmp_path / "data")
    core = BrokerService(storage, ManualClock())
    for _ in range(2):
        core.close_producer(core.create_producer(T, access_mode="Exclusive").producer_id)
    core.close()
    core = BrokerService(DurableStorage(tmp_path / "data"), ManualClock())
    with pytest.raises(ProducerFenced):  # a client fenced before the restart stays fenced
        core.create_producer(T, access_mode="Exclusive", topic_epoch=0)
    producer = core.create_producer(T, access_mode="Exclusive")
    assert producer.topic_epoch == 2
    core.close_producer(producer.producer_id)
    core.delete_topic(T)
    assert core.create_producer(T, access_mode="Exclusive").topic_epoch == 0
    core.close()
