"""Topic compaction: the latest value per key, up to a horizon (Pulsar's ``TwoPhaseCompactor``
and ``CompactedTopicImpl``).

Phase one reads the topic from its first entry to the last confirmed one (the compaction
horizon) and remembers, per partition key, the position of its latest message; a message
with an empty or null payload is a tombstone and forgets its key. Phase two keeps, in log
order, the entries that are the latest of their key. What was kept is the *compacted
ledger*: its entries keep their original positions (message ids), so acknowledging them
moves the subscription's cursor as usual. Messages without a key are left out
(``topicCompactionRetainNullKey=false``, Pulsar's default).

Compaction opens batches (:mod:`.raw_batch`): each message of a batch counts by itself, its
id being the entry's position and its batch index. A batch some of whose messages are
superseded, tombstones or keyless is rebuilt with only the survivors, which keep their batch
indexes (the others stay as empty slots marked *compacted out*); a batch with no survivor
is left out; one that cannot be opened (encrypted, corrupt) is kept whole. What the last
compaction left out — entries, and messages of the batches it kept — is remembered for the
internal stats (and the CursorView).

The horizon is also the mark-delete position of the ``__compaction`` subscription, which
holds back trimming of what was not yet compacted, as in Pulsar. The compacted ledger is
saved through the metadata store and reloaded with the topic.

A ``read_compacted`` consumer (Exclusive/Failover, persistent topic) whose read position is
at or before the horizon reads the compacted ledger from there, then the topic's own log
after the horizon (``CompactedTopicImpl.asyncReadEntriesOrWait``).
"""

from __future__ import annotations

import base64
import logging
from bisect import bisect_left
from collections.abc import Iterable
from typing import Any

from .entry import decode_entry, read_header
from .range_set import PositionRangeSet
from .raw_batch import read_batch, rebatch
from .storage.base import ManagedLedger, MetadataStore, Position

log = logging.getLogger(__name__)

COMPACTION_SUBSCRIPTION = "__compaction"
# Property of the ``__compaction`` cursor naming the compacted ledger (Pulsar's key).
COMPACTED_TOPIC_LEDGER_PROPERTY = "CompactedTopicLedger"

NOT_RUN, RUNNING, SUCCESS, ERROR = "NOT_RUN", "RUNNING", "SUCCESS", "ERROR"


MessageKey = tuple[Position, int]
"""A message's place: its entry's position and its batch index (-1: not batched)."""


def compact(entries: Iterable[tuple[Position, bytes | None]]) -> list[tuple[Position, bytes]]:
    """The two phases over ``entries`` (log order): what the compacted ledger keeps, batches
    rebuilt with only their surviving messages.

    ``ValueError`` names the first unreadable entry (nothing is kept then).
    """
    history = list(entries)
    latest: dict[str, MessageKey] = {}
    keyed: dict[Position, str] = {}
    batches: dict[Position, list] = {}
    for position, data in history:  # phase one: the latest message of each key
        if data is None:
            raise ValueError(f"entry {position[0]}:{position[1]} is unreadable")
        if read_header(data).batched:
            try:
                messages = read_batch(data)
            except ValueError as exc:  # kept whole, as Pulsar does
                log.info("compaction keeps entry %d:%d whole: a batch it cannot open (%s)",
                         *position, exc)
                continue
            batches[position] = messages
            for index, (key, size, gone) in enumerate(messages):
                if gone or key is None:
                    continue
                if size:
                    latest[key] = (position, index)
                else:
                    latest.pop(key, None)
            continue
        metadata, payload = decode_entry(data)
        key = metadata.partition_key
        if key is None:
            continue
        keyed[position] = key
        if metadata.null_value or not payload:
            latest.pop(key, None)
        else:
            latest[key] = (position, -1)
    kept: list[tuple[Position, bytes]] = []
    for position, data in history:  # phase two
        assert data is not None
        messages = batches.get(position)
        if messages is not None:
            keep = [i for i, (key, size, gone) in enumerate(messages)
                    if not gone and size and key is not None and latest.get(key) == (position, i)]
            if len(keep) == len(messages):
                kept.append((position, data))
            elif keep:
                kept.append((position, rebatch(data, keep)))
            continue
        key = keyed.get(position)
        if key is None:
            if read_header(data).batched:  # a batch that cannot be opened
                kept.append((position, data))
        elif latest.get(key) == (position, -1):
            kept.append((position, data))
    return kept


