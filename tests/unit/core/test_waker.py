"""The loop's waker: another thread's wake-up makes its descriptor readable, clearing it
reads every one queued, and waking a closed waker (a loop that is gone) is harmless."""

from __future__ import annotations

import select
import threading

from pulsarlab.broker.waker import Waker


def _readable(waker: Waker) -> bool:
    return bool(select.select([waker.fileno()], [], [], 0)[0])


def test_a_wake_up_from_another_thread_is_seen_once_then_cleared() -> None:
    waker = Waker()
    try:
        assert not _readable(waker)
        threads = [threading.Thread(target=waker.wake) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert _readable(waker)
        waker.clear()
        assert not _readable(waker)
    finally:
        waker.close()


def test_many_wake_ups_never_block_the_waker() -> None:
    waker = Waker()
    try:
        for _ in range(200_000):  # past any socket buffer: a full pipe is readable already
            waker.wake()
        assert _readable(waker)
        waker.clear()
        assert not _readable(waker)
    finally:
        waker.close()


def test_waking_a_closed_waker_is_harmless() -> None:
    waker = Waker()
    waker.close()
    waker.wake()
