"""A repeating resource error is logged once per interval, with how many were left out."""

from __future__ import annotations

import logging

from pulsarlab.broker.resource_log import RateLimitedLog


def test_once_per_interval_with_a_count_of_the_rest(caplog) -> None:
    now = [100.0]
    limited = RateLimitedLog(logging.getLogger("test.resource"), 10.0, clock=lambda: now[0])
    with caplog.at_level(logging.ERROR, "test.resource"):
        for _ in range(1000):
            limited.log("out of descriptors")
        now[0] += 10.0
        limited.log("out of descriptors")
    assert [r.getMessage() for r in caplog.records] == [
        "out of descriptors", "out of descriptors (999 more since the last report)"]
