"""Client-side acknowledgement grouping (Java's ``PersistentAcknowledgmentsGroupingTracker``).

Sans-I/O: the consumer feeds acks in, asks whether to flush now, and turns
:meth:`AckGroupingTracker.flush` results into ACK commands.

* Individual acks are held and flushed every ``group_time_ms`` (100 by default) or as soon
  as ``max_group_size`` (1000) are pending; ``group_time_ms == 0`` flushes every ack at once.
* A cumulative ack keeps only the highest id.
* Batches: the consumer registers each batch it receives with its still-unacked bits (the
  broker's ack set when it sent one). Acking batch index ``i`` clears bit ``i``. The entry is
  acked once every bit is clear. Before that, with ``batch_index_ack_enabled`` the partial
  state is sent as an ack set ``[ledger, entry, unacked_bits, batch_size]``; without it
  nothing is sent (a partially acked batch is redelivered whole).
* Cumulative ack of batch index ``i`` clears bits ``0..i``: an empty set acks the entry
  cumulatively; otherwise with batch-index acks the entry is acked cumulatively with the
  ack set of the remaining bits, and without them the PREVIOUS entry ``(ledger, entry - 1)``
  is acked cumulatively (Java's ``MessageIdAdvUtils.discardBatch``-style rule).
* :meth:`is_duplicate` recognises redelivered messages already covered by an ack.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..message_id import MessageId
from .message import Message

__all__ = ["AckFlush", "AckGroupingTracker", "Position"]

Position = tuple[int, int]


@dataclass(slots=True)
class AckFlush:
    """Acks to send now."""

    individual: list[Position] = field(default_factory=list)
    ack_sets: list[list[int]] = field(default_factory=list)  # [ledger, entry, bits, size]
    cumulative: Position | None = None
    cumulative_ack_set: list[int] | None = None

    @property
    def is_empty(self) -> bool:
        return not self.individual and not self.ack_sets and self.cumulative is None

    def commands(self) -> list[dict[str, Any]]:
        """ACK command fields (without ``consumer_id``): individual first, then cumulative."""
        out: list[dict[str, Any]] = []
        if self.individual or self.ack_sets:
            cmd: dict[str, Any] = {
                "positions": [list(p) for p in self.individual]
                + [[s[0], s[1]] for s in self.ack_sets]
            }
            if self.ack_sets:
                cmd["ack_sets"] = [list(s) for s in self.ack_sets]
            out.append(cmd)
        if self.cumulative is not None:
            cmd = {"positions": [list(self.cumulative)], "cumulative": True}
            if self.cumulative_ack_set is not None:
                cmd["ack_sets"] = [list(self.cumulative_ack_set)]
            out.append(cmd)
        return out


def _parts(msg_id: Any) -> tuple[Position, int, int]:
    if type(msg_id) is Message:
        return msg_id._ack_parts
    if isinstance(msg_id, MessageId):  # the common case, read without method calls
        return (msg_id._ledger_id, msg_id._entry_id), msg_id._batch_index, msg_id._batch_size
    return (
        (msg_id.ledger_id(), msg_id.entry_id()),
        msg_id.batch_index(),
        msg_id.batch_size() if hasattr(msg_id, "batch_size") else 0,
    )


class AckGroupingTracker:
    """Groups a consumer's acks; see the module docstring for the rules."""

    def __init__(
        self,
        group_time_ms: int = 100,
        max_group_size: int = 1000,
        batch_index_ack_enabled: bool = False,
    ) -> None:
        self.group_time_ms = group_time_ms
        self.max_group_size = max_group_size
        self.batch_index_ack_enabled = batch_index_ack_enabled
        self._batches: dict[Position, list[int]] = {}  # position -> [unacked_bits, size]
        self._individual: set[Position] = set()
        self._ack_sets: dict[Position, tuple[int, int]] = {}
        self._cumulative: tuple[Position, int | None] | None = None  # pending
        self._last_cumulative: tuple[Position, int | None] | None = None  # sent

    # -- batches --------------------------------------------------------------------------

    def on_batch_received(self, position: Position, batch_size: int,
                          unacked_bits: int | None = None) -> None:
        """A batch arrived; ``unacked_bits`` is the broker's ack set (None = all unacked)."""
        full = (1 << batch_size) - 1
        bits = full if unacked_bits is None else unacked_bits & full
        self._batches[position] = [bits, batch_size]

    def pending_batch_bits(self, position: Position) -> int | None:
        state = self._batches.get(position)
        return None if state is None else state[0]

    def forget_batches(self) -> None:
        """Drop batch state (after a seek or a redelivery request)."""
        self._batches.clear()

    # -- adding acks ----------------------------------------------------------------------

    def add_individual(self, msg_id: Any) -> bool:
        """Ack one message; returns True when the caller should flush now."""
        return self.add_individuals((msg_id,))

    def add_individuals(self, msg_ids: Iterable[Any]) -> bool:
        """Ack each message of ``msg_ids`` (ids, or received messages); returns True when
        the caller should flush now. An ack of a batch index clears one bit."""
        batches, individual = self._batches, self._individual
        pending = False  # whether an ack to send was added (a partial batch adds none)
        # The batch of the previous ack (its messages are usually acked one after another):
        # its entry's Delivery, and its position, size and state as looked up for it.
        last: Any = None
        position: Position = (-1, -1)
        size = 0
        state: list[int] = []
        for msg_id in msg_ids:
            if type(msg_id) is Message:  # a received message acked as itself: no id made
                delivery = msg_id._delivery
                index = msg_id._index
                if delivery is not last:
                    position, size = delivery.position, delivery.batch_size
                    if index < 0 or size <= 0:
                        individual.add(position)
                        pending = True
                        continue
                    state = batches.get(position) or self._new_batch(position, size)
                    last = delivery
            else:
                position, index, size = _parts(msg_id)
                if index < 0 or size <= 0:
                    individual.add(position)
                    pending = True
                    continue
                state = batches.get(position) or self._new_batch(position, size)
                last = None
            bits = state[0] = state[0] & ~(1 << index)
            if bits == 0:
                del batches[position]
                self._ack_sets.pop(position, None)
                individual.add(position)
                pending = True
                last = None  # its state is gone: a repeated ack looks it up again
            elif self.batch_index_ack_enabled:
                self._ack_sets[position] = (bits, size)
                pending = True
        return pending and self._should_flush()

    def _new_batch(self, position: Position, size: int) -> list[int]:
        """The state of a batch acked before it was registered: every bit unacked."""
        state = self._batches[position] = [(1 << size) - 1, size]
        return state

    def add_cumulative(self, msg_id: Any) -> bool:
        """Ack everything up to ``msg_id``; returns True when the caller should flush now."""
        position, index, size = _parts(msg_id)
        bits: int | None = None
        target = position
        if index >= 0 and size > 0:
            state = self._batches.get(position, [(1 << size) - 1, size])
            remaining = state[0] & ~((1 << (index + 1)) - 1)
            if remaining == 0:
                self._batches.pop(position, None)
            elif self.batch_index_ack_enabled:
                self._batches[position] = [remaining, size]
                bits = remaining
            else:
                self._batches[position] = [remaining, size]
                target = (position[0], position[1] - 1)
        for p in [p for p in self._batches if p < position]:
            del self._batches[p]
        new = (target, bits)
        if self._cumulative is None or _cum_key(new) >= _cum_key(self._cumulative):
            self._cumulative = new
        return self.group_time_ms <= 0

    def _should_flush(self) -> bool:
        if self.group_time_ms <= 0:
            return True
        return len(self._individual) + len(self._ack_sets) >= self.max_group_size

    # -- queries --------------------------------------------------------------------------

    @property
    def has_pending(self) -> bool:
        return bool(self._individual or self._ack_sets or self._cumulative is not None)

    def is_duplicate(self, position: Position) -> bool:
        """Whether an arriving entry is already acked (pending or sent)."""
        for cum in (self._cumulative, self._last_cumulative):
            if cum is None:
                continue
            cum_pos, cum_bits = cum
            if position < cum_pos or (position == cum_pos and cum_bits is None):
                return True
        return position in self._individual

    # -- flushing -------------------------------------------------------------------------

    def flush(self) -> AckFlush:
        """Take everything pending."""
        out = AckFlush(
            individual=sorted(self._individual),
            ack_sets=[[p[0], p[1], b, s] for p, (b, s) in sorted(self._ack_sets.items())],
        )
        self._individual = set()
        self._ack_sets = {}
        if self._cumulative is not None:
            (pos, bits) = self._cumulative
            out.cumulative = pos
            if bits is not None:
                out.cumulative_ack_set = [pos[0], pos[1], bits, self._batch_size(pos)]
            if self._last_cumulative is None or _cum_key(self._cumulative) >= _cum_key(
                self._last_cumulative
            ):
                self._last_cumulative = self._cumulative
            self._cumulative = None
        return out

    def _batch_size(self, position: Position) -> int:
        state = self._batches.get(position)
        return state[1] if state else 0

    def reset_cumulative(self) -> None:
        """Forget the cumulative high-water mark (after a seek moves the cursor back)."""
        self._cumulative = None
        self._last_cumulative = None


def _cum_key(cum: tuple[Position, int | None]) -> tuple[Position, int]:
    pos, bits = cum
    # A full ack of an entry is "higher" than any partial ack of it; among partial acks,
    # fewer remaining bits is higher.
    return (pos, 1 << 62 if bits is None else -bits)
