"""A set of open-closed position ranges ``(lower, upper]``, as Pulsar's cursor keeps acks.

An individual ack of position ``p`` adds ``(previous(p), p]``, so acks of neighbouring
entries merge into one range, across ledger boundaries too. Ranges are kept sorted,
disjoint and non-touching in two parallel lists searched with ``bisect``.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator

from .storage.base import Position


class PositionRangeSet:
    """Sorted, disjoint open-closed ranges of positions."""

    __slots__ = ("_lowers", "_uppers")

    def __init__(self) -> None:
        self._lowers: list[Position] = []
        self._uppers: list[Position] = []

    def add(self, lower: Position, upper: Position) -> None:
        """Add ``(lower, upper]``, merging with overlapping or touching ranges."""
        if not lower < upper:
            raise ValueError(f"empty range ({lower}, {upper}]")
        lowers, uppers = self._lowers, self._uppers
        i = bisect_left(uppers, lower)
        j = bisect_right(lowers, upper)
        # The two common cases without building slices: a new range, or one merged with a
        # single neighbour (acks mostly extend or fill in next to an existing range).
        if i == j:
            lowers.insert(i, lower)
            uppers.insert(i, upper)
        elif j == i + 1:
            if lowers[i] < lower:
                lower = lowers[i]
            if uppers[i] > upper:
                upper = uppers[i]
            lowers[i] = lower
            uppers[i] = upper
        else:
            lower = min(lower, lowers[i])
            upper = max(upper, uppers[j - 1])
            lowers[i:j] = [lower]
            uppers[i:j] = [upper]

    def add_entries(
        self,
        positions: list[Position],
        floor: Position,
        previous: Callable[[Position], Position],
        known: Position = (-1, -1),
    ) -> list[Position]:
        """Add ``(previous(p), p]`` for each ``p`` above ``floor`` and not in the set yet.

        Returns those positions (an entry listed twice counts once). ``known`` = ``(l, k)``
        tells that ``previous((l, e))`` is ``(l, e - 1)`` for ``0 < e <= k``, sparing the
        call. An entry right after the one added before extends its range (the entry before
        ``(l, e + 1)`` is ``(l, e)`` when ``(l, e)`` is one); any other costs one search:
        it joins the range ending just before it, the range starting at it, both, or
        neither (anything else takes :meth:`add`).
        """
        lowers, uppers = self._lowers, self._uppers
        known_ledger, known_entry = known
        added: list[Position] = []
        # The range that ends at the entry added last (run_index >= 0): the next entry of the
        # same ledger extends it without a search, as consecutive acks mostly do.
        run_index = -1
        run_end: Position = floor
        for position in positions:
            if (
                run_index >= 0
                and position[1] == run_end[1] + 1
                and position[0] == run_end[0]
            ):
                added.append(position)
                after = run_index + 1
                if after < len(lowers) and lowers[after] == position:
                    uppers[run_index] = uppers[after]
                    del lowers[after], uppers[after]
                    run_index = -1
                else:
                    uppers[run_index] = run_end = position
                continue
            if position <= floor:
                continue
            i = bisect_left(uppers, position)
            # The range at i (if any) ends at or after ``position``; the ones before, below.
            at_range = i < len(uppers)
            if at_range and lowers[i] < position:
                continue  # already acknowledged
            ledger_id, entry_id = position
            if ledger_id == known_ledger and 0 < entry_id <= known_entry:
                lower: Position = (ledger_id, entry_id - 1)
            else:
                lower = previous(position)
                if not lower < position:
                    raise ValueError(f"empty range ({lower}, {position}]")
            added.append(position)
            run_index = -1
            joins_next = at_range and lowers[i] == position
            if i and uppers[i - 1] >= lower:
                if uppers[i - 1] > lower:
                    self.add(lower, position)  # overlaps more than a neighbour: rare
                elif joins_next:
                    uppers[i - 1] = uppers[i]
                    del lowers[i], uppers[i]
                else:
                    uppers[i - 1] = run_end = position
                    run_index = i - 1
            elif joins_next:
                lowers[i] = lower
            else:
                lowers.insert(i, lower)
                uppers.insert(i, position)
                run_end = position
                run_index = i
        return added

    def __contains__(self, position: Position) -> bool:
        i = bisect_left(self._uppers, position)
        return i < len(self._uppers) and self._lowers[i] < position

    def first(self) -> tuple[Position, Position] | None:
        return (self._lowers[0], self._uppers[0]) if self._lowers else None

    def remove_up_to(self, position: Position) -> None:
        """Forget everything at or below ``position`` (the mark-delete moved there)."""
        i = bisect_right(self._uppers, position)
        del self._lowers[:i]
        del self._uppers[:i]
        if self._lowers and self._lowers[0] < position:
            self._lowers[0] = position

    def range_containing(self, position: Position) -> tuple[Position, Position] | None:
        i = bisect_left(self._uppers, position)
        if i < len(self._uppers) and self._lowers[i] < position:
            return (self._lowers[i], self._uppers[i])
        return None

    def clear(self) -> None:
        self._lowers.clear()
        self._uppers.clear()

    def __iter__(self) -> Iterator[tuple[Position, Position]]:
        return iter(zip(self._lowers, self._uppers, strict=True))

    def __len__(self) -> int:
        return len(self._lowers)

    def __bool__(self) -> bool:
        return bool(self._lowers)

    def to_list(self) -> list[list[int]]:
        return [[lo[0], lo[1], up[0], up[1]] for lo, up in self]

    @classmethod
    def from_list(cls, data: list[list[int]]) -> PositionRangeSet:
        ranges = cls()
        for l_ledger, l_entry, u_ledger, u_entry in data:
            ranges.add((l_ledger, l_entry), (u_ledger, u_entry))
        return ranges

    def __str__(self) -> str:
        """Pulsar's internal-stats form, e.g. ``[(3:5..3:7], (3:9..3:12]]``."""
        inner = ", ".join(f"({lo[0]}:{lo[1]}..{up[0]}:{up[1]}]" for lo, up in self)
        return f"[{inner}]"
