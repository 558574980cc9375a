"""The asyncio loop the broker thread drives (broker/web/pump.py): one pump runs what is
ready and every callback that schedules, never waits, and tells the driver how long it may
wait before the next timer — through asyncio's public API only."""

from __future__ import annotations

import ast
import asyncio
import inspect
import select
import socket
import threading

import pytest

from pulsarlab.broker.web import pump
from pulsarlab.broker.web.pump import MAX_ROUNDS, PumpedLoop

pytestmark = pytest.mark.skipif(not PumpedLoop.supported(), reason="no pollable selector")


@pytest.fixture
def loop():
    loop = PumpedLoop()
    yield loop
    loop.close()


def test_one_pump_runs_callbacks_that_schedule_callbacks(loop):
    ran = []

    def step(n: int) -> None:
        ran.append(n)
        if n < 5:
            loop.call_soon(step, n + 1)

    loop.call_soon(step, 0)
    loop.pump()
    assert ran == [0, 1, 2, 3, 4, 5]
    assert loop.wait_ms(100) == 100  # nothing left


def test_a_pump_is_bounded_and_says_there_is_more(loop):
    ran = []

    def forever() -> None:
        ran.append(1)
        loop.call_soon(forever)

    loop.call_soon(forever)
    loop.pump()
    assert len(ran) == MAX_ROUNDS
    assert loop.wait_ms(100) == 0  # the driver comes back at once


def test_a_coroutine_runs_to_its_end_with_the_running_loop_set(loop):
    seen = []

    async def handler() -> None:
        seen.append(asyncio.get_running_loop() is loop)
        await asyncio.sleep(0)
        future = loop.create_future()
        loop.call_soon(future.set_result, "answer")
        seen.append(await future)

    task = loop.create_task(handler())
    loop.pump()
    assert task.done() and seen == [True, "answer"]
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()  # only while pumping


def test_a_timer_not_due_is_not_waited_for(loop):
    fired = []
    loop.call_later(3600, fired.append, 1)
    loop.pump()  # returns at once: the timer is an hour away
    assert fired == []
    assert 0 < loop.wait_ms(100) <= 100
    assert loop.wait_ms(10_000_000) > 3_000_000
    loop.call_later(0, fired.append, 2)
    assert loop.wait_ms(100) == 0
    loop.pump()
    assert fired == [2]


def test_its_descriptor_is_readable_when_its_io_is_ready(loop):
    left, right = socket.socketpair()
    try:
        left.setblocking(False)
        got = []
        loop.add_reader(left, lambda: got.append(left.recv(10)))
        assert select.select([loop.fileno()], [], [], 0)[0] == []
        right.send(b"hi")
        assert select.select([loop.fileno()], [], [], 5)[0] == [loop.fileno()]
        loop.pump()
        assert got == [b"hi"]
        loop.remove_reader(left)
    finally:
        left.close()
        right.close()


@pytest.fixture
def clocked(loop):
    """The loop on a clock the test moves (``loop.time`` is public: asyncio reads every
    timer's due time through it)."""
    now = [1000.0]
    loop.time = lambda: now[0]  # type: ignore[method-assign]

    def advance(seconds: float) -> None:
        now[0] += seconds

    return loop, advance


def test_timers_fire_when_due_and_the_driver_is_told_when(clocked):
    loop, advance = clocked
    fired = []
    loop.call_later(5, fired.append, "later")
    loop.call_at(loop.time() + 2, fired.append, "sooner")
    assert loop.wait_ms(60_000) == 2000
    loop.pump()
    assert fired == []
    advance(2)
    assert loop.wait_ms(60_000) == 0
    loop.pump()
    assert fired == ["sooner"]
    assert loop.wait_ms(60_000) == 3000
    advance(3)
    loop.pump()
    assert fired == ["sooner", "later"]
    assert loop.wait_ms(60_000) == 60_000  # no timer left


def test_a_sleeping_coroutine_resumes_once_its_timer_is_due(clocked):
    loop, advance = clocked

    async def nap() -> str:
        await asyncio.sleep(10)
        return "awake"

    task = loop.create_task(nap())
    loop.pump()
    assert not task.done() and loop.wait_ms(60_000) == 10_000
    advance(10)
    loop.pump()
    assert task.result() == "awake"


def test_cancelled_timers_neither_wake_the_driver_nor_pile_up(clocked):
    loop, advance = clocked
    loop.call_later(1, pytest.fail).cancel()
    assert loop.wait_ms(60_000) == 60_000
    for _ in range(10_000):  # a timeout armed and cancelled per request
        loop.call_later(30, pytest.fail).cancel()
    assert len(loop._pump_timers) < 200
    advance(60)
    loop.pump()


def test_a_callback_scheduled_between_pumps_makes_the_driver_come_back_at_once(loop):
    future = loop.create_future()
    assert loop.wait_ms(100) == 100
    future.set_result(1)  # an answer set by the broker thread outside a pump
    done = []
    future.add_done_callback(done.append)
    assert loop.wait_ms(100) == 0
    loop.pump()
    assert done == [future] and loop.wait_ms(100) == 100


def test_a_callback_from_another_thread_makes_its_descriptor_readable(loop):
    got = []
    thread = threading.Thread(target=loop.call_soon_threadsafe, args=(got.append, "hi"))
    thread.start()
    thread.join()
    assert select.select([loop.fileno()], [], [], 5)[0] == [loop.fileno()]
    loop.pump()
    assert got == ["hi"]


def test_a_failing_callback_is_reported_and_the_pump_goes_on(loop):
    errors, ran = [], []
    loop.set_exception_handler(lambda _loop, context: errors.append(context["exception"]))

    def boom() -> None:
        loop.call_soon(ran.append, "after")
        raise ValueError("boom")

    loop.call_soon(boom)
    loop.pump()
    assert [str(e) for e in errors] == ["boom"] and ran == ["after"]
    loop.call_soon(ran.append, "next pump")
    loop.pump()
    assert ran == ["after", "next pump"]


def test_only_asyncio_public_api_is_used():
    """A Python upgrade may change asyncio's private members: the pump reads none."""
    tree = ast.parse(inspect.getsource(pump))
    own = {"_pump_soon", "_pump_timers", "_pump_compact_at", "_pump_id", "_pump_rounds",
           "_end_round", "_compact_timers", "_next_timer"}
    private = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
               and node.attr.startswith("_") and not node.attr.endswith("__")}
    assert private <= own, private - own
