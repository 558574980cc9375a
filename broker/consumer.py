"""A consumer as the broker sees it (``ServerConsumer``): permits, pending acks and what it
may receive; the subscription types and Key_Shared declarations it subscribes with."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

from .rates import Rate
from .storage.base import Position

if TYPE_CHECKING:
    from .selectors.sticky import HashRangeExclusiveStickyKeyConsumerSelector


class SubType(StrEnum):
    """Subscription types, named as in Pulsar's protocol (``CommandSubscribe.SubType``)."""

    Exclusive = "Exclusive"
    Shared = "Shared"
    Failover = "Failover"
    Key_Shared = "Key_Shared"


class KeySharedMetaMode(StrEnum):
    """How a Key_Shared consumer's hash ranges are assigned (the protocol's ``KeySharedMode``
    in ``KeySharedMeta``; the client's own enum is ``pulsarlab.KeySharedMode``)."""

    AUTO_SPLIT = "AUTO_SPLIT"
    STICKY = "STICKY"


@dataclass(frozen=True, slots=True)
class KeySharedMeta:
    """What a Key_Shared consumer declares (``KeySharedMeta`` in Pulsar's protocol)."""

    key_shared_mode: KeySharedMetaMode = KeySharedMetaMode.AUTO_SPLIT
    hash_ranges: tuple[tuple[int, int], ...] = ()
    allow_out_of_order_delivery: bool = False


class PendingAck(NamedTuple):
    """An entry delivered to a consumer and not yet acknowledged (a tuple: one is made
    per entry dispatched)."""

    batch_size: int
    sticky_key_hash: int


_new_tuple = tuple.__new__  # a NamedTuple's own __new__ takes three times as long


