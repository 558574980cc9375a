"""``MultiplierRedeliveryBackoff``: how long to wait before the n-th redelivery.

Pulsar's rule: ``next(count)`` is ``min`` for ``count <= 0`` (or ``min <= 0``), ``max``
once ``count`` passes the power that reaches ``max``, and ``min * multiplier ** count``
capped at ``max`` in between. The count is the message's redelivery count when it is
nacked or times out, so a fresh message waits ``min``.
"""

from __future__ import annotations

import math
from typing import Protocol


class RedeliveryBackoff(Protocol):
    def next(self, redelivery_count: int) -> int: ...


class MultiplierRedeliveryBackoff:
    """Exponential back-off between ``min_delay_ms`` and ``max_delay_ms``."""

    def __init__(
        self, min_delay_ms: int = 10_000, max_delay_ms: int = 600_000, multiplier: float = 2.0
    ) -> None:
        if min_delay_ms < 0:
            raise ValueError("min_delay_ms must be >= 0")
        if max_delay_ms < min_delay_ms:
            raise ValueError("max_delay_ms must be >= min_delay_ms")
        if multiplier <= 1:
            raise ValueError("multiplier must be > 1")
        self.min_delay_ms = min_delay_ms
        self.max_delay_ms = max_delay_ms
        self.multiplier = multiplier
        if min_delay_ms > 0:
            ratio = max_delay_ms / min_delay_ms
            self._max_power = int(math.log(ratio) / math.log(multiplier)) + 1
        else:
            self._max_power = 0

    def next(self, redelivery_count: int) -> int:
        if redelivery_count <= 0 or self.min_delay_ms <= 0:
            return self.min_delay_ms
        if redelivery_count > self._max_power:
            return self.max_delay_ms
        return min(int(self.min_delay_ms * self.multiplier**redelivery_count), self.max_delay_ms)

    def __repr__(self) -> str:
        return (
            f"MultiplierRedeliveryBackoff(min_delay_ms={self.min_delay_ms}, "
            f"max_delay_ms={self.max_delay_ms}, multiplier={self.multiplier})"
        )
