"""``MessageDeduplication``: drop a message whose (producer, sequence id) is already stored.

Per topic, the highest sequence id persisted per producer name, plus the positions of
recent ones so that the ``deduplicated`` event names the original (the duplicate's receipt
carries message id ``-1:-1``, as Pulsar's, never another message's id). The state is
snapshotted in the metadata store and, on open, brought up to date by reading the entries
written after the snapshot, so de-duplication survives a restart (crash included).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from .entry import decode_entry
from .storage.base import ManagedLedger, Position

_RECENT = 1000
NOT_FOUND: Position = (-1, -1)


class MessageDeduplication:
    """De-duplication state of one topic."""

    def __init__(self) -> None:
        self.highest_sequence_id: dict[str, int] = {}
        self._recent: dict[str, OrderedDict[int, Position]] = {}
        self.snapshot_position: Position | None = None

    def is_duplicate(self, producer_name: str, sequence_id: int) -> bool:
        highest = self.highest_sequence_id.get(producer_name)
        return highest is not None and sequence_id <= highest

    def original_position(self, producer_name: str, sequence_id: int) -> Position:
        return self._recent.get(producer_name, {}).get(sequence_id, NOT_FOUND)

    def record(self, producer_name: str, sequence_id: int, position: Position) -> None:
        if sequence_id > self.highest_sequence_id.get(producer_name, -1):
            self.highest_sequence_id[producer_name] = sequence_id
        recent = self._recent.setdefault(producer_name, OrderedDict())
        recent[sequence_id] = position
        while len(recent) > _RECENT:
            recent.popitem(last=False)

    def snapshot(self, position: Position) -> dict[str, Any]:
        self.snapshot_position = position
        return {
            "position": list(position),
            "producers": dict(self.highest_sequence_id),
        }

    @classmethod
    def recover(
        cls, ledger: ManagedLedger, snapshot: dict[str, Any] | None
    ) -> MessageDeduplication:
        """State from a snapshot plus every entry written after it."""
        dedup = cls()
        start = ledger.first_position()
        if snapshot:
            dedup.highest_sequence_id.update(snapshot.get("producers", {}))
            snap = tuple(snapshot.get("position", ()))
            if len(snap) == 2:
                start = max(start, ledger.next_position(snap))  # type: ignore[arg-type]
        position = start
        while position <= ledger.last_confirmed:
            batch = ledger.read_entries(position, 512)
            if not batch:
                break
            for pos, data in batch:
                if data is None:
                    continue
                try:
                    meta, _ = decode_entry(data)
                except ValueError:  # a damaged entry names no producer to remember
                    continue
                if meta.producer_name:
                    dedup.record(meta.producer_name, meta.sequence_id, pos)
            position = ledger.next_position(batch[-1][0])
        return dedup
