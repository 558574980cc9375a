"""The loop's poller: raw descriptors and ZeroMQ sockets in one wait. A ZeroMQ socket is
ready while a message waits, including one whose signal an earlier read already took
(its descriptor will not fire again): the loop must never sleep on a waiting message."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import zmq

from pulsarlab.broker.poller import LoopPoller
from pulsarlab.broker.transports.readiness import READ, WRITE

LONG_MS = 10_000  # a wait that returns at once when something is ready


@pytest.fixture(params=[True, False], ids=["epoll", "selector"])
def poller(request: pytest.FixtureRequest) -> Iterator[LoopPoller]:
    poller = LoopPoller(use_epoll=request.param)
    yield poller
    poller.close()


@pytest.fixture
def router_and_dealer() -> Iterator[tuple[zmq.Socket, zmq.Socket]]:
    ctx = zmq.Context()
    router, dealer = ctx.socket(zmq.ROUTER), ctx.socket(zmq.DEALER)
    router.bind("inproc://poller-test")
    dealer.connect("inproc://poller-test")
    yield router, dealer
    dealer.close(linger=0)
    router.close(linger=0)
    ctx.term()


def test_a_raw_descriptor_is_ready_while_readable(poller: LoopPoller) -> None:
    reader, writer = socket.socketpair()
    try:
        poller.add_descriptor(reader.fileno())
        assert list(poller.poll(0)) == []
        writer.send(b"x")
        assert list(poller.poll(LONG_MS)) == [reader.fileno()]
        reader.recv(1)
        assert list(poller.poll(0)) == []
    finally:
        reader.close()
        writer.close()


def test_a_zmq_socket_is_ready_while_a_message_waits(poller, router_and_dealer) -> None:
    router, dealer = router_and_dealer
    watched = poller.add_socket(router)
    assert list(poller.poll(0)) == []
    dealer.send(b"one")
    assert list(poller.poll(LONG_MS)) == [watched.fd]
    assert router.recv_multipart()[1] == b"one"
    assert list(poller.poll(0)) == []


def test_a_message_left_behind_is_ready_without_a_new_signal(poller, router_and_dealer):
    router, dealer = router_and_dealer
    watched = poller.add_socket(router)
    for body in (b"one", b"two", b"three"):
        dealer.send(body)
    assert list(poller.poll(LONG_MS)) == [watched.fd]
    # The loop reads one (its burst is spent): the rest took no new signal, and the next
    # poll must not wait for one.
    router.recv_multipart()
    assert list(poller.poll(LONG_MS)) == [watched.fd]
    router.recv_multipart()
    router.recv_multipart()
    assert list(poller.poll(0)) == []


def test_a_send_that_took_the_signal_is_followed_by_a_check(poller, router_and_dealer):
    router, dealer = router_and_dealer
    watched = poller.add_socket(router)
    dealer.send(b"hello")
    assert list(poller.poll(LONG_MS)) == [watched.fd]
    identity, _ = router.recv_multipart()
    dealer.send(b"again")
    router.send_multipart([identity, b"reply"])
    watched.dirty = True  # as the broker marks a send
    assert list(poller.poll(LONG_MS)) == [watched.fd]
    assert router.recv_multipart()[1] == b"again"
    assert dealer.recv() == b"reply"


def test_descriptors_and_sockets_together(poller, router_and_dealer) -> None:
    router, dealer = router_and_dealer
    reader, writer = socket.socketpair()
    try:
        poller.add_descriptor(reader.fileno())
        watched = poller.add_socket(router)
        writer.send(b"x")
        dealer.send(b"m")
        ready = set(poller.poll(LONG_MS))
        if ready != {reader.fileno(), watched.fd}:  # the other one may come a moment later
            ready |= set(poller.poll(LONG_MS))
        assert ready == {reader.fileno(), watched.fd}
    finally:
        reader.close()
        writer.close()


class _CommandsOnly:
    """A ZeroMQ socket stand-in whose descriptor fires for ZeroMQ's own commands but which
    never holds a message."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def getsockopt(self, option: int) -> int:
        return self.fd if option == zmq.FD else zmq.POLLOUT


def test_a_wake_up_for_zmq_commands_only_waits_on(poller: LoopPoller) -> None:
    reader, writer = socket.socketpair()
    signal, _other = socket.socketpair()  # the stand-in's descriptor
    try:
        poller.add_descriptor(reader.fileno())
        watched = poller.add_socket(_CommandsOnly(signal.fileno()))  # type: ignore[arg-type]
        poller.poll(0)  # its first check: no message
        waits: list[float] = []
        # commands first, then the descriptor
        script = [[(watched.fd, READ)], [(reader.fileno(), READ)]]

        def wait(seconds: float) -> list[tuple[int, int]]:
            waits.append(seconds)
            return script.pop(0)

        poller._wait = wait  # type: ignore[method-assign]
        assert list(poller.poll(5_000)) == [reader.fileno()]
        assert len(waits) == 2 and 0 < waits[1] <= waits[0] == 5.0
    finally:
        for sock in (reader, writer, signal, _other):
            sock.close()


def test_a_wake_up_for_zmq_commands_only_ends_at_the_deadline(poller: LoopPoller) -> None:
    signal, other = socket.socketpair()
    watched = poller.add_socket(_CommandsOnly(signal.fileno()))  # type: ignore[arg-type]
    poller.poll(0)
    calls = []

    def wait(seconds: float) -> list[tuple[int, int]]:
        calls.append(seconds)
        return [(watched.fd, READ)] if len(calls) == 1 else []

    poller._wait = wait  # type: ignore[method-assign]
    assert list(poller.poll(0)) == [] and calls == [0.0]  # no wait asked: none made again
    calls.clear()
    assert list(poller.poll(1)) == [] and len(calls) in (1, 2)  # at most the rest of 1 ms
    signal.close()
    other.close()


def test_a_descriptor_registered_in_its_readiness_reports_its_events(poller) -> None:
    """A transport registers its sockets in the poller's readiness with its own events; the
    wait reports them as found (a writable socket: WRITE, not READ)."""
    reader, writer = socket.socketpair()
    try:
        poller.readiness.register(writer.fileno(), READ | WRITE)
        assert poller.poll(LONG_MS) == {writer.fileno(): WRITE}
        reader.send(b"x")
        assert poller.poll(LONG_MS) == {writer.fileno(): READ | WRITE}
        poller.readiness.modify(writer.fileno(), READ)
        assert poller.poll(LONG_MS) == {writer.fileno(): READ}
        poller.readiness.unregister(writer.fileno())
        assert poller.poll(0) == {}
    finally:
        reader.close()
        writer.close()


def test_a_selector_without_a_descriptor_still_serves_the_loop(monkeypatch) -> None:
    """Where the platform's selector has no descriptor (select() on Windows), the loop's
    poller still works: only a readiness waited on from outside needs one."""
    import selectors

    monkeypatch.setattr(selectors, "DefaultSelector", selectors.SelectSelector)
    poller = LoopPoller(use_epoll=False)
    reader, writer = socket.socketpair()
    try:
        poller.add_descriptor(reader.fileno())
        writer.send(b"x")
        assert list(poller.poll(LONG_MS)) == [reader.fileno()]
        with pytest.raises(OSError, match="no descriptor another poller can watch"):
            poller.readiness.fileno()
    finally:
        reader.close()
        writer.close()
        poller.close()
