"""Key_Shared subscriptions: each sticky key hash belongs to one consumer at a time.

Pulsar 3.3's ``PersistentStickyKeyDispatcherMultipleConsumers`` ("classic"):

1. entries are grouped by ``selector.select(sticky key hash)``; an entry with no owner
   waits in the replay set;
2. on a normal (non-replay) read, a consumer gets nothing of this read if any of its
   entries' hashes is waiting in the replay set (replays stay ahead of new messages of the
   same key);
3. a consumer that joins while the subscription already has consumers and more than one
   entry since the first unacknowledged one is "recently joined": its join mark is the
   cursor's read position at that moment and it receives only entries before that mark
   (on replays, before the smallest join mark of all recently joined consumers) until the
   mark-delete position passes the mark. ``allow_out_of_order_delivery`` exempts a
   consumer from this rule;
4. a consumer takes at most ``min(entries, available permits)`` entries of a read — entries
   counted against message permits, as 3.3 does — with the permits cut to what its
   unacked-message limit leaves (``getAvailablePermits``);
5. what a consumer cannot take (rules 2 to 4) goes to the replay set, and a replayed entry
   goes to whoever owns its key now.

A Pulsar 4.0 "draining hashes" dispatcher would be a sibling class of this one.
"""

from __future__ import annotations

from typing import Any

from ..consumer import KeySharedMetaMode, ServerConsumer, SubType
from ..errors import ConsumerAssignError
from ..selectors import make_selector
from ..selectors.base import StickyKeyConsumerSelector, format_range
from ..storage.base import Position
from .shared import SendList, SharedDispatcher

_MAX_REMEMBERED_OWNERS = 1 << 16  # bounds the select() memo (it starts over when full)
_UNKNOWN: Any = object()


