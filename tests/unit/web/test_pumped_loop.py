"""The asyncio loop the broker thread drives (broker/web/pump.py): one pump runs what is
ready and every callback that schedules, never waits, and tells the driver how long it may
wait before the next timer."""

from __future__ import annotations

import asyncio
import select
import socket

import pytest

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
