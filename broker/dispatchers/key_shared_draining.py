"""Key_Shared as Pulsar 4.0 dispatches it: PIP-379 "draining hashes".

Pulsar 4.0's ``PersistentStickyKeyDispatcherMultipleConsumers`` (the 3.3 rule lives on as
``...Classic``, here :class:`~.key_shared.KeySharedDispatcher`):

1. **Ordering hand-off only where it can hold.** Draining hashes are tracked only in
   AUTO_SPLIT mode without ``allowOutOfOrderDelivery`` (``drainingHashesRequired``); STICKY
   mode has no hand-off at all (PR #23275). ``allowOutOfOrderDelivery`` and the mode belong
   to the subscription: a consumer asking for the other value is refused.
2. **Draining hashes.** On every consumer add or remove the selector's assignments before
   and after are compared (``ImpactedConsumersResult``); each other consumer's pending acks
   whose sticky hash lies in a range it lost become draining on it (ref-counted, see
   :mod:`.draining_hashes`). An entry whose hash drains on another consumer is blocked and
   waits in replay; acks, redeliveries and closes lower the counts; when a blocking hash is
   released, a read is scheduled after ``key_shared_unblocking_interval_ms``.
3. **Dispatch in read order** (``filterAndGroupEntriesForDispatching``): each entry goes to
   ``select(hash)`` if that consumer has permits (counted per entry) and the hash is neither
   waiting in replay (normal reads) nor draining elsewhere; once a hash is held back, every
   later entry of it in the read is too. Replays are filtered the same way before reading
   (``ReplayPositionFilter``), and the race guard ``handleAddingPendingAck`` checks once more
   just before an entry becomes a pending ack.
4. **Look-ahead, bounded.** When nothing could be sent but a consumer with permits is held
   back, the next read skips replay and reads new entries, while the replay queue stays below
   ``min(key_shared_look_ahead_msg_in_replay_threshold_per_consumer * consumers,
   key_shared_look_ahead_msg_in_replay_threshold_per_subscription)`` (the max-unacked limits
   when both are 0).
5. **Hashes are 16-bit slots** from the selector (:mod:`..selectors.pip379`), and a message
   with neither ordering key nor partition key is keyed ``producerName-sequenceId``
   (``Commands.resolveStickyKey``), so key-less messages spread over the consumers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..consumer import KeySharedMetaMode, ServerConsumer, SubType
from ..entry import EntryHeader, decode_entry
from ..errors import ConsumerBusy, SubscriptionTypeMismatch
from ..events import EventType
from ..redelivery_request import RedeliveryRequest
from ..selectors.base import StickyKeyConsumerSelector
from ..selectors.hash_assignments import ConsumerHashAssignmentsSnapshot, ImpactedConsumersResult
from ..selectors.hashing import NONE_KEY, murmur3_32_hash, sticky_key_hash
from ..selectors.pip379 import key_hash_range_of, make_selector_40, make_sticky_key_hash_40
from ..storage.base import Position
from .draining_hashes import DrainingHashesTracker
from .shared import ReplayQueue, SendList, SharedDispatcher

if TYPE_CHECKING:
    from ..clock import TimerHandle

__all__ = ["KeySharedDrainingDispatcher", "effective_look_ahead_limit"]

_NONE_KEY_HASH = sticky_key_hash(NONE_KEY)
_INT_MAX = 0x7FFFFFFF


def effective_look_ahead_limit(settings: Any, consumer_count: int) -> int:
    """``getEffectiveLookAheadLimit``: how many entries the replay queue may hold."""
    per_consumer = settings.key_shared_look_ahead_msg_in_replay_threshold_per_consumer
    per_subscription = settings.key_shared_look_ahead_msg_in_replay_threshold_per_subscription
    if per_consumer <= 0:
        limit = per_subscription
    else:
        limit = per_consumer * consumer_count
        if 0 < per_subscription < limit:
            limit = per_subscription
    if limit <= 0:
        by_subscription = settings.max_unacked_messages_per_subscription
        by_consumers = consumer_count * settings.max_unacked_messages_per_consumer
        limit = min(
            by_subscription if by_subscription > 0 else _INT_MAX,
            by_consumers if by_consumers > 0 else _INT_MAX,
        )
    return limit


class _KeyedReplayQueue(ReplayQueue):
    """The replay queue, also answering which hash a waiting position has."""

    def hash_of(self, position: Position) -> int | None:
        return self._hashes.get(position)


class KeySharedDrainingDispatcher(SharedDispatcher):
    """Dispatch by 16-bit sticky hash; hand a key over only once its old owner acked it."""

    sub_type = SubType.Key_Shared

    def __init__(self, subscription) -> None:  # type: ignore[no-untyped-def]
        super().__init__(subscription)
        self.replay = _KeyedReplayQueue()
        self.key_shared_mode: KeySharedMetaMode | None = None
        self.allow_out_of_order_delivery = False
        self.draining_hashes_required = False
        self.selector: StickyKeyConsumerSelector | None = None
        self.draining_hashes = DrainingHashesTracker(self._sticky_key_hash_unblocked)
        self.last_impacted = ImpactedConsumersResult({})
        self._assignments = ConsumerHashAssignmentsSnapshot.empty()
        self._ranges_by_consumer: dict[ServerConsumer, list[tuple[int, int]]] = {}
        self._key_hash_range = (0, 65535)
        self._skip_next_replay = False
        self._unblock_timer: TimerHandle | None = None
        self._defer_ack_read = False
        self._unblocked_waiting = False  # a released hash waits for the scheduled read
        self._owners: dict[int, ServerConsumer | None] = {}

    # -- consumers ------------------------------------------------------------------------

    def add_consumer(self, consumer: ServerConsumer) -> None:
        meta = consumer.key_shared_meta
        mode = meta.key_shared_mode if meta else KeySharedMetaMode.AUTO_SPLIT
        allow = consumer.allow_out_of_order_delivery
        if any(c.consumer_id == consumer.consumer_id for c in self.consumers):
            raise ConsumerBusy(f"consumer {consumer.consumer_name} is already subscribed")
        if self.consumers:
            self._check_same_policy(mode, allow)
            selector = self.selector
            assert selector is not None
        else:
            settings = self.subscription.settings
            selector = make_selector_40(
                "sticky" if mode is KeySharedMetaMode.STICKY else "auto_split",
                settings.key_shared_use_consistent_hashing,
                settings.subscription_key_shared_consistent_hashing_replica_points,
            )
            self._assignments = ConsumerHashAssignmentsSnapshot.empty()
        selector.add_consumer(consumer)  # raises ConsumerAssignError, nothing changed
        if selector is not self.selector:
            self.selector = selector
            self.key_shared_mode = mode
            self.allow_out_of_order_delivery = allow
            self.draining_hashes_required = mode is KeySharedMetaMode.AUTO_SPLIT and not allow
            self._key_hash_range = key_hash_range_of(selector)
            self.draining_hashes.clear()
        self.consumers.append(consumer)
        impacted = self._update_assignments()
        if self.draining_hashes_required:
            self._register_draining_hashes(consumer, impacted)

    def _check_same_policy(self, mode: KeySharedMetaMode, allow: bool) -> None:
        """``checkForConsumerCompatibilityErrorWithDispatcher``."""
        if mode is not self.key_shared_mode:
            raise SubscriptionTypeMismatch(
                "Subscription is of different type. Active subscription key_shared mode of "
                f"'{self.key_shared_mode}' is different than the connecting consumer's "
                f"key_shared mode '{mode}'."
            )
        if allow != self.allow_out_of_order_delivery:
            raise SubscriptionTypeMismatch(
                "Subscription is of different type. "
                + (
                    "Active subscription allows out of order delivery while the connecting "
                    "consumer does not allow it."
                    if self.allow_out_of_order_delivery
                    else "Active subscription does not allow out of order delivery while the "
                    "connecting consumer allows it."
                )
            )

    def remove_consumer(self, consumer: ServerConsumer) -> None:
        if consumer not in self.consumers:
            return
        assert self.selector is not None
        self.selector.remove_consumer(consumer)
        impacted = self._update_assignments()
        self.consumers.remove(consumer)
        pending = consumer.take_all_pending()
        for position, ack in sorted(pending.items()):
            self.replay.add(position, ack.sticky_key_hash)
        if pending:
            self.subscription.emit(
                EventType.REDELIVERY_REQUESTED,
                consumer,
                positions=[list(p) for p in sorted(pending)],
                reason="consumer_removed",
            )
        if self.draining_hashes_required:
            with self.draining_hashes.batch():
                for ack in pending.values():
                    self.draining_hashes.reduce_ref_count(consumer, ack.sticky_key_hash, True)
            self._register_draining_hashes(consumer, impacted)
            self.draining_hashes.consumer_removed(consumer)
        if not self.consumers:
            self.draining_hashes.clear()
        self.dispatch()

    def _update_assignments(self) -> ImpactedConsumersResult:
        assert self.selector is not None
        after = ConsumerHashAssignmentsSnapshot.of_selector(self.selector)
        self._owners.clear()  # at most 65536 entries: the hashes are 16-bit slots
        self.last_impacted = self._assignments.resolve_impacted_consumers(after)
        self._assignments = after
        self._ranges_by_consumer = after.ranges_by_consumer()
        return self.last_impacted

    def _register_draining_hashes(
        self, skip_consumer: ServerConsumer, impacted: ImpactedConsumersResult
    ) -> None:
        """``registerDrainingHashes``: pending acks in a lost range start draining."""
        for consumer in impacted.removed_hash_ranges:
            if consumer is skip_consumer:
                continue
            for ack in consumer.pending_acks.values():
                if impacted.contains_sticky_key(consumer, ack.sticky_key_hash):
                    self.draining_hashes.add_entry(consumer, ack.sticky_key_hash)

    # -- pending-ack removals (PendingAcksRemoveHandler) ----------------------------------

    def on_acknowledged(self, positions: Iterable[Position]) -> None:
        if type(positions) is not list:  # read, never kept: a list is used as it is
            positions = list(positions)
        removed = self._pending_of(positions) if len(self.draining_hashes) else []
        super().on_acknowledged(positions)
        self._release(removed)
        self._defer_read_after_ack()

    def on_mark_delete_moved(self) -> None:
        md = self.cursor.mark_delete_position
        removed: list[tuple[ServerConsumer, int]] = []
        if len(self.draining_hashes):
            for consumer in self.consumers:
                removed.extend(
                    (consumer, ack.sticky_key_hash)
                    for position, ack in consumer.pending_acks.items()
                    if position <= md
                )
        super().on_mark_delete_moved()
        self._release(removed)
        # markDeletePositionMoveForward: read again after the unblocking interval.
        self._reschedule_read()
        self._defer_read_after_ack()

    def redeliver_unacknowledged(
        self, consumer: ServerConsumer, request: RedeliveryRequest
    ) -> None:
        positions = request.positions
        chosen = list(consumer.pending_acks) if positions is None else list(positions)
        if len(self.draining_hashes):
            pending = consumer.pending_acks
            self._release([(consumer, pending[p].sticky_key_hash) for p in chosen if p in pending])
        super().redeliver_unacknowledged(consumer, request.narrowed(chosen))

    def _pending_of(self, positions: list[Position]) -> list[tuple[ServerConsumer, int]]:
        out = []
        for position in positions:
            for consumer in self.consumers:
                ack = consumer.pending_acks.get(position)
                if ack is not None:
                    out.append((consumer, ack.sticky_key_hash))
                    break
        return out

    def _release(self, removed: list[tuple[ServerConsumer, int]]) -> None:
        if not removed:
            return
        with self.draining_hashes.batch():
            for consumer, sticky_hash in removed:
                self.draining_hashes.reduce_ref_count(consumer, sticky_hash, False)

    def _sticky_key_hash_unblocked(self, _sticky_key_hash: int) -> None:
        self._reschedule_read()
        self._unblocked_waiting = self._unblock_timer is not None

    def _reschedule_read(self) -> None:
        """``RescheduleReadHandler``: one read, ``key_shared_unblocking_interval_ms`` later."""
        interval = self.subscription.settings.key_shared_unblocking_interval_ms
        if interval <= 0:
            return  # the dispatch that follows the ack reads at once
        timer = self._unblock_timer
        if timer is not None and not timer.cancelled:
            return
        self._unblock_timer = self.subscription.schedule(interval, self._on_unblock_timer)

    def _defer_read_after_ack(self) -> None:
        """Released hashes are read by the scheduled read, not by the ack's own dispatch."""
        if self._unblocked_waiting:
            self._defer_ack_read = True

    def _on_unblock_timer(self) -> None:
        self._unblock_timer = None
        self._unblocked_waiting = False
        self._defer_ack_read = False
        self.dispatch()

    def cursor_is_reset(self) -> None:
        """The cursor moved and every pending ack was dropped: nothing drains any more."""
        super().cursor_is_reset()
        self.draining_hashes.clear()
        self._skip_next_replay = False

    def close(self) -> None:
        if self._unblock_timer is not None:
            self._unblock_timer.cancel()
            self._unblock_timer = None
        super().close()

    # -- dispatch -------------------------------------------------------------------------

    def available_permits(self, consumer: ServerConsumer) -> int:
        """``getAvailablePermits``: permits, cut by what the unacked limit leaves."""
        if consumer.closed or consumer.blocked_on_unacked:
            return 0
        permits = max(consumer.permits, 0)
        max_unacked = self.max_unacked_messages(consumer)
        if permits > 0 and max_unacked > 0:
            room = max(max_unacked - consumer.unacked_messages, 0)
            if room == 0:
                return 0
            avg = max(int(self._avg_messages_per_entry), 1)
            return min(permits, (room + avg - 1) // avg)
        return permits

    def look_ahead_limit(self) -> int:
        return effective_look_ahead_limit(self.subscription.settings, len(self.consumers))

    def _normal_read_allowed(self) -> bool:
        """``isNormalReadAllowed``: below the look-ahead limit and someone has permits."""
        if len(self.replay) >= self.look_ahead_limit():
            return False
        return any(self.available_permits(c) > 0 for c in self.consumers)

    def dispatch(self) -> None:
        if self._dispatching:
            return
        if self._defer_ack_read:
            # The ack released a hash or moved the mark-delete position: Pulsar reads again
            # after keySharedUnblockingIntervalMs, not at once.
            self._defer_ack_read = False
            return
        if not self.consumers:
            return
        if not len(self.replay) and not self.cursor.has_more_entries():
            delayed = self.delayed
            if not delayed or not delayed.has_message_available(self.subscription.now_ms()):
                return  # nothing to send (after most acks)
        self._dispatching = True
        try:
            while (permits := self.total_available_permits()) > 0:
                n = self.entries_to_read(permits)
                batch: SendList | None = None
                if self._skip_next_replay:
                    self._skip_next_replay = False
                else:
                    batch = self._read_replay_filtered(n)
                is_replay = batch is not None
                if batch is None:
                    if self.blocked_dispatcher_on_unacked or not self._normal_read_allowed():
                        return
                    limit = max(self.look_ahead_limit() - len(self.replay), 1)
                    batch = self.read_new(min(n, limit))
                    if batch is None:
                        return
                sent, look_ahead = self._send_filtered(batch, is_replay)
                if look_ahead:
                    if not self.cursor.has_more_entries():
                        # The look-ahead read waits for new entries, and that wait uses up
                        # the skip: the next read starts with the replay queue again.
                        return
                    self._skip_next_replay = True
                elif not sent:
                    return
        finally:
            self._dispatching = False

    def sticky_hash(self, data: bytes, header: EntryHeader) -> int:
        """The entry's 4.0 sticky key hash (``getStickyKeyHash``)."""
        murmur = header.sticky_key_hash
        if murmur == _NONE_KEY_HASH:
            try:
                metadata, _ = decode_entry(data)
            except ValueError:  # a damaged entry keeps the NONE key's hash
                return make_sticky_key_hash_40(murmur, self._key_hash_range)
            if metadata.ordering_key is None and metadata.partition_key is None:
                murmur = murmur3_32_hash(f"{metadata.producer_name}-{metadata.sequence_id}")
        return make_sticky_key_hash_40(murmur, self._key_hash_range)

    def _rehash(self, entries: SendList | None) -> SendList | None:
        if entries is None:
            return None
        return [
            (p, d, h._replace(sticky_key_hash=self.sticky_hash(d, h))) for p, d, h in entries
        ]

    def read_new(self, n: int) -> SendList | None:
        return self._rehash(super().read_new(n))

    def _read_replay_filtered(self, n: int) -> SendList | None:
        """Due delayed entries join the replay queue; then ``ReplayPositionFilter`` picks."""
        for position in self.delayed_due(n):
            data = self.cursor.ledger.read_entry(position)
            header = self.header(position, data)
            if header is not None and data is not None:
                self.replay.add(position, self.sticky_hash(data, header))
        if not len(self.replay):
            return None
        chosen: list[Position] = []
        blocked: set[int] = set()
        permits: dict[ServerConsumer, int] = {}
        for position in self.replay.positions():
            if len(chosen) >= n:
                break
            sticky_hash = self.replay.hash_of(position)
            if self.allow_out_of_order_delivery or sticky_hash is None:
                chosen.append(position)
                continue
            if sticky_hash in blocked:
                continue
            consumer = self.owner_of(sticky_hash)
            if consumer is None:
                blocked.add(sticky_hash)
                continue
            left = permits.get(consumer)
            if left is None:
                left = self.available_permits(consumer)
            if left <= 0 or (
                self.draining_hashes_required
                and self.draining_hashes.should_block_sticky_key_hash(consumer, sticky_hash)
            ):
                blocked.add(sticky_hash)
                continue
            permits[consumer] = left - 1
            chosen.append(position)
        if not chosen:
            return None
        out: SendList = []
        for position in chosen:
            sticky_hash = self.replay.hash_of(position)
            self.replay.remove(position)
            if self.cursor.is_deleted(position):
                continue
            data = self.cursor.ledger.read_entry(position)
            header = self.header(position, data)
            if header is not None and data is not None:
                out.append((position, data, header._replace(sticky_key_hash=sticky_hash)))
        return out or None

    def owner_of(self, sticky_key_hash: int) -> ServerConsumer | None:
        """``selector.select(sticky_key_hash)``, remembered until the consumers change."""
        owners = self._owners
        try:
            return owners[sticky_key_hash]
        except KeyError:
            pass
        assert self.selector is not None
        owner = owners[sticky_key_hash] = self.selector.select(sticky_key_hash)
        return owner

    def _can_dispatch_entry(
        self, consumer: ServerConsumer, sticky_hash: int, is_replay: bool
    ) -> bool:
        """``canDispatchEntry``."""
        if not is_replay and self.replay.contains_any_hash((sticky_hash,)):
            return False
        return not (
            self.draining_hashes_required
            and self.draining_hashes.should_block_sticky_key_hash(consumer, sticky_hash)
        )

    def _send_filtered(self, entries: SendList, is_replay: bool) -> tuple[bool, bool]:
        """``filterAndGroupEntriesForDispatching`` then send; returns (sent, look ahead)."""
        groups: dict[ServerConsumer, SendList] = {}
        permits: dict[ServerConsumer, int] = {}
        look_ahead_allowed = len(self.replay) < self.look_ahead_limit()
        blocked_by_hash: set[ServerConsumer] = set()
        consumers_seen: set[ServerConsumer] = set()
        blocked: set[int] = set()
        for item in entries:
            position, _data, header = item
            sticky_hash = header.sticky_key_hash
            consumer = None
            held_by_hash = False
            if sticky_hash not in blocked:
                consumer = self.owner_of(sticky_hash)
                if consumer is not None:
                    consumers_seen.add(consumer)
                    left = permits.get(consumer)
                    if left is None:
                        left = permits[consumer] = self.available_permits(consumer)
                    if left > 0:
                        if self._can_dispatch_entry(consumer, sticky_hash, is_replay):
                            permits[consumer] = left - 1
                            groups.setdefault(consumer, []).append(item)
                            continue
                        held_by_hash = look_ahead_allowed and not is_replay
            blocked.add(sticky_hash)
            if held_by_hash and consumer is not None:
                blocked_by_hash.add(consumer)
            self.replay.add(position, sticky_hash)
        look_ahead = False
        if look_ahead_allowed and not groups:
            look_ahead = any(permits[c] > 0 for c in blocked_by_hash) or any(
                c not in consumers_seen and self.available_permits(c) > 0 for c in self.consumers
            )
        sent = False
        for consumer, group in groups.items():
            allowed = [item for item in group if self._handle_adding_pending_ack(consumer, item)]
            if allowed:
                self.send_entries(consumer, allowed)
                sent = True
        return sent, look_ahead

    def _handle_adding_pending_ack(self, consumer: ServerConsumer, item: Any) -> bool:
        """``handleAddingPendingAck``: never add a pending ack of a hash draining elsewhere."""
        if not self.draining_hashes_required:
            return True
        position, _data, header = item
        entry = self.draining_hashes.get_entry(header.sticky_key_hash)
        if entry is not None and entry.consumer is not consumer:
            self.replay.add(position, header.sticky_key_hash)
            return False
        return True

    # -- stats ----------------------------------------------------------------------------

    def consumer_stats(self, consumer: ServerConsumer) -> dict[str, Any]:
        ranges = self._ranges_by_consumer.get(consumer, [])
        stats: dict[str, Any] = {"keyHashRangeArrays": [[s, e] for s, e in ranges]}
        stats.update(self.draining_hashes.consumer_stats(consumer))
        return stats

    def stats(self) -> dict[str, Any]:
        per_consumer = [self.draining_hashes.consumer_stats(c) for c in self.consumers]
        return {
            **super().stats(),
            "keySharedMode": str(self.key_shared_mode) if self.key_shared_mode else None,
            "allowOutOfOrderDelivery": self.allow_out_of_order_delivery,
            "consumersAfterMarkDeletePosition": {},
            "drainingHashesCount": sum(s["drainingHashesCount"] for s in per_consumer),
            "drainingHashesClearedTotal": sum(
                s["drainingHashesClearedTotal"] for s in per_consumer
            ),
            "drainingHashesUnackedMessages": sum(
                s["drainingHashesUnackedMessages"] for s in per_consumer
            ),
        }

    def join_marks(self) -> dict[str, Position]:
        """4.0 keeps no join marks (widgets ask every Key_Shared dispatcher)."""
        return {}
