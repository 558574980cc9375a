"""Key_Shared sticky-key selectors, failover picking and the hashes behind them (Pulsar 3.3).

:func:`make_selector` chooses a selector the way Pulsar's Key_Shared dispatcher does: STICKY
mode → :class:`HashRangeExclusiveStickyKeyConsumerSelector`; AUTO_SPLIT mode → consistent
hashing when the broker setting ``subscriptionKeySharedUseConsistentHashing`` is on (Pulsar's
default since 2.10), else the auto-split hash ranges. Which consistent-hashing ring depends on
the broker's ``pulsar_version`` (:mod:`pulsarlab.broker.pulsar_version`); from 4.0 every
selector comes from :mod:`.pip379` (16-bit sticky key hashes, the first-come ring).
"""

from __future__ import annotations

from ..pulsar_version import DEFAULT_PULSAR_VERSION, PulsarVersion
from .auto_split import HashRangeAutoSplitStickyKeyConsumerSelector
from .base import (
    HashRange,
    HashRangeConsumer,
    KeySharedConsumer,
    StickyKeyConsumerSelector,
    format_range,
)
from .consistent_hashing import (
    DEFAULT_NUMBER_OF_POINTS,
    RING_SIZE,
    ConsistentHashingStickyKeyConsumerSelector,
    ConsistentHashRing,
    LegacyConsistentHashingStickyKeyConsumerSelector,
    consumer_point_hash,
    consumer_point_hash_with_name_index,
)
from .failover import (
    CONSUMER_CONSISTENT_HASH_REPLICAS,
    PriorityConsumer,
    active_consumer_hash_ring,
    eligible_consumers,
    pick_active_consumer,
    sort_consumers,
)
from .hashing import (
    INT_MAX,
    NONE_KEY,
    RANGE_SIZE,
    HashingScheme,
    java_string_hash,
    java_string_hash_code,
    murmur3_32_hash,
    partition_for_key,
    slot,
    sticky_key,
    sticky_key_hash,
)
from .pip379 import ConsistentHashingStickyKeyConsumerSelector40, make_selector_40
from .sticky import (
    HashRangeExclusiveStickyKeyConsumerSelector,
    LegacyHashRangeExclusiveStickyKeyConsumerSelector,
)

__all__ = [
    "CONSUMER_CONSISTENT_HASH_REPLICAS",
    "DEFAULT_NUMBER_OF_POINTS",
    "INT_MAX",
    "NONE_KEY",
    "RANGE_SIZE",
    "RING_SIZE",
    "ConsistentHashRing",
    "ConsistentHashingStickyKeyConsumerSelector",
    "HashRange",
    "HashRangeAutoSplitStickyKeyConsumerSelector",
    "HashRangeConsumer",
    "HashRangeExclusiveStickyKeyConsumerSelector",
    "HashingScheme",
    "KeySharedConsumer",
    "LegacyConsistentHashingStickyKeyConsumerSelector",
    "LegacyHashRangeExclusiveStickyKeyConsumerSelector",
    "PriorityConsumer",
    "StickyKeyConsumerSelector",
    "active_consumer_hash_ring",
    "consistent_hashing_selector",
    "consumer_point_hash",
    "consumer_point_hash_with_name_index",
    "eligible_consumers",
    "format_range",
    "java_string_hash",
    "java_string_hash_code",
    "make_selector",
    "murmur3_32_hash",
    "partition_for_key",
    "pick_active_consumer",
    "slot",
    "sort_consumers",
    "sticky_key",
    "sticky_key_hash",
    "sticky_selector",
]

_MODES = ("auto_split", "sticky")


def make_selector(
    mode: str,
    use_consistent_hashing: bool,
    consistent_hashing_points: int = DEFAULT_NUMBER_OF_POINTS,
    version: PulsarVersion | None = None,
) -> StickyKeyConsumerSelector:
    """A fresh selector for a Key_Shared subscription in ``mode`` (``"auto_split"``/``"sticky"``).

    ``mode`` is case-insensitive and may also be an enum member named ``AUTO_SPLIT`` or
    ``STICKY``. ``use_consistent_hashing`` only matters for AUTO_SPLIT; ``version`` (default:
    the latest 3.3) picks the consistent-hashing ring.
    """
    name = str(getattr(mode, "name", mode)).lower()
    if version is not None and version.key_shared_draining_hashes and name in _MODES:
        return make_selector_40(name, use_consistent_hashing, consistent_hashing_points)
    if name == "sticky":
        return sticky_selector(version)
    if name == "auto_split":
        if use_consistent_hashing:
            return consistent_hashing_selector(consistent_hashing_points, version)
        return HashRangeAutoSplitStickyKeyConsumerSelector()
    raise ValueError(f"unknown Key_Shared mode {mode!r}; expected one of {_MODES}")


def consistent_hashing_selector(
    points: int = DEFAULT_NUMBER_OF_POINTS, version: PulsarVersion | None = None
) -> ConsistentHashRing:
    """The consistent-hashing selector of ``version`` (default: the latest 3.3)."""
    version = version or PulsarVersion.parse(DEFAULT_PULSAR_VERSION)
    if version.key_shared_draining_hashes:
        return ConsistentHashingStickyKeyConsumerSelector40(points)  # type: ignore[return-value]
    if version.consistent_hashing_replaces_on_collision:
        return ConsistentHashingStickyKeyConsumerSelector(points)
    return LegacyConsistentHashingStickyKeyConsumerSelector(points)


def sticky_selector(
    version: PulsarVersion | None = None,
) -> HashRangeExclusiveStickyKeyConsumerSelector:
    """The STICKY-mode (and key-hash-range filter) selector of ``version`` (default: latest 3.3)."""
    version = version or PulsarVersion.parse(DEFAULT_PULSAR_VERSION)
    if version.sticky_ranges_select_by_containment:
        return HashRangeExclusiveStickyKeyConsumerSelector()
    return LegacyHashRangeExclusiveStickyKeyConsumerSelector()
