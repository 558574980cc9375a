"""Key_Shared AUTO_SPLIT hash ranges: Pulsar 3.3's ``HashRangeAutoSplitStickyKeyConsumerSelector``.

State is Pulsar's ``TreeMap<upperKey, consumer>``, kept here as a sorted list of upper keys
(searched with :mod:`bisect`) plus the owner of each key. Consumer ``k`` owns the slots
``(previous key, k]``; the first range starts at 0.

* The first consumer gets key ``range_size`` (65536), reported as ``[0, 65536]``; key 65536
  is never a slot (slots are ``0..65535``) and only bounds the top range.
* A new consumer splits the biggest range. A range's size is ``key - lowerKey`` with
  ``lowerKey = 0`` for the first key (so the first range counts one slot short, as in
  Pulsar); only a strictly bigger size wins, so ties go to the leftmost range. The split
  point is ``key - ((key - lowerKey) >> 1)``; the newcomer takes the lower part
  ``(lowerKey, split]`` and the old owner keeps ``(split, key]``. When ``key - lowerKey <= 1``
  nothing can be split and the consumer is rejected, so at most ``range_size`` consumers fit.
* Removing the owner of the top key hands its range DOWN: the lower neighbour moves up to the
  top key. Any other removal deletes the key, so the range passes UP to the next consumer.
* ``select(hash)`` = owner of the first key ``>= hash % range_size``.
"""

from __future__ import annotations

from bisect import bisect_left, insort

from ..errors import ConsumerAssignError
from .base import C, HashRange, StickyKeyConsumerSelector
from .hashing import RANGE_SIZE

__all__ = ["HashRangeAutoSplitStickyKeyConsumerSelector"]


class HashRangeAutoSplitStickyKeyConsumerSelector(StickyKeyConsumerSelector[C]):
    """Splits the biggest hash range in two for every consumer that joins."""

    def __init__(self, range_size: int = RANGE_SIZE) -> None:
        if range_size < 2 or range_size & (range_size - 1):
            raise ValueError(f"range size must be a power of 2 and >= 2, got {range_size}")
        self.range_size = range_size
        self._keys: list[int] = []  # ascending upper keys
        self._owners: list[C] = []  # _owners[i] owns (_keys[i-1], _keys[i]]
        self._key_of: dict[C, int] = {}  # consumer -> its upper key, in joining order

    @property
    def consumers(self) -> tuple[C, ...]:
        return tuple(self._key_of)

    def __contains__(self, consumer: object) -> bool:
        return consumer in self._key_of

    def add_consumer(self, consumer: C) -> None:
        if consumer in self._key_of:
            raise ConsumerAssignError(
                f"Consumer {consumer.consumer_name} is already assigned a hash range"
            )
        if not self._keys:
            self._put(self.range_size, consumer)
            return
        index = self._biggest_range_index()
        key = self._keys[index]
        lower_key = self._keys[index - 1] if index else 0
        if key - lower_key <= 1:
            raise ConsumerAssignError(
                f"No more range can assigned to new consumer, assigned consumers {len(self._keys)}"
            )
        self._put(key - ((key - lower_key) >> 1), consumer)

    def remove_consumer(self, consumer: C) -> None:
        key = self._key_of.pop(consumer, None)
        if key is None:
            return
        index = bisect_left(self._keys, key)
        if key == self.range_size and len(self._keys) > 1:
            # The top owner leaves: its lower neighbour moves up to the top key.
            neighbour = self._owners[index - 1]
            del self._keys[index - 1]
            del self._owners[index - 1]
            self._owners[-1] = neighbour
            self._key_of[neighbour] = key
        else:
            del self._keys[index]
            del self._owners[index]

    def select(self, sticky_key_hash: int) -> C | None:
        if not self._keys:
            return None
        return self._owners[bisect_left(self._keys, sticky_key_hash % self.range_size)]

    def consumer_key_hash_ranges(self) -> dict[C, list[HashRange]]:
        result: dict[C, list[HashRange]] = {}
        start = 0
        for key, owner in zip(self._keys, self._owners, strict=True):
            result.setdefault(owner, []).append((start, key))
            start = key + 1
        return result

    def upper_keys(self) -> list[tuple[int, C]]:
        """The raw ``TreeMap`` entries ``(upper key, consumer)``, ascending."""
        return list(zip(self._keys, self._owners, strict=True))

    def _put(self, key: int, consumer: C) -> None:
        index = bisect_left(self._keys, key)
        insort(self._keys, key)
        self._owners.insert(index, consumer)
        self._key_of[consumer] = key

    def _biggest_range_index(self) -> int:
        """``findBiggestRange``: index of the first key with the largest ``key - lowerKey``."""
        best_index, best_size, lower_key = 0, 0, 0
        for index, key in enumerate(self._keys):
            if key - lower_key > best_size:
                best_index, best_size = index, key - lower_key
            lower_key = key
        return best_index
