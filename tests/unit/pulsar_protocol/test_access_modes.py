"""Producer access modes over pulsar:// bytes: a WaitForExclusive producer is answered twice
(``producer_ready`` false at once, true when it gets the topic), the epoch travels back,
fenced waiters get ``ProducerFenced``; a SEND to a producer that is not ready closes the
connection unless the broker had just closed that producer (Pulsar's ServerCnx)."""

from __future__ import annotations

from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api

from .support import Harness, T, command, send_frame


def _connected(h: Harness):
    s = h.session()
    h.connect(s)
    return s


def _producer(h: Harness, s, producer_id: int, mode: int, **fields):
    return h.run(s, command(T.PRODUCER, "producer", topic="t", producer_id=producer_id,
                            request_id=100 + producer_id, producer_access_mode=mode, **fields))


def test_wait_for_exclusive_is_answered_twice_and_gets_the_next_epoch() -> None:
    h = Harness()
    a, b = _connected(h), _connected(h)
    (held,) = _producer(h, a, 1, api.Exclusive)
    assert held.producer_success.producer_ready and held.producer_success.topic_epoch == 0
    (waiting,) = _producer(h, b, 7, api.WaitForExclusive)
    assert waiting.type == T.PRODUCER_SUCCESS
    assert waiting.producer_success.request_id == 107
    assert not waiting.producer_success.producer_ready
    assert not waiting.producer_success.HasField("topic_epoch")
    # A repeated PRODUCER while it waits: Pulsar's "already present on the connection".
    (again,) = _producer(h, b, 7, api.WaitForExclusive)
    assert (again.type, again.error.error) == (T.ERROR, api.ServiceNotReady)
    # A Shared producer meets the one in line.
    (shared,) = _producer(h, a, 2, api.Shared)
    assert (shared.type, shared.error.error) == (T.ERROR, api.ProducerBusy)
    h.run(a, command(T.CLOSE_PRODUCER, "close_producer", producer_id=1, request_id=9))
    (ready,) = h.run(b)
    assert ready.type == T.PRODUCER_SUCCESS and ready.producer_success.request_id == 107
    assert ready.producer_success.producer_ready and ready.producer_success.topic_epoch == 1
    (receipt,) = h.run(b, send_frame(7, 0, b"x"))
    assert receipt.type == T.SEND_RECEIPT


def test_fencing_refuses_the_waiting_producer_and_closes_the_holder() -> None:
    h = Harness()
    a, b, c = _connected(h), _connected(h), _connected(h)
    _producer(h, a, 1, api.Exclusive)
    _producer(h, b, 1, api.WaitForExclusive)
    (taken,) = _producer(h, c, 1, api.ExclusiveWithFencing)
    assert taken.producer_success.producer_ready and taken.producer_success.topic_epoch == 1
    (closed,) = h.run(a)
    assert closed.type == T.CLOSE_PRODUCER
    (refused,) = h.run(b)
    assert (refused.type, refused.error.request_id, refused.error.error,
            refused.error.message) == (T.ERROR, 101, api.ProducerFenced, "Fenced out")
    # The fenced client reconnects with its old epoch: refused.
    (stale,) = _producer(h, a, 2, api.Exclusive, topic_epoch=0)
    assert (stale.type, stale.error.error) == (T.ERROR, api.ProducerFenced)


def test_a_waiting_producer_whose_connection_closes_leaves_the_line() -> None:
    h = Harness()
    a, b, c = _connected(h), _connected(h), _connected(h)
    _producer(h, a, 1, api.Exclusive)
    _producer(h, b, 1, api.WaitForExclusive)
    _producer(h, c, 1, api.WaitForExclusive)
    b.connection_lost()
    h.run(a, command(T.CLOSE_PRODUCER, "close_producer", producer_id=1, request_id=9))
    (ready,) = h.run(c)
    assert ready.producer_success.producer_ready


def test_a_send_to_a_producer_that_is_not_ready_closes_the_connection() -> None:
    h = Harness()
    a = _connected(h)
    assert h.run(a, send_frame(5, 0, b"x")) == [] and a.closed
    b = _connected(h)
    _producer(h, b, 1, api.Exclusive)
    w = _connected(h)
    _producer(h, w, 3, api.WaitForExclusive)
    h.run(w, send_frame(3, 0, b"x"))
    assert w.closed


def test_a_send_to_a_producer_the_broker_just_closed_is_ignored() -> None:
    h = Harness()
    a = _connected(h)
    _producer(h, a, 1, api.Shared)
    h.service.terminate_topic("t")
    (closed,) = h.run(a)
    assert closed.type == T.CLOSE_PRODUCER
    assert h.run(a, send_frame(1, 0, b"x")) == [] and not a.closed


def test_a_waiter_fenced_right_after_it_got_the_topic_is_refused_not_ready() -> None:
    h = Harness()
    a, b, c = _connected(h), _connected(h), _connected(h)
    _producer(h, a, 1, api.Exclusive)
    _producer(h, b, 1, api.WaitForExclusive)
    # The holder leaves and a fencing producer arrives before the actions go out.
    a.receive_data(command(T.CLOSE_PRODUCER, "close_producer", producer_id=1, request_id=9))
    c.receive_data(command(T.PRODUCER, "producer", topic="t", producer_id=1, request_id=3,
                           producer_access_mode=api.ExclusiveWithFencing))
    (refused,) = h.run(b)
    assert (refused.type, refused.error.request_id, refused.error.error) == (
        T.ERROR, 101, api.ProducerFenced)
    assert not b.closed