class KeySharedDispatcher(SharedDispatcher):
    """Dispatch by sticky key hash, keeping per-key order across consumer changes."""

    sub_type = SubType.Key_Shared

    def __init__(self, subscription) -> None:  # type: ignore[no-untyped-def]
        super().__init__(subscription)
        self.key_shared_mode: KeySharedMetaMode | None = None
        self.selector: StickyKeyConsumerSelector | None = None
        # Consumer -> join mark (read position when it joined), in join order.
        self.recently_joined: dict[ServerConsumer, Position] = {}
        # select() answers per sticky key hash, valid until the consumers change.
        self._owners: dict[int, ServerConsumer | None] = {}
        self._stuck_on_replays = False

    # -- consumers ------------------------------------------------------------------------

    def add_consumer(self, consumer: ServerConsumer) -> None:
        meta = consumer.key_shared_meta
        mode = meta.key_shared_mode if meta else KeySharedMetaMode.AUTO_SPLIT
        if self.key_shared_mode is not None and self.consumers and mode is not self.key_shared_mode:
            raise ConsumerAssignError(
                f"Key_Shared subscription {self.subscription.name!r} uses "
                f"{self.key_shared_mode} mode; a {mode} consumer cannot join it"
            )
        if self.selector is None or not self.consumers:
            settings = self.subscription.settings
            selector = make_selector(
                "sticky" if mode is KeySharedMetaMode.STICKY else "auto_split",
                settings.key_shared_use_consistent_hashing,
                settings.subscription_key_shared_consistent_hashing_replica_points,
                settings.version(),
            )
        else:
            selector = self.selector
        selector.add_consumer(consumer)  # raises ConsumerAssignError, nothing changed
        self._owners.clear()
        self.selector = selector
        self.key_shared_mode = mode
        super().add_consumer(consumer)
        if (
            not consumer.allow_out_of_order_delivery
            and len(self.consumers) > 1
            and self.cursor.number_of_entries_since_first_not_acked() > 1
        ):
            self.recently_joined[consumer] = self.cursor.read_position

    def remove_consumer(self, consumer: ServerConsumer) -> None:
        if consumer not in self.consumers:
            return
        assert self.selector is not None
        self.selector.remove_consumer(consumer)
        self._owners.clear()
        self.recently_joined.pop(consumer, None)
        if len(self.consumers) <= 2:
            # Only one consumer will be left: nobody to keep order against.
            self.recently_joined.clear()
        super().remove_consumer(consumer)

    def on_mark_delete_moved(self) -> None:
        super().on_mark_delete_moved()
        if self._release_recently_joined():
            self.dispatch()

    def _release_recently_joined(self) -> bool:
        """Drop join marks the mark-delete position has reached; return whether any was."""
        if not self.recently_joined:
            return False
        next_valid = self.cursor.ledger.next_position(self.cursor.mark_delete_position)
        released = False
        for consumer, mark in list(self.recently_joined.items()):
            if mark <= next_valid:
                del self.recently_joined[consumer]
                released = True
            else:
                break
        return released

    # -- dispatch -------------------------------------------------------------------------

    def dispatch(self) -> None:
        if self._dispatching:
            return
        if (
            not len(self.replay)
            and not self.cursor.has_more_entries()
            and not self._delayed_available()
        ):
            # Nothing to send (after most acks): the loop below would only learn that, and
            # clear the replay-stuck mark if any consumer had permits.
            if self._stuck_on_replays and self.total_available_permits() > 0:
                self._stuck_on_replays = False
            return
        self._dispatching = True
        try:
            while (permits := self.total_available_permits()) > 0:
                n = self.entries_to_read(permits)
                if (len(self.replay) or self._delayed_available()) and not self._stuck_on_replays:
                    if self.recently_joined and not self._delayed_available():
                        # Pulsar 3.3's filterOutEntriesWillBeDiscarded: replay only what the
                        # recently-joined rule lets through; when nothing is, a normal read
                        # serves the other consumers (hasConsumersNeededNormalRead, #7105).
                        positions = self._replayable_now(n)
                        if positions:
                            for position in positions:
                                self.replay.remove(position)
                            batch = self.read_positions(positions)
                            if batch and not self.send_read_entries(batch, is_replay=True):
                                return
                            continue
                        if not self._consumers_need_normal_read():
                            return
                    else:
                        batch = self.read_replay(n)
                        if batch is None:
                            continue
                        if not self.send_read_entries(batch, is_replay=True):
                            if self.recently_joined:
                                return
                            self._stuck_on_replays = True
                        continue
                self._stuck_on_replays = False
                if self.blocked_dispatcher_on_unacked:
                    return
                batch = self.read_new(n)
                if batch is None or not self.send_read_entries(batch, is_replay=False):
                    return
        finally:
            self._dispatching = False

    def _replayable_now(self, n: int) -> list[Position]:
        """Of the first ``n`` replay positions, those their owner may receive now."""
        groups: dict[ServerConsumer, list[tuple[Position, Any, Any]]] = {}
        hashes = self.replay.hashes()
        for position in self.replay.positions()[:n]:
            owner = self.owner_of(hashes[position])
            if owner is not None:
                groups.setdefault(owner, []).append((position, None, None))
        out: list[Position] = []
        for consumer, group in groups.items():
            count = self._restricted_max_entries(consumer, group, is_replay=True)
            out.extend(position for position, _, _ in group[:count])
        return out

    def _consumers_need_normal_read(self) -> bool:
        """A consumer that is not recently joined and has permits (Pulsar 3.3's
        ``hasConsumersNeededNormalRead``)."""
        return any(
            c not in self.recently_joined and not c.closed and not c.blocked_on_unacked
            and c.permits > 0
            for c in self.consumers
        )

    def _delayed_available(self) -> bool:
        delayed = self.delayed
        return (
            delayed is not None
            and len(delayed) > 0  # nothing tracked: skip the clock and the heap
            and delayed.has_message_available(self.subscription.now_ms())
        )

    def owner_of(self, sticky_key_hash: int) -> ServerConsumer | None:
        """``selector.select(sticky_key_hash)``, remembered until the consumers change."""
        owners = self._owners
        try:
            return owners[sticky_key_hash]
        except KeyError:
            pass
        assert self.selector is not None
        owner = self.selector.select(sticky_key_hash)
        if len(owners) >= _MAX_REMEMBERED_OWNERS:
            owners.clear()
        owners[sticky_key_hash] = owner
        return owner

    def send_read_entries(self, entries: SendList, is_replay: bool) -> bool:
        assert self.selector is not None
        groups: dict[ServerConsumer, SendList] = {}
        known_owner = self._owners.get
        group_of = groups.get
        replay = self.replay
        for item in entries:
            key_hash = item[2].sticky_key_hash
            owner = known_owner(key_hash, _UNKNOWN)
            if owner is _UNKNOWN:
                owner = self.owner_of(key_hash)
            if owner is None:
                replay.add(item[0], key_hash)
                continue
            group = group_of(owner)
            if group is None:
                groups[owner] = [item]
            else:
                group.append(item)
        if self.recently_joined:
            self._release_recently_joined()
        sent_any = False
        for consumer, group in groups.items():
            n = self._restricted_max_entries(consumer, group, is_replay)
            if n:
                self.send_entries(consumer, group if n == len(group) else group[:n])
                sent_any = True
            for position, _data, header in group[n:]:
                replay.add(position, header.sticky_key_hash)
        return sent_any

    def _restricted_max_entries(
        self, consumer: ServerConsumer, group: SendList, is_replay: bool
    ) -> int:
        """How many of ``group`` (in order) ``consumer`` may receive now.

        ``getRestrictedMaxEntriesForConsumer`` of Pulsar 3.3's Key_Shared dispatcher: at most
        ``min(entries, getAvailablePermits(consumer))`` entries, where the available permits
        are cut to what the consumer's unacked limit leaves; then the ordering rules.
        """
        if consumer.closed:
            return 0
        max_entries = min(len(group), self.available_permits(consumer))
        if max_entries <= 0:
            return 0
        if (
            not is_replay
            and len(self.replay)
            and self.replay.contains_any_hash(h.sticky_key_hash for *_, h in group)
        ):
            return 0
        recently_joined = self.recently_joined
        if not recently_joined:
            return max_entries
        mark = recently_joined.get(consumer)
        if mark is None:
            return max_entries
        if is_replay:
            first_mark = next(iter(recently_joined.values()))
            mark = min(mark, first_mark)
        for i in range(max_entries):
            if group[i][0] >= mark:
                return i
        return max_entries

    # -- stats ----------------------------------------------------------------------------

    def consumer_stats(self, consumer: ServerConsumer) -> dict[str, Any]:
        ranges = self.selector.consumer_key_hash_ranges().get(consumer, []) if self.selector else []
        stats: dict[str, Any] = {"keyHashRanges": [format_range(r) for r in ranges]}
        mark = self.recently_joined.get(consumer)
        if mark is not None:
            stats["readPositionWhenJoining"] = f"{mark[0]}:{mark[1]}"
        return stats

    def stats(self) -> dict[str, Any]:
        return {
            **super().stats(),
            "keySharedMode": str(self.key_shared_mode) if self.key_shared_mode else None,
            "allowOutOfOrderDelivery": any(c.allow_out_of_order_delivery for c in self.consumers),
            "consumersAfterMarkDeletePosition": {
                c.consumer_name: f"{m[0]}:{m[1]}" for c, m in self.recently_joined.items()
            },
        }

    def join_marks(self) -> dict[str, Position]:
        """Recently joined consumers and their join marks (for widgets)."""
        return {c.consumer_name: m for c, m in self.recently_joined.items()}
