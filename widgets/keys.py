"""Keys as the broker sees them, and stand-in consumers for "what would happen if" previews.

:func:`key_info` runs a key through the broker's own hashing (sticky key → 31-bit murmur →
slot; from 4.0 the selector's 16-bit sticky key hash), and :func:`ring_of` builds the
consistent-hashing ring a broker of a given ``pulsar_version`` builds. :class:`Probe` is a
hashable consumer-shaped value that the real selector classes accept, so a view can copy a
selector, add or remove a probe, and see which keys move — the broker's rules, not a
re-implementation of them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pulsarlab.broker.pulsar_version import DEFAULT_PULSAR_VERSION, PulsarVersion
from pulsarlab.broker.selectors import (
    INT_MAX,
    ConsistentHashingStickyKeyConsumerSelector40,
    ConsistentHashRing,
    HashRange,
    StickyKeyConsumerSelector,
    consistent_hashing_selector,
    slot,
    sticky_key,
    sticky_key_hash,
)

__all__ = [
    "HashRing",
    "KeyInfo",
    "Probe",
    "key_info",
    "key_space",
    "moved_keys",
    "owners",
    "preview_change",
    "ring_of",
    "ring_points",
]

HashRing = ConsistentHashRing | ConsistentHashingStickyKeyConsumerSelector40
"""A consistent-hashing selector of any release: 3.3's 31-bit rings or 4.0's 16-bit one."""


@dataclass(frozen=True)
class KeyInfo:
    """A message key, its sticky-key hash, its slot and who owns it."""

    key: str | None
    hash: int
    slot: int
    owner: str | None = None


@dataclass(frozen=True)
class Probe:
    """A consumer-shaped value for selectors (name, declared ranges, priority level)."""

    consumer_name: str
    key_hash_ranges: tuple[tuple[int, int], ...] = ()
    priority_level: int = 0


def key_info(
    key: str | None,
    owner: str | None = None,
    selector: StickyKeyConsumerSelector | None = None,
) -> KeyInfo:
    """Hash ``key`` as Key_Shared does (``None`` = a key-less message, i.e. ``NONE_KEY``):
    with ``selector``'s own hashing (4.0: a 16-bit sticky key hash), else 3.x's 31-bit one."""
    raw = sticky_key(None, key)
    h = selector.make_sticky_key_hash(raw) if selector is not None else sticky_key_hash(raw)
    return KeyInfo(key, h, slot(h), owner)


def key_space(selector: StickyKeyConsumerSelector) -> HashRange:
    """The inclusive range of sticky key hashes ``selector`` places (3.x rings: 31 bits)."""
    if isinstance(selector, ConsistentHashRing):
        return (0, INT_MAX)
    return getattr(selector, "key_hash_range", (0, INT_MAX))


def ring_points(selector: HashRing) -> dict[str, list[int]]:
    """Consumer name → its distinct ring points, ascending (colliding points included)."""
    if isinstance(selector, ConsistentHashRing):
        return {c.consumer_name: p for c, p in selector.consumer_points().items()}
    points: dict[str, list[int]] = {c.consumer_name: [] for c in selector.consumers}
    for point, members in selector.ring():
        for consumer in members:
            points[consumer.consumer_name].append(point)
    return points


def owners(
    selector: StickyKeyConsumerSelector, keys: Iterable[str | None]
) -> dict[str | None, str | None]:
    """Key → name of the consumer ``selector`` gives it (``None`` if nobody)."""
    out: dict[str | None, str | None] = {}
    for key in keys:
        # The selector's own hashing: 31-bit murmur in 3.x, a 16-bit slot in 4.0.
        consumer = selector.select_for_key(sticky_key(None, key))
        out[key] = consumer.consumer_name if consumer is not None else None
    return out


def moved_keys(
    before: Mapping[str | None, str | None], after: Mapping[str | None, str | None]
) -> list[str | None]:
    """Keys whose owner differs between two owner maps (in ``after``'s order)."""
    return [k for k, owner in after.items() if k in before and before[k] != owner]


def preview_change(
    selector: StickyKeyConsumerSelector,
    keys: Iterable[str | None],
    name: str,
    hash_ranges: Iterable[tuple[int, int]] = (),
) -> list[str | None]:
    """Keys that would change owner if ``name`` left (if present) or joined (if not).

    Works on a copy of ``selector``; raises the selector's own error if the join would be
    refused (e.g. a STICKY range conflict).
    """
    keys = list(keys)
    before = owners(selector, keys)
    trial = copy.deepcopy(selector)
    present = [c for c in trial.consumers if c.consumer_name == name]
    if present:
        trial.remove_consumer(present[0])
    else:
        trial.add_consumer(Probe(name, tuple((int(s), int(e)) for s, e in hash_ranges)))
    return moved_keys(before, owners(trial, keys))


def ring_of(
    names: Iterable[str],
    points: int,
    version: PulsarVersion | str = DEFAULT_PULSAR_VERSION,
) -> HashRing:
    """The consistent-hashing selector a broker of ``version`` builds for these names."""
    if isinstance(version, str):
        version = PulsarVersion.parse(version)
    selector = consistent_hashing_selector(points, version)
    for name in names:
        selector.add_consumer(Probe(name))
    return selector
