"""Client-side redelivery machinery, sans-I/O: back-off, negative acks, ack timeouts, DLQ.

Each tracker takes the time as an argument and returns what to redeliver; the client's
I/O thread calls them from its timers, and the widgets' what-if mode calls them on a
simulated clock.
"""

from .backoff import MultiplierRedeliveryBackoff, RedeliveryBackoff
from .dead_letter import (
    DLQ_SUFFIX,
    MAX_RECONSUMETIMES,
    RETRY_SUFFIX,
    DeadLetterPolicy,
    dead_letter_properties,
    retry_properties,
)
from .negative_acks import NegativeAcksTracker
from .unacked import UnAckedMessageTracker

__all__ = [
    "DLQ_SUFFIX",
    "MAX_RECONSUMETIMES",
    "RETRY_SUFFIX",
    "DeadLetterPolicy",
    "MultiplierRedeliveryBackoff",
    "NegativeAcksTracker",
    "RedeliveryBackoff",
    "UnAckedMessageTracker",
    "dead_letter_properties",
    "retry_properties",
]
