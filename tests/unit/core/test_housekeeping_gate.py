"""The shell's loop runs the core's tick at most once per millisecond, and a turn that had
to skip it never lets the next poll sleep past the next millisecond."""

from __future__ import annotations

from pulsarlab.broker.clock import HousekeepingGate


def test_the_tick_runs_once_per_millisecond_and_a_skipped_one_bounds_the_wait() -> None:
    gate = HousekeepingGate()
    assert gate.due(100) is True
    assert gate.wait_ms(50) == 50  # nothing skipped: wait for the deadline
    assert gate.due(100) is False  # the same millisecond: skipped ...
    assert gate.wait_ms(50) == 1  # ... so the next poll wakes by the next one
    assert gate.wait_ms(0) == 1  # even with something due: it cannot run before
    assert gate.due(100) is False
    assert gate.due(101) is True  # the next millisecond runs it
    assert gate.wait_ms(50) == 50
