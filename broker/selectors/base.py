"""The contract every Key_Shared sticky-key consumer selector implements.

Mirrors Pulsar's ``StickyKeyConsumerSelector`` interface: a selector maps the hash of an
entry's sticky key to the consumer that owns it, and reports each consumer's key hash ranges
for the subscription stats. Selectors are sans-I/O and single-threaded; the dispatcher that
owns one serialises calls.

Versioning: :meth:`StickyKeyConsumerSelector.make_sticky_key_hash` turns sticky-key bytes into
the value :meth:`~StickyKeyConsumerSelector.select` takes. The 3.x selectors here take the
31-bit murmur hash (Pulsar's static ``makeStickyKeyHash``); a Pulsar 4.0 sibling class
(PIP-379: ``h % range + start``, 0 → 1) overrides that one method and keeps the interface.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Sequence
from typing import Generic, Protocol, TypeVar, runtime_checkable

from .hashing import sticky_key_hash

__all__ = [
    "HashRange",
    "HashRangeConsumer",
    "KeySharedConsumer",
    "StickyKeyConsumerSelector",
    "format_range",
]

HashRange = tuple[int, int]
"""An inclusive ``(start, end)`` range of hashes or slots, like Pulsar's ``Range``."""


@runtime_checkable
class KeySharedConsumer(Hashable, Protocol):
    """What a selector needs of a consumer: a hashable object with a name.

    Identity is the object's own ``__eq__``/``__hash__``; two consumers may share a name.
    """

    @property
    def consumer_name(self) -> str: ...


@runtime_checkable
class HashRangeConsumer(KeySharedConsumer, Protocol):
    """A consumer that declares fixed key hash ranges (``KeySharedMode.STICKY``, readers)."""

    @property
    def key_hash_ranges(self) -> Sequence[HashRange] | None: ...


C = TypeVar("C", bound=KeySharedConsumer)


def format_range(hash_range: HashRange) -> str:
    """Format an inclusive range as Pulsar's ``Range.toString()`` does: ``"[0, 16384]"``."""
    start, end = hash_range
    return f"[{start}, {end}]"


class StickyKeyConsumerSelector(ABC, Generic[C]):
    """Maps sticky-key hashes to consumers (Pulsar's ``StickyKeyConsumerSelector``)."""

    @abstractmethod
    def add_consumer(self, consumer: C) -> None:
        """Give ``consumer`` a share of the key space.

        Raises :class:`~pulsarlab.broker.errors.ConsumerAssignError` if it cannot, and then
        leaves the selector exactly as it was.
        """

    @abstractmethod
    def remove_consumer(self, consumer: C) -> None:
        """Take ``consumer``'s keys away and hand them to the others; unknown → no-op."""

    @abstractmethod
    def select(self, sticky_key_hash: int) -> C | None:
        """The consumer that owns ``sticky_key_hash`` (a 31-bit hash), or ``None``.

        ``None`` means no consumer, or (fixed ranges) no consumer declared that slot.
        """

    @abstractmethod
    def consumer_key_hash_ranges(self) -> dict[C, list[HashRange]]:
        """Each consumer's inclusive key hash ranges, ascending, in the order of the key space.

        Consumers with no range are left out.
        """

    @property
    @abstractmethod
    def consumers(self) -> tuple[C, ...]:
        """The consumers currently registered, in the order they were added."""

    def make_sticky_key_hash(self, sticky_key: bytes) -> int:
        """The value :meth:`select` takes for ``sticky_key`` (3.x: the 31-bit murmur hash)."""
        return sticky_key_hash(sticky_key)

    def select_for_key(self, sticky_key: bytes) -> C | None:
        """Shorthand for ``select(make_sticky_key_hash(sticky_key))``."""
        return self.select(self.make_sticky_key_hash(sticky_key))

    def formatted_key_hash_ranges(self) -> dict[C, list[str]]:
        """:meth:`consumer_key_hash_ranges` as Pulsar's stats print them (``"[0, 16384]"``)."""
        return {
            consumer: [format_range(r) for r in ranges]
            for consumer, ranges in self.consumer_key_hash_ranges().items()
        }

    def __contains__(self, consumer: object) -> bool:
        return consumer in self.consumers
