"""Rates per stats interval, computed as Pulsar's ``Rate.calculateRate`` does.

Pulsar counts events into an adder and, every ``statsUpdateFrequencyInSecs``, divides what
was counted since the last calculation by the seconds elapsed (then starts counting
afresh). Here the counting is the running totals the hot path keeps anyway
(``msg_in_counter``, ``msg_out_counter``, …): a :class:`Rate` remembers the totals at its
last calculation, so publishing and dispatching pay nothing for rates.
"""

from __future__ import annotations

import time


class Rate:
    """Events per second and value (bytes) per second over the last stats interval."""

    __slots__ = ("_count", "_since_ms", "_value", "average_value", "rate", "value_rate")

    def __init__(self, now_ms: int) -> None:
        self.rate = 0.0
        self.value_rate = 0.0
        self.average_value = 0.0  # value per event in the interval (Pulsar's getAverageValue)
        self._count = 0
        self._value = 0
        self._since_ms = now_ms

    def calculate(self, total_count: int, total_value: int, now_ms: int) -> None:
        """Close the interval at ``now_ms``, given the running totals at that time."""
        period = (now_ms - self._since_ms) / 1000
        if period <= 0:
            return
        count = total_count - self._count
        value = total_value - self._value
        self.rate = count / period
        self.value_rate = value / period
        self.average_value = value / count if count else 0.0
        self._count = total_count
        self._value = total_value
        self._since_ms = now_ms


def date_string(epoch_ms: int) -> str:
    """A time as Pulsar's stats print it (``DateFormatter.format``: ISO-8601 with offset,
    UTC here), e.g. ``2026-11-27T05:40:09.12Z``: the fraction only as long as needed."""
    seconds, millis = divmod(epoch_ms, 1000)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    if millis:
        text += "." + f"{millis:03d}".rstrip("0")
    return text + "Z"