class UnackedCounter:
    """Unacknowledged messages of a group of consumers (one subscription's), kept as they
    change so a subscription-wide limit costs nothing per message."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class ServerConsumer:
    """Broker-side state of one consumer of one subscription."""

    def __init__(
        self,
        consumer_id: int,
        consumer_name: str,
        *,
        conn: Any = None,
        priority_level: int = 0,
        batch_index_ack_enabled: bool = False,
        key_shared_meta: KeySharedMeta | None = None,
        key_hash_ranges: list[tuple[int, int]] | None = None,
        is_reader: bool = False,
        read_compacted: bool = False,
        connected_since_ms: int = 0,
        address: str = "",
        client_version: str = "",
    ) -> None:
        self.consumer_id = consumer_id
        self.consumer_name = consumer_name
        self.conn = conn
        self.priority_level = priority_level
        self.batch_index_ack_enabled = batch_index_ack_enabled
        self.key_shared_meta = key_shared_meta
        # Sticky ranges for Key_Shared STICKY, or the filter ranges of an Exclusive/Failover
        # consumer or reader (the selector protocol reads this attribute).
        self.key_hash_ranges: list[tuple[int, int]] = list(
            key_hash_ranges
            if key_hash_ranges is not None
            else (key_shared_meta.hash_ranges if key_shared_meta else ())
        )
        self.key_hash_filter: HashRangeExclusiveStickyKeyConsumerSelector | None = None
        self.is_reader = is_reader
        # Reads the compacted ledger up to its horizon (Exclusive/Failover only).
        self.read_compacted = read_compacted
        # Told that its terminated topic has nothing left for it (REACHED_END_OF_TOPIC).
        self.reached_end_of_topic = False
        # Where it consumes (set when it joins a subscription; for messages and stats).
        self.topic_name = ""
        self.subscription_name = ""
        self.connected_since_ms = connected_since_ms
        self.address = address
        self.client_version = client_version
        self.permits = 0
        self.pending_acks: dict[Position, PendingAck] = {}
        # Whether pending_acks was filled in position order (dispatch reads forward, only
        # replays go back), so its first key is its lowest; and the highest key added.
        self._pending_in_order = True
        self._highest_pending: Position = (-1, -1)
        # While in order: the positions added, ascending; acknowledged ones are dropped from
        # the front when the lowest is asked for. ``next(iter(pending_acks))`` would do, but
        # a dict skips the slots of every key popped from its front, so after in-order acks
        # it scans all of them, on every mark-delete move.
        self._pending_order: deque[Position] = deque()
        self.unacked_messages = 0
        self.unacked_counter: UnackedCounter | None = None  # its subscription's, if kept
        self.blocked_on_unacked = False
        # Flow permits granted while blocked on unacked messages, handed to the dispatcher when
        # the consumer is unblocked (Pulsar's permitsReceivedWhileConsumerBlocked).
        self.permits_received_while_blocked = 0
        self.is_active = False
        self.msg_out_counter = 0
        self.bytes_out_counter = 0
        self.msg_redeliver_counter = 0
        self.msg_ack_counter = 0  # messages its acks took off its unacked ones
        # When it last got messages, acknowledged, and granted permits (0: never).
        self.last_consumed_timestamp = 0
        self.last_acked_timestamp = 0
        self.last_consumed_flow_timestamp = 0
        # Rates of the last stats interval, from the counters above (Consumer.updateRates).
        self.msg_out_rate = Rate(connected_since_ms)
        self.msg_redeliver_rate = Rate(connected_since_ms)
        self.msg_ack_rate = Rate(connected_since_ms)
        self.closed = False

    @property
    def allow_out_of_order_delivery(self) -> bool:
        return bool(self.key_shared_meta and self.key_shared_meta.allow_out_of_order_delivery)

    def add_pending(self, position: Position, batch_size: int, sticky_key_hash: int) -> None:
        """One entry delivered and now owed (see :meth:`add_pendings`)."""
        self.add_pendings([(position, None, (batch_size, sticky_key_hash))])

    def add_pendings(self, entries: list[tuple[Position, Any, Any]]) -> None:
        """Entries delivered and now owed, each ``(position, data, header)`` as a
        dispatcher sends them (the header's first fields are the batch size and sticky key
        hash); one already pending is left as it is."""
        pending_acks = self.pending_acks
        order = self._pending_order
        in_order = self._pending_in_order
        highest = self._highest_pending
        added = 0
        for position, _, header in entries:
            if position in pending_acks:
                continue
            if not pending_acks:
                in_order = True
                highest = position
                order.clear()
                order.append(position)
            elif position > highest:
                highest = position
                if in_order:
                    order.append(position)
            else:
                in_order = False
                order.clear()
            batch_size = header[0]
            pending_acks[position] = _new_tuple(PendingAck, (batch_size, header[1]))
            added += batch_size
        self._pending_in_order = in_order
        self._highest_pending = highest
        self.unacked_messages += added
        if self.unacked_counter is not None:
            self.unacked_counter.value += added

    def remove_pending(self, position: Position) -> PendingAck | None:
        pending_acks = self.pending_acks
        pending = pending_acks.pop(position, None)
        if pending is not None:
            self.unacked_messages -= pending.batch_size
            if self.unacked_counter is not None:
                self.unacked_counter.value -= pending.batch_size
            order = self._pending_order
            if len(order) > 64 + 2 * len(pending_acks):  # acked ones behind a held one
                self._pending_order = deque(p for p in order if p in pending_acks)
        return pending

    def remove_pendings(self, positions: list[Position]) -> list[Position]:
        """Drop those of ``positions`` pending on this consumer (one ack command's, most
        of them usually its own) and return the others, in order: the bookkeeping of
        :meth:`remove_pending` once per command instead of once per entry."""
        pending_acks = self.pending_acks
        pop = pending_acks.pop
        others: list[Position] = []
        removed = 0
        for position in positions:
            pending = pop(position, None)
            if pending is None:
                others.append(position)
            else:
                removed += pending[0]
        if len(others) != len(positions):
            self.unacked_messages -= removed
            if self.unacked_counter is not None:
                self.unacked_counter.value -= removed
            order = self._pending_order
            if len(order) > 64 + 2 * len(pending_acks):  # acked ones behind a held one
                self._pending_order = deque(p for p in order if p in pending_acks)
        return others

    def lowest_pending(self) -> Position | None:
        """The lowest position the consumer has not acknowledged, if any.

        Runs on every mark-delete move: without replays the first key is the lowest, so
        the scan over every pending position is only needed after one.
        """
        pending = self.pending_acks
        if not pending:
            return None
        if self._pending_in_order:
            order = self._pending_order
            while order[0] not in pending:
                order.popleft()
            return order[0]
        return min(pending)

    def update_rates(self, now_ms: int) -> None:
        self.msg_out_rate.calculate(self.msg_out_counter, self.bytes_out_counter, now_ms)
        self.msg_redeliver_rate.calculate(self.msg_redeliver_counter, 0, now_ms)
        self.msg_ack_rate.calculate(self.msg_ack_counter, 0, now_ms)

    def take_all_pending(self) -> dict[Position, PendingAck]:
        pending, self.pending_acks = self.pending_acks, {}
        self._pending_order.clear()
        if self.unacked_counter is not None:
            self.unacked_counter.value -= self.unacked_messages
        self.unacked_messages = 0
        return pending

    def __str__(self) -> str:
        """As Pulsar's ``Consumer.toString`` prints it (without the connection address)."""
        if self.subscription_name:
            return (
                f"Consumer{{subscription=PersistentSubscription{{topic={self.topic_name}, "
                f"name={self.subscription_name}}}, consumerId={self.consumer_id}, "
                f"consumerName={self.consumer_name}}}"
            )
        return f"Consumer{{consumerId={self.consumer_id}, consumerName={self.consumer_name}}}"

    def __repr__(self) -> str:
        return (
            f"ServerConsumer({self.consumer_name!r}, id={self.consumer_id}, "
            f"permits={self.permits})"
        )