class CompactedTopic:
    """The compacted ledger of one topic, its horizon and the last compaction's status."""

    def __init__(self, topic_name: str, store: MetadataStore) -> None:
        self._store = store
        self._scope = f"{topic_name}#compactedLedger"
        self.horizon: Position | None = None
        self.ledger_id = -1
        self.entries: list[tuple[Position, bytes]] = []
        self._positions: list[Position] = []
        self.status = NOT_RUN
        self.last_error = ""
        self.removed = 0  # entries of the horizon the last compaction left out
        # Entries up to the horizon the compacted ledger leaves out, and the batch indexes
        # compacted out of the batches it keeps.
        self.removed_entries = PositionRangeSet()
        self.compacted_out: dict[Position, list[int]] = {}
        saved = store.get_policies(self._scope)
        if saved:
            self._load(saved)

    # -- compacting -----------------------------------------------------------------------

    def run(self, ledger: ManagedLedger, first: Position, horizon: Position) -> bool:
        """Compact ``[first, horizon]`` of ``ledger`` (plus what the last compaction kept
        before ``first``); return whether it succeeded (``status`` says why not)."""
        self.status = RUNNING
        try:
            prior = [e for e in self.entries if e[0] < first]
            history = [*prior, *_read(ledger, first, horizon)]
            kept = compact(history)
        except ValueError as exc:
            self.status, self.last_error = ERROR, str(exc)
            return False
        self.removed = len(history) - len(kept)
        self._note_removed(history, kept)
        self.ledger_id = self._store.next_ledger_id()
        self.horizon = horizon
        self._set_entries(kept)
        self._store.put_policies(self._scope, self._state())
        self.status, self.last_error = SUCCESS, ""
        return True

    def _note_removed(self, history: list[tuple[Position, bytes | None]],
                      kept: list[tuple[Position, bytes]]) -> None:
        """Add the entries of ``history`` left out of ``kept`` to :attr:`removed_entries` (a run
        of them is the range from the entry before it: what lies between was left out
        already), and note the batch indexes compacted out of the batches kept rebuilt."""
        original = dict(history)
        kept_at = {p for p, _ in kept}
        previous: Position | None = None
        for position, _ in history:
            if position not in kept_at:
                lower = previous if previous is not None else (position[0], position[1] - 1)
                self.removed_entries.add(lower, position)
            previous = position
        self.compacted_out = {}
        for position, data in kept:
            if data is not original[position]:  # a batch compaction rebuilt
                gone = [i for i, m in enumerate(read_batch(data)) if m.compacted_out]
                if gone:
                    self.compacted_out[position] = gone

    def delete(self) -> None:
        self._store.put_policies(self._scope, {})
        self.horizon, self.entries, self._positions = None, [], []
        self.removed_entries, self.compacted_out = PositionRangeSet(), {}

    # -- reading --------------------------------------------------------------------------

    def covers(self, read_position: Position) -> bool:
        return self.horizon is not None and read_position <= self.horizon

    def read(
        self, start: Position, max_entries: int, is_deleted: Any
    ) -> tuple[list[tuple[Position, bytes]], Position | None]:
        """Up to ``max_entries`` compacted entries at or after ``start`` that ``is_deleted``
        does not reject, and the last position looked at (``None``: none left)."""
        index = bisect_left(self._positions, start)
        out: list[tuple[Position, bytes]] = []
        last: Position | None = None
        while index < len(self.entries) and len(out) < max_entries:
            position, data = self.entries[index]
            last = position
            if not is_deleted(position):
                out.append((position, data))
            index += 1
        return out, last

    def status_json(self) -> dict[str, Any]:
        """Pulsar's ``LongRunningProcessStatus``."""
        return {"status": self.status, "lastError": self.last_error}

    # -- persistence ----------------------------------------------------------------------

    def _set_entries(self, entries: list[tuple[Position, bytes]]) -> None:
        self.entries = entries
        self._positions = [p for p, _ in entries]

    def _state(self) -> dict[str, Any]:
        assert self.horizon is not None
        return {
            "ledgerId": self.ledger_id,
            "horizon": list(self.horizon),
            "removed": self.removed,
            "removedEntries": self.removed_entries.to_list(),
            "compactedOut": [[p[0], p[1], gone] for p, gone in self.compacted_out.items()],
            "entries": [
                [p[0], p[1], base64.b64encode(data).decode("ascii")] for p, data in self.entries
            ],
        }

    def _load(self, saved: dict[str, Any]) -> None:
        self.ledger_id = int(saved["ledgerId"])
        self.horizon = (int(saved["horizon"][0]), int(saved["horizon"][1]))
        self.removed = int(saved.get("removed", 0))
        self.removed_entries = PositionRangeSet.from_list(saved.get("removedEntries", []))
        self.compacted_out = {
            (int(l_), int(e)): [int(i) for i in gone]
            for l_, e, gone in saved.get("compactedOut", [])
        }
        self._set_entries(
            [((int(l_), int(e)), base64.b64decode(b)) for l_, e, b in saved["entries"]]
        )
        self.status = SUCCESS


def _read(
    ledger: ManagedLedger, first: Position, horizon: Position
) -> Iterable[tuple[Position, bytes | None]]:
    position = first
    while position <= horizon:
        batch = ledger.read_entries(position, 256)
        batch = [e for e in batch if e[0] <= horizon]
        if not batch:
            return
        yield from batch
        position = ledger.next_position(batch[-1][0])
