"""Readers for Pulsar's stats dicts (``pulsar-admin topics stats`` / ``stats-internal``).

The widgets draw from these dicts in every mode — the what-if core, a live pulsarlab broker
and a recorded dump of a real cluster all speak Pulsar's field names — so the parsing lives
here once: positions ``"3:5"``, range sets ``"[(3:5..3:7], (3:9..3:12]]"``, batch ack bits
``"0b101"`` and both key-hash-range forms (3.x ``keyHashRanges`` strings ``"[0, 16384]"``,
4.0 ``keyHashRangeArrays`` pairs ``[[0, 16384], ...]``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "Position",
    "consumer_key_hash_ranges",
    "format_position",
    "key_hash_space",
    "parse_batch_bits",
    "parse_position",
    "parse_range_set",
    "parse_ranges",
    "subscription_key_hash_ranges",
]

Position = tuple[int, int]

_RANGE_STRING = re.compile(r"\[\s*(-?\d+)\s*,\s*(-?\d+)\s*\]")
_POSITION_RANGE = re.compile(r"\((-?\d+):(-?\d+)\.\.(-?\d+):(-?\d+)\]")

SLOT_SPACE = 65536
"""Slots of the 3.x hash-range key space (``hash % 65536``)."""

RING_SPACE = 1 << 31
"""Hashes of the 3.x consistent-hashing ring (31-bit)."""


def parse_position(text: str | Iterable[int]) -> Position:
    """``"3:5"`` (or ``[3, 5]``) → ``(3, 5)``."""
    if isinstance(text, str):
        ledger, _, entry = text.partition(":")
        return int(ledger), int(entry)
    ledger, entry = text
    return int(ledger), int(entry)


def format_position(position: Position) -> str:
    return f"{position[0]}:{position[1]}"


def parse_range_set(text: str) -> list[tuple[Position, Position]]:
    """``"[(3:5..3:7], (3:9..3:9]]"`` → open-closed ranges ``[((3, 5), (3, 7)), ...]``."""
    return [
        ((int(a), int(b)), (int(c), int(d))) for a, b, c, d in _POSITION_RANGE.findall(text or "")
    ]


def parse_batch_bits(value: str | int) -> int:
    """A batch-index ack state (``"0b101"`` or an int; bits set = still unacknowledged)."""
    return value if isinstance(value, int) else int(value, 0)


def parse_ranges(value: Iterable[Any]) -> list[tuple[int, int]]:
    """Key hash ranges as ``[(start, end), ...]`` from either stats form, sorted."""
    out: list[tuple[int, int]] = []
    for item in value or ():
        if isinstance(item, str):
            match = _RANGE_STRING.fullmatch(item.strip())
            if match is None:
                raise ValueError(f"not a key hash range: {item!r}")
            out.append((int(match.group(1)), int(match.group(2))))
        else:
            start, end = item
            out.append((int(start), int(end)))
    return sorted(out)


def consumer_key_hash_ranges(consumer: Mapping[str, Any]) -> list[tuple[int, int]]:
    """A consumer's ranges: 4.0's ``keyHashRangeArrays`` if present, else 3.x's strings."""
    arrays = consumer.get("keyHashRangeArrays")
    if arrays:
        return parse_ranges(arrays)
    return parse_ranges(consumer.get("keyHashRanges") or ())


def subscription_key_hash_ranges(
    subscription: Mapping[str, Any],
) -> dict[str, list[tuple[int, int]]]:
    """Consumer name → its key hash ranges, for the consumers that report any."""
    out: dict[str, list[tuple[int, int]]] = {}
    for consumer in subscription.get("consumers") or ():
        ranges = consumer_key_hash_ranges(consumer)
        if ranges:
            out.setdefault(str(consumer.get("consumerName")), []).extend(ranges)
    return {name: sorted(r) for name, r in out.items()}


def key_hash_space(ranges: Mapping[str, Iterable[tuple[int, int]]]) -> int:
    """The key space the ranges live in: 65536 slots, or the 31-bit ring of 3.x hashing."""
    top = max((end for rs in ranges.values() for _start, end in rs), default=0)
    return SLOT_SPACE if top <= SLOT_SPACE else RING_SPACE
