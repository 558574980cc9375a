"""``ManagedCursor``: a subscription's position in a managed ledger.

State is Pulsar's: the mark-delete position (everything at or below it is acknowledged),
the individually deleted ranges above it, per-entry batch-index ack bitsets (bits set =
messages of the batch not yet acknowledged), and the read position (next entry to read).
A durable cursor saves its state itself, through the metadata store it was opened with
(:meth:`ManagedCursor.persist`), as ``ManagedCursorImpl`` does; the read position is not
saved: after a restart, reading resumes just after the mark-delete.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from .entry import read_header
from .range_set import PositionRangeSet
from .storage.base import ManagedLedger, MetadataStore, Position

if TYPE_CHECKING:
    from .compaction import CompactedTopic


class ManagedCursor:
    """Read position and acknowledgement state of one subscription."""

    def __init__(
        self,
        name: str,
        ledger: ManagedLedger,
        mark_delete: Position,
        *,
        durable: bool = True,
        individually_deleted: PositionRangeSet | None = None,
        batch_deleted: dict[Position, int] | None = None,
        properties: dict[str, Any] | None = None,
        store: MetadataStore | None = None,
    ) -> None:
        self.name = name
        self.ledger = ledger
        self.durable = durable
        self.store = store if durable else None
        self.mark_delete_position: Position = mark_delete
        self.individually_deleted = individually_deleted or PositionRangeSet()
        self.batch_deleted: dict[Position, int] = batch_deleted or {}
        self.properties: dict[str, Any] = properties or {}
        self.read_position: Position = ledger.next_position(mark_delete)
        self.dirty = False
        self._advance_mark_delete()

    # -- creation and persistence ---------------------------------------------------------

    @classmethod
    def at_start_position(
        cls, name: str, ledger: ManagedLedger, earliest: bool, *, durable: bool = True,
        store: MetadataStore | None = None,
    ) -> ManagedCursor:
        """A new cursor at the start (``earliest``) or end (latest) of the ledger."""
        if earliest:
            mark_delete = ledger.previous_position(ledger.first_position())
        else:
            mark_delete = ledger.last_confirmed
        cursor = cls(name, ledger, mark_delete, durable=durable, store=store)
        cursor.dirty = durable
        return cursor

    @classmethod
    def at_message(
        cls, name: str, ledger: ManagedLedger, position: Position, inclusive: bool,
        *, durable: bool = False, store: MetadataStore | None = None,
    ) -> ManagedCursor:
        """A cursor whose first read is ``position`` (inclusive) or the entry after it."""
        mark_delete = ledger.previous_position(position) if inclusive else position
        return cls(name, ledger, _clamp(ledger, mark_delete), durable=durable, store=store)

    def state(self) -> dict[str, Any]:
        return {
            "markDelete": list(self.mark_delete_position),
            "individuallyDeleted": self.individually_deleted.to_list(),
            "batchDeleted": [[p[0], p[1], bits] for p, bits in self.batch_deleted.items()],
            "properties": self.properties,
        }

    @classmethod
    def from_state(
        cls, name: str, ledger: ManagedLedger, state: dict[str, Any],
        store: MetadataStore | None = None,
    ) -> ManagedCursor:
        return cls(
            name,
            ledger,
            _clamp(ledger, tuple(state["markDelete"])),
            individually_deleted=PositionRangeSet.from_list(state.get("individuallyDeleted", [])),
            batch_deleted={(l_, e): bits for l_, e, bits in state.get("batchDeleted", [])},
            properties=dict(state.get("properties", {})),
            store=store,
        )

    def persist(self) -> None:
        """Save the durable state through the store (a cursor with no store keeps none)."""
        if self.store is not None:
            self.store.put_cursor(self.ledger.name, self.name, self.state())
        self.dirty = False

    def delete_state(self) -> None:
        """Forget the saved state (the subscription is gone)."""
        if self.store is not None:
            self.store.delete_cursor(self.ledger.name, self.name)

    # -- reading --------------------------------------------------------------------------

    def has_more_entries(self) -> bool:
        return self.read_position <= self.ledger.last_confirmed

    def read_entries(self, max_entries: int) -> list[tuple[Position, bytes | None]]:
        """Up to ``max_entries`` unacknowledged entries from the read position, moving it on."""
        result: list[tuple[Position, bytes | None]] = []
        while len(result) < max_entries and self.has_more_entries():
            batch = self.ledger.read_entries(self.read_position, max_entries - len(result))
            if not batch:
                # Nothing left at or after the read position (e.g. it still points into a
                # ledger that was rolled over): move it to where the next entry will land.
                self.read_position = self.ledger.next_position(self.ledger.last_confirmed)
                break
            md = self.mark_delete_position
            if self.individually_deleted:
                deleted = self.individually_deleted
                result += [e for e in batch if e[0] > md and e[0] not in deleted]
            elif batch[0][0] > md:  # a read is ascending: all of it is past the mark-delete
                result += batch
            else:  # nothing acked out of order: is_deleted() comes down to this
                result += [e for e in batch if e[0] > md]
            self.read_position = self.ledger.next_position(batch[-1][0])
        return result

    def read_compacted_entries(
        self, compacted: CompactedTopic, max_entries: int
    ) -> list[tuple[Position, bytes | None]]:
        """Like :meth:`read_entries`, from the compacted ledger while the read position is
        at or before its horizon (``CompactedTopicImpl``), then from the log after it.

        A read position at the start of the log reads the compacted ledger from its first
        entry, whose ledgers may be trimmed already."""
        if not compacted.covers(self.read_position):
            return self.read_entries(max_entries)
        start = self.read_position
        if start <= self.ledger.first_position():
            start = (-1, -1)
        entries, last = compacted.read(start, max_entries, self.is_deleted)
        assert compacted.horizon is not None
        if last is None or last >= compacted.entries[-1][0]:
            self.read_position = self.ledger.next_position(compacted.horizon)
        else:  # a position between compacted entries: the next read starts after ``last``
            self.read_position = (last[0], last[1] + 1)
        return list(entries)

    def is_deleted(self, position: Position) -> bool:
        return position <= self.mark_delete_position or position in self.individually_deleted

    def iter_unacked(self) -> Iterator[Position]:
        """The unacknowledged positions after the mark-delete, oldest first, read lazily."""
        ledger = self.ledger
        position = ledger.next_position(self.mark_delete_position)
        while position <= ledger.last_confirmed:
            if not self.is_deleted(position):
                yield position
            position = ledger.next_position(position)

    def find_position_by_publish_time(
        self, publish_time: int, start: Position | None = None
    ) -> Position:
        """The first entry from ``start`` (default: the ledger's first) published at or after
        ``publish_time``, or the position after the last entry if none was."""
        ledger = self.ledger
        position = start if start is not None else ledger.first_position()
        while position <= ledger.last_confirmed:
            batch = ledger.read_entries(position, 256)
            if not batch:
                break
            for pos, data in batch:
                if data is not None and read_header(data).publish_time >= publish_time:
                    return pos
            position = ledger.next_position(batch[-1][0])
        return ledger.next_position(ledger.last_confirmed)

    def rewind(self) -> None:
        """Read again from just after the mark-delete position (failover switch, redelivery)."""
        self.read_position = self.ledger.next_position(self.mark_delete_position)

    def seek(self, position: Position) -> None:
        """Move the read position without touching acknowledgements."""
        self.read_position = position

    def reset(self, position: Position) -> None:
        """Reset the cursor so ``position`` is the next entry read; acks above it are dropped."""
        self.mark_delete_position = _clamp(self.ledger, self.ledger.previous_position(position))
        self.individually_deleted.clear()
        self.batch_deleted.clear()
        self.read_position = self.ledger.next_position(self.mark_delete_position)
        self.dirty = True

    # -- acknowledging --------------------------------------------------------------------

    def delete(self, positions: Iterable[Position]) -> bool:
        """Individually acknowledge entries; return whether the mark-delete moved."""
        positions = positions if isinstance(positions, list) else list(positions)
        if not positions:
            return False
        # The entry before (l, e > 0) is (l, e - 1) whenever the ledger says so for the
        # highest position acked: ask it once per call, not once per scattered entry
        # (Key_Shared acks are mostly scattered).
        known: Position = (-1, -1)
        top = max(positions)
        if top[1] > 0 and self.ledger.previous_position(top) == (top[0], top[1] - 1):
            known = top
        added = self.individually_deleted.add_entries(
            positions, self.mark_delete_position, self.ledger.previous_position, known
        )
        if not added:
            return False
        batch_deleted = self.batch_deleted
        if batch_deleted:
            for position in added:
                batch_deleted.pop(position, None)
        self.dirty = True
        return self._advance_mark_delete()

    def delete_batch_indexes(self, position: Position, unacked_bits: int, batch_size: int) -> bool:
        """AND a client ack set (bits set = still unacked) into the entry's batch state.

        When no bit is left the whole entry is acknowledged. Returns whether the mark-delete
        moved.
        """
        if self.is_deleted(position):
            return False
        current = self.batch_deleted.get(position, (1 << batch_size) - 1)
        remaining = current & unacked_bits
        if remaining == 0:
            return self.delete([position])
        self.batch_deleted[position] = remaining
        self.dirty = True
        return False

    def mark_delete(self, position: Position) -> bool:
        """Cumulatively acknowledge everything up to ``position``."""
        if position <= self.mark_delete_position:
            return False
        self.mark_delete_position = position
        self.dirty = True
        self._advance_mark_delete()
        return True

    def _advance_mark_delete(self) -> bool:
        moved = False
        while True:
            first = self.individually_deleted.first()
            if first is None:
                break
            lower, upper = first
            md = self.mark_delete_position
            if lower > md and (
                # within one ledger an entry sits in the gap; across ledgers, count them
                lower[0] == md[0]
                or self.ledger.count_entries((md[0], md[1] + 1), lower) > 0
            ):
                break
            if upper > md:
                self.mark_delete_position = upper
                moved = True
            self.individually_deleted.remove_up_to(self.mark_delete_position)
        # Every range left starts above the mark-delete position (the loop stops only then).
        if self.batch_deleted:
            md = self.mark_delete_position
            for position in [p for p in self.batch_deleted if p <= md]:
                del self.batch_deleted[position]
        if self.read_position <= self.mark_delete_position:
            self.read_position = self.ledger.next_position(self.mark_delete_position)
        return moved

    # -- counting -------------------------------------------------------------------------

    def number_of_entries_in_backlog(self) -> int:
        """Entries after the mark-delete position that are not individually acknowledged."""
        md = self.mark_delete_position
        total = self.ledger.count_entries((md[0], md[1] + 1), self.ledger.last_confirmed)
        count = self.ledger.count_entries
        acked = sum(count((lo[0], lo[1] + 1), up) for lo, up in self.individually_deleted)
        return max(0, total - acked)

    def number_of_entries_since_first_not_acked(self) -> int:
        """``ManagedCursorImpl.getNumberOfEntriesSinceFirstNotAckedMessage``.

        The managed ledger's count of ``(mark-delete, read position]``, position arithmetic
        as ``ManagedLedgerImpl.getNumberOfEntries`` does it: the read position itself counts
        although it is the next entry to read, and individually acked entries are not
        subtracted. 0 when the mark-delete is not behind the read position. Key_Shared's
        recently-joined rule compares it with 1.
        """
        md, rp = self.mark_delete_position, self.read_position
        if md >= rp:
            return 0
        if md[0] == rp[0]:
            return rp[1] - md[1]
        count = rp[1] + 1  # entries of the read position's ledger, up to it
        for info in self.ledger.ledgers:
            if info.ledger_id == md[0]:
                count += info.entries - (md[1] + 1)
            elif md[0] < info.ledger_id < rp[0]:
                count += info.entries
        return count

    def internal_stats(self) -> dict[str, Any]:
        md, rp = self.mark_delete_position, self.read_position
        return {
            "markDeletePosition": f"{md[0]}:{md[1]}",
            "readPosition": f"{rp[0]}:{rp[1]}",
            "individuallyDeletedMessages": str(self.individually_deleted),
            "batchDeletedIndexes": {
                f"{p[0]}:{p[1]}": bin(bits) for p, bits in sorted(self.batch_deleted.items())
            },
            "numberOfEntriesSinceFirstNotAckedMessage": (
                self.number_of_entries_since_first_not_acked()
            ),
            "durable": self.durable,
            "properties": dict(self.properties),
        }


def _clamp(ledger: ManagedLedger, mark_delete: Position) -> Position:
    """Keep a mark-delete position inside the ledger (not before the first kept entry)."""
    floor = ledger.previous_position(ledger.first_position())
    end = ledger.last_confirmed
    if mark_delete < floor:
        return floor
    if mark_delete > end:
        return end
    return mark_delete
