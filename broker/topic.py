"""Topics (or partitions of a partitioned topic): a ledger, its producers and its
subscriptions; the base every topic shares and the persistent topic.

Publishing appends an entry to the managed ledger; the send receipt is released, and the
entry dispatched, only after the ledger has made it durable (``BrokerService.commit``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from .actions import SendError
from .compaction import (
    COMPACTED_TOPIC_LEDGER_PROPERTY,
    COMPACTION_SUBSCRIPTION,
    SUCCESS,
    CompactedTopic,
)
from .consumer import ServerConsumer, SubType
from .cursor import ManagedCursor
from .deduplication import MessageDeduplication
from .entry import MessageMetadata, encode_entry, read_header
from .errors import (
    MessageTooBig,
    ProducerBlockedQuotaExceeded,
    StorageError,
    SubscriptionNotFound,
    TopicTerminated,
)
from .events import EventType
from .policies import Policies
from .producer_access import ExclusiveAccess, ProducerAccessMode
from .rates import Rate, date_string
from .storage.base import ManagedLedger, MetadataStore, Position
from .subscription import Subscription
from .topic_name import TopicName

if TYPE_CHECKING:
    from .context import CoreContext

log = logging.getLogger("pulsarlab.broker.topic")
_EPOCH_SCOPE = "#topic-epoch"  # the topic epoch's key in the metadata store, after the name


@dataclass(slots=True)
class Producer:
    """A producer attached to a topic."""

    producer_id: int
    producer_name: str
    topic: PersistentTopic
    conn: Any = None
    last_sequence_id: int = -1
    msg_in_counter: int = 0
    bytes_in_counter: int = 0
    address: str = ""
    client_version: str = ""
    connected_since_ms: int = 0
    # Messages and bytes in over the last stats interval (Producer.updateRates).
    msg_in_rate: Rate | None = None
    access_mode: ProducerAccessMode = ProducerAccessMode.Shared
    topic_epoch: int | None = None  # the epoch its client gave back (reconnecting)
    ready: bool = True  # False while a WaitForExclusive producer waits for the topic

    def stats(self) -> dict[str, Any]:
        """``PublisherStatsImpl``'s fields."""
        rate = self.msg_in_rate
        return {
            "producerName": self.producer_name,
            "producerId": self.producer_id,
            "msgRateIn": rate.rate if rate else 0.0,
            "msgThroughputIn": rate.value_rate if rate else 0.0,
            "averageMsgSize": rate.average_value if rate else 0.0,
            "chunkedMessageRate": 0.0,
            "msgInCounter": self.msg_in_counter,
            "bytesInCounter": self.bytes_in_counter,
            "address": self.address,
            "connectedSince": date_string(self.connected_since_ms),
            "clientVersion": self.client_version,
            "metadata": {},
            "supportsPartialProducer": False,  # only Pulsar's partial producers set it
        }


DUPLICATE_POSITION: Position = (-1, -1)  # the receipt of a send dropped as a duplicate


class PendingSend(NamedTuple):
    """A send appended and waiting for the group commit (a tuple: one per message)."""

    producer: Producer
    sequence_id: int
    position: Position
    # A dead-letter or retry hop seen in the message's properties, for the event stream.
    hop: dict[str, Any] | None = None


# tuple.__new__ directly: a NamedTuple's own __new__ takes three times as long.
_new_tuple = tuple.__new__


class AbstractTopic:
    """What every topic partition has: a ledger, producers, subscriptions, publishing,
    retention, backlog quota and TTL (Pulsar's ``AbstractTopic``).

    :class:`PersistentTopic` adds the saving of cursors and de-duplication state;
    :class:`~pulsarlab.broker.non_persistent.NonPersistentTopic` drops what nobody takes.
    """

    # Non-persistent topics acknowledge on dispatch and drop what nobody can take.
    acks_on_dispatch = False
    # The compacted ledger (persistent topics only).
    compacted: CompactedTopic | None = None

    def __init__(
        self, context: CoreContext, name: TopicName, ledger: ManagedLedger,
        metadata: MetadataStore,
    ) -> None:
        self.context = context
        self.topic_name = name
        self.name = str(name)
        self.namespace = name.namespace  # looked up for every publish (policies)
        self.partition_index = name.partition_index
        self.ledger = ledger
        self.metadata = metadata
        self.producers: dict[int, Producer] = {}
        # Access modes: the exclusive producer, those waiting, the epoch (saved).
        saved = metadata.get_policies(self.name + _EPOCH_SCOPE) or {}
        self.access = ExclusiveAccess(saved.get("epoch"), save=self._save_topic_epoch)
        self.subscriptions: dict[str, Subscription] = {}
        self.pending_sends: list[PendingSend] = []
        self.msg_in_counter = 0
        self.bytes_in_counter = 0
        # What subscriptions removed since had sent (PersistentTopic's
        # msgOutFromRemovedSubscriptions): the topic's out-counters never go back.
        self.msg_out_from_removed_subscriptions = 0
        self.bytes_out_from_removed_subscriptions = 0
        self._dedup: MessageDeduplication | None = None
        self.held_sends: list[tuple[Producer, MessageMetadata, bytes]] = []
        self._next_expiry_check_ms = 0
        for cursor_name, state in self.metadata.get_cursors(self.name).items():
            cursor = ManagedCursor.from_state(cursor_name, ledger, state, metadata)
            self.subscriptions[cursor_name] = Subscription(self, cursor_name, cursor)

    def _save_topic_epoch(self, epoch: int) -> None:
        self.metadata.put_policies(self.name + _EPOCH_SCOPE, {"epoch": epoch})

    def forget_topic_epoch(self) -> None:
        """The topic is deleted: a topic created again under its name starts afresh."""
        if self.access.topic_epoch is not None:
            self.metadata.put_policies(self.name + _EPOCH_SCOPE, {})

    def last_entry_position(self) -> Position:
        """The last stored entry, across empty ledgers: after a restart or a roll-over the
        current ledger is empty (``(ledger, -1)``), and Pulsar's managed ledger then points
        its last confirmed entry at the last entry of the ledger before it. ``(current, -1)``
        only when the topic holds no entry at all."""
        ledger = self.ledger
        position = ledger.last_confirmed
        if position[1] < 0:
            before = ledger.previous_position((position[0], 0))
            if before[1] >= 0:
                return before
        return position

    def last_message_id(self) -> tuple[int, int, int]:
        """``(ledger, entry, batch_index)`` of the last message, as Pulsar answers
        ``GetLastMessageId`` and the admin ``lastMessageId``: the broker reads the last entry
        and gives its largest batch index (messages in the batch - 1), or -1 when the entry
        is a single message, unreadable, or there is none (``ServerCnx``'s
        ``getLargestBatchIndexWhenPossible``)."""
        ledger_id, entry_id = self.last_entry_position()
        if entry_id < 0:
            return ledger_id, entry_id, -1
        try:
            entry = self.ledger.read_entry((ledger_id, entry_id))
            header = read_header(entry) if entry is not None else None
        except (KeyError, ValueError):
            header = None
        batch_index = header.num_messages - 1 if header is not None and header.batched else -1
        return ledger_id, entry_id, batch_index

    def last_message_id_for(self, consumer: ServerConsumer) -> tuple[int, int, int]:
        """:meth:`last_message_id` as a consumer can reach it: for a ``read_compacted``
        consumer, when the topic's last entry is within the compaction horizon, the last
        entry of the compacted ledger (``(-1, -1, -1)`` when it is empty), so a reader's
        ``has_message_available`` does not wait for a message compaction removed."""
        last = self.last_message_id()
        compacted = self.compacted
        if not consumer.read_compacted or compacted is None or not compacted.covers(last[:2]):
            return last
        if not compacted.entries:
            return -1, -1, -1
        position, data = compacted.entries[-1]
        header = read_header(data)
        # The last message compaction kept: a batch's last index not compacted out (-1 for
        # a batch of one, as Pulsar's ``calculateTheLastBatchIndexInBatch``).
        index = -1
        if header.batched and header.num_messages > 1:
            gone = set(compacted.compacted_out.get(position, ()))
            index = max(i for i in range(header.num_messages) if i not in gone)
        return position[0], position[1], index

    # -- publishing -----------------------------------------------------------------------

    def publish(
        self, producer: Producer, metadata: MessageMetadata, payload: bytes,
        policies: Policies | None = None,
    ) -> Position | None:
        """Append one entry; its receipt waits for the next commit.

        ``None`` means the send is held: the backlog quota is exceeded and its policy is
        ``producer_request_hold``; it is appended once the backlog shrinks. ``policies``:
        those in force, when the caller has them already.
        """
        size = len(payload)
        limit = self.context.settings.max_message_size
        if size > limit:
            raise MessageTooBig(
                f"message of {size} bytes exceeds max_message_size {limit} on {self.name}"
            )
        if policies is None:
            policies = self.context.policies_for(self)
        if policies.backlog_quota_limit_bytes >= 0 and not self._within_backlog_quota(policies):
            if policies.backlog_quota_policy == "producer_exception":
                raise ProducerBlockedQuotaExceeded(
                    f"cannot publish on {self.name}: backlog quota of "
                    f"{policies.backlog_quota_limit_bytes} bytes exceeded"
                )
            if policies.backlog_quota_policy == "producer_request_hold":
                self.held_sends.append((producer, metadata, payload))
                self.context.emit(
                    EventType.BACKLOG_QUOTA_EXCEEDED, self.name, producer=producer.producer_name,
                    sequence_id=metadata.sequence_id, policy="producer_request_hold",
                )
                return None
        if policies.deduplication_enabled:
            dedup = self.deduplication()
            if dedup.is_duplicate(metadata.producer_name, metadata.sequence_id):
                position = dedup.original_position(metadata.producer_name, metadata.sequence_id)
                if not self.pending_sends:
                    self.context.mark_dirty(self)
                # Pulsar acknowledges a duplicate at once with message id -1:-1
                # (PersistentTopic.publishMessage, MessageDupStatus.Dup), never another
                # message's id.
                self.pending_sends.append(
                    PendingSend(producer, metadata.sequence_id, DUPLICATE_POSITION)
                )
                self.context.emit(
                    EventType.DEDUPLICATED, self.name, producer=metadata.producer_name,
                    sequence_id=metadata.sequence_id, original=list(position),
                )
                return DUPLICATE_POSITION
        data = encode_entry(metadata, payload)
        try:
            position = self.ledger.add_entry(data, self.context.now_ms())
        except StorageError as exc:
            # The ledger dropped every unconfirmed entry: fail their sends too.
            self.fail_pending_sends(exc)
            self._dedup = None  # rebuilt from what is really stored
            raise
        if policies.deduplication_enabled:
            highest = metadata.highest_sequence_id
            self.deduplication().record(
                metadata.producer_name,
                metadata.sequence_id if highest is None else highest,
                position,
            )
        sequence_id = metadata.sequence_id
        hop = _hop(metadata) if metadata.properties else None
        pending_sends = self.pending_sends
        if not pending_sends:  # marked once per commit: sync() empties the list
            self.context.mark_dirty(self)
        pending_sends.append(_new_tuple(PendingSend, (producer, sequence_id, position, hop)))
        if sequence_id > producer.last_sequence_id:
            producer.last_sequence_id = sequence_id
        num = metadata.num_messages_in_batch
        if num is None:
            num = 1
        producer.msg_in_counter += num
        producer.bytes_in_counter += size
        self.msg_in_counter += num
        self.bytes_in_counter += size
        return position

    def deduplication(self) -> MessageDeduplication:
        """The de-duplication state, recovered from the snapshot and the ledger on first use."""
        if self._dedup is None:
            snapshot = self.metadata.get_policies(self._dedup_scope)
            self._dedup = MessageDeduplication.recover(self.ledger, snapshot)
        return self._dedup

    @property
    def _dedup_scope(self) -> str:
        return f"__dedup__/{self.name}"

    def sync(self) -> list[PendingSend]:
        """Make appended entries durable; return the sends now confirmed."""
        self.ledger.sync()
        done, self.pending_sends = self.pending_sends, []
        return done

    def fail_pending_sends(self, exc: StorageError) -> None:
        """The ledger lost its unconfirmed entries: their producers get an error each."""
        log.error("%s", exc)
        for pending in self.pending_sends:
            p = pending.producer
            self.context.push(
                SendError(p.producer_id, p.conn, pending.sequence_id, exc.code, str(exc))
            )
        self.pending_sends = []

    def terminate(self) -> Position:
        """``PersistentTopic.terminate``: terminate the ledger, tell the subscriptions.

        Sends held by the backlog quota fail with ``TopicTerminatedError``; every
        subscription that has consumed everything tells its consumers they reached the end
        (``PersistentSubscription.topicTerminated``). The caller disconnects the producers.
        """
        if self.terminated:
            return self.ledger.terminate(self.context.now_ms())
        position = self.ledger.terminate(self.context.now_ms())
        self.context.emit(EventType.TOPIC_TERMINATED, self.name, position=list(position))
        held, self.held_sends = self.held_sends, []
        for producer, metadata, _payload in held:
            self.context.push(SendError(
                producer.producer_id, producer.conn, metadata.sequence_id,
                TopicTerminated.code, f"topic {self.name} was terminated",
            ))
        log.info("[%s] Topic terminated at %d:%d", self.name, *position)
        for subscription in list(self.subscriptions.values()):
            subscription.check_end_of_topic()
        return position

    @property
    def terminated(self) -> bool:
        return self.ledger.terminated_position is not None

    def on_entries_confirmed(self) -> None:
        for subscription in list(self.subscriptions.values()):
            subscription.on_new_entries()

    # -- subscriptions --------------------------------------------------------------------

    def get_or_create_subscription(
        self,
        name: str,
        *,
        durable: bool,
        earliest: bool,
        start_position: Position | None = None,
        start_inclusive: bool = False,
    ) -> tuple[Subscription, bool]:
        subscription = self.subscriptions.get(name)
        if subscription is not None:
            return subscription, False
        if start_position is not None:
            cursor = ManagedCursor.at_message(
                name, self.ledger, start_position, start_inclusive, durable=durable,
                store=self.metadata,
            )
        else:
            cursor = ManagedCursor.at_start_position(
                name, self.ledger, earliest, durable=durable, store=self.metadata
            )
        subscription = Subscription(self, name, cursor)
        return subscription, True

    def attach(
        self, subscription: Subscription, consumer: ServerConsumer, sub_type: SubType
    ) -> None:
        """Add the consumer; a new subscription is recorded only if that succeeds."""
        is_new = subscription.name not in self.subscriptions
        subscription.add_consumer(consumer, sub_type)
        if is_new:
            self.subscriptions[subscription.name] = subscription
            if subscription.durable:
                subscription.cursor.persist()
            self.context.emit(
                EventType.SUBSCRIPTION_CREATED, self.name, subscription.name, None,
                durable=subscription.durable, sub_type=str(sub_type),
            )
        subscription.on_new_entries()
        if self.ledger.terminated_position is not None:
            subscription.check_end_of_topic()

    def remove_subscription(self, name: str) -> None:
        subscription = self.subscriptions.pop(name, None)
        if subscription is None:
            raise SubscriptionNotFound(f"subscription {name!r} not found on {self.name}")
        self._count_removed(subscription)
        subscription.close()
        subscription.cursor.delete_state()
        self.context.emit(EventType.SUBSCRIPTION_DELETED, self.name, name, None)

    def detach(self, subscription: Subscription, consumer: ServerConsumer) -> None:
        subscription.remove_consumer(consumer)
        if not subscription.durable and not subscription.consumers:
            if self.subscriptions.pop(subscription.name, None) is not None:
                self._count_removed(subscription)
            subscription.close()

    def _count_removed(self, subscription: Subscription) -> None:
        msgs, sent_bytes = subscription.out_counters()
        self.msg_out_from_removed_subscriptions += msgs
        self.bytes_out_from_removed_subscriptions += sent_bytes

    # -- housekeeping ---------------------------------------------------------------------

    def trim_ledgers(self) -> list[int]:
        """Delete ledgers every durable subscription has acknowledged and retention lets go.

        Pulsar's rule: walk the closed ledgers below the slowest mark-delete, oldest first,
        and delete while a ledger's retention time has passed or the topic is over its
        retention size (0/0 = delete at once, -1 = forever / unlimited).
        """
        durable = [s.cursor for s in self.subscriptions.values() if s.durable]
        slowest = (
            min(c.mark_delete_position for c in durable) if durable else self.ledger.last_confirmed
        )
        policies = self.context.policies_for(self)
        time_ms = policies.retention_time_minutes * 60_000
        size_bytes = policies.retention_size_mb * 1024 * 1024
        now = self.context.now_ms()
        total = self.ledger.total_size
        removed = 0
        bound = None
        for info in self.ledger.ledgers[:-1]:
            if (info.ledger_id, info.entries - 1) > slowest:
                break
            expired = policies.retention_time_minutes >= 0 and now - info.timestamp_ms >= time_ms
            over_size = policies.retention_size_mb >= 0 and total - removed > size_bytes
            if not (expired or over_size):
                break
            removed += info.size
            bound = (info.ledger_id, max(info.entries - 1, 0))
        if bound is None:
            return []
        deleted = self.ledger.trim(bound)
        if deleted:
            self.context.emit(EventType.LEDGERS_TRIMMED, self.name, None, None, ledgers=deleted)
        return deleted

    # -- backlog quota --------------------------------------------------------------------

    def backlog_size_bytes(self) -> int:
        """Bytes after the slowest durable subscription's mark-delete (an estimate inside
        the ledger it points into, as Pulsar's is)."""
        durable = [s.cursor for s in self.subscriptions.values() if s.durable]
        if not durable:
            return 0
        return self.estimated_backlog_size(min(c.mark_delete_position for c in durable))

    def estimated_backlog_size(self, mark_delete: Position) -> int:
        """Bytes after ``mark_delete`` (``ManagedLedgerImpl.getEstimatedBacklogSize``):
        whole ledgers after it, and the ledger it points into pro rata by entries."""
        return self.ledger.estimated_backlog_size(mark_delete)

    def _within_backlog_quota(self, policies: Policies) -> bool:
        limit = policies.backlog_quota_limit_bytes
        if self.backlog_size_bytes() <= limit:
            return True
        if policies.backlog_quota_policy == "consumer_backlog_eviction":
            self._evict_backlog(limit)
            return True
        return False

    def _evict_backlog(self, limit: int) -> None:
        """consumer_backlog_eviction: the slowest subscriptions skip their oldest entries."""
        while True:
            excess = self.backlog_size_bytes() - limit
            durable = [s for s in self.subscriptions.values() if s.durable]
            if excess <= 0 or not durable:
                return
            slowest = min(durable, key=lambda s: s.cursor.mark_delete_position)
            entries = max(1, self.ledger.number_of_entries)
            average = max(1, self.ledger.total_size // entries)
            before = slowest.cursor.mark_delete_position
            slowest.skip_messages(max(1, -(-excess // average)))
            self.context.emit(
                EventType.BACKLOG_QUOTA_EXCEEDED, self.name, slowest.name,
                policy="consumer_backlog_eviction",
            )
            if slowest.cursor.mark_delete_position == before:
                return

    def release_held_sends(self) -> None:
        """Publish held sends while the backlog is within its quota again."""
        if not self.held_sends:
            return
        policies = self.context.policies_for(self)
        while self.held_sends and (
            policies.backlog_quota_limit_bytes < 0
            or self.backlog_size_bytes() <= policies.backlog_quota_limit_bytes
        ):
            producer, metadata, payload = self.held_sends.pop(0)
            if producer.producer_id in self.producers:
                self.publish(producer, metadata, payload)

    def expire_messages(self, now_ms: int) -> None:
        """Message TTL: acknowledge, on every subscription, what is older than the TTL."""
        ttl = self.context.policies_for(self).message_ttl_seconds
        if ttl <= 0:
            return
        for subscription in list(self.subscriptions.values()):
            subscription.expire_messages(ttl, now_ms)

    def housekeeping(self, now_ms: int) -> None:
        before = self.ledger.current_ledger_id  # every tick: a query, no copy of the list
        if self.ledger.maybe_rollover(now_ms):
            after = self.ledger.current_ledger_id
            self.context.emit(
                EventType.LEDGER_ROLLED_OVER, self.name, None, None, closed=before, opened=after
            )
            self.trim_ledgers()
        self.release_held_sends()
        interval = self.context.settings.message_expiry_check_interval_minutes * 60_000
        if now_ms >= self._next_expiry_check_ms:
            self._next_expiry_check_ms = now_ms + interval
            self.expire_messages(now_ms)

    def close(self) -> None:
        for subscription in self.subscriptions.values():
            subscription.close()
        self.ledger.close()

    # -- stats ----------------------------------------------------------------------------

    def update_rates(self, now_ms: int) -> None:
        """Close the stats interval (``PersistentTopic.updateRates``) for its producers,
        subscriptions and their consumers."""
        for producer in self.producers.values():
            if producer.msg_in_rate is not None:
                producer.msg_in_rate.calculate(
                    producer.msg_in_counter, producer.bytes_in_counter, now_ms
                )
        for subscription in self.subscriptions.values():
            subscription.update_rates(now_ms)

    def stats(self) -> dict[str, Any]:
        """``TopicStatsImpl``'s fields: in-rates summed over the publishers, out-rates and
        out-counters over the subscriptions (and the subscriptions removed since)."""
        publishers = [p.stats() for p in self.producers.values()]
        subscriptions = {name: s.stats() for name, s in self.subscriptions.items()}
        rate_in = sum(p["msgRateIn"] for p in publishers)
        throughput_in = sum(p["msgThroughputIn"] for p in publishers)
        policies = self.context.policies_for(self)
        return {
            "msgRateIn": rate_in,
            "msgThroughputIn": throughput_in,
            "msgRateOut": sum(s["msgRateOut"] for s in subscriptions.values()),
            "msgThroughputOut": sum(s["msgThroughputOut"] for s in subscriptions.values()),
            "bytesInCounter": self.bytes_in_counter,
            "msgInCounter": self.msg_in_counter,
            "bytesOutCounter": self.bytes_out_from_removed_subscriptions
            + sum(s["bytesOutCounter"] for s in subscriptions.values()),
            "msgOutCounter": self.msg_out_from_removed_subscriptions
            + sum(s["msgOutCounter"] for s in subscriptions.values()),
            "averageMsgSize": throughput_in / rate_in if rate_in else 0.0,
            "msgChunkPublished": False,
            "storageSize": self.ledger.total_size,
            "backlogSize": self.backlog_size_bytes(),
            "publishers": publishers,
            "subscriptions": subscriptions,
            **_stats_pulsarlab_has_no_source_for(),
            "systemTopicBytesInCounter": self.bytes_in_counter if self.topic_name.is_system_topic
            else 0,
            # the namespace's destination_storage quota (pulsarlab has no message_age one)
            "backlogQuotaLimitSize": policies.backlog_quota_limit_bytes,
            "backlogQuotaLimitTime": -1,
            # MessageDeduplication.Status: pulsarlab's state is ready when enabled
            "deduplicationStatus": "Enabled" if policies.deduplication_enabled else "Disabled",
            "nonContiguousDeletedMessagesRanges": sum(
                s["nonContiguousDeletedMessagesRanges"] for s in subscriptions.values()),
        }

    def internal_stats(self) -> dict[str, Any]:
        lac = self.ledger.last_confirmed
        return {
            "entriesAddedCounter": self.ledger.number_of_entries,
            "numberOfEntries": self.ledger.number_of_entries,
            "totalSize": self.ledger.total_size,
            "currentLedgerEntries": self.ledger.ledgers[-1].entries if self.ledger.ledgers else 0,
            "lastConfirmedEntry": f"{lac[0]}:{lac[1]}",
            "ledgers": [info.to_dict() for info in self.ledger.ledgers],
            "corruptEntries": [f"{p[0]}:{p[1]}" for p in sorted(self.ledger.corrupt_entries)],
            "cursors": {
                name: s.cursor.internal_stats() for name, s in self.subscriptions.items()
            },
            "state": "Terminated" if self.terminated else "LedgerOpened",
            "compactedLedger": self._compacted_ledger_stats(),
        }

    def _compacted_ledger_stats(self) -> dict[str, Any]:
        """Pulsar's ``compactedLedger`` of the internal stats (ledger -1: none yet)."""
        compacted = self.compacted
        if compacted is None or compacted.horizon is None:
            return {"ledgerId": -1, "entries": -1, "size": -1, "offloaded": False,
                    "underReplicated": False}
        return {
            "ledgerId": compacted.ledger_id,
            "entries": len(compacted.entries),
            "size": sum(len(data) for _, data in compacted.entries),
            "offloaded": False,
            "underReplicated": False,
            # pulsarlab's: what the compacted ledger leaves out of the log up to the horizon
            # (the ``__compaction`` cursor's mark-delete), entries as ranges in the form of
            # ``individuallyDeletedMessages``, batch indexes as bits (set: compacted out).
            "compactedOutEntries": str(compacted.removed_entries),
            "compactedOutBatchIndexes": {
                f"{p[0]}:{p[1]}": bin(sum(1 << i for i in gone))
                for p, gone in sorted(compacted.compacted_out.items())
            },
        }


def _stats_pulsarlab_has_no_source_for() -> dict[str, Any]:
    """``TopicStatsImpl`` fields of features pulsarlab does not have (tiered storage,
    transactions, geo-replication, publish rate limits, queued exclusive producers, internal
    replicator cursors), with the values Pulsar reports when they are not in use; -1 is
    Pulsar's "not computed" for the backlog age (computed only by time-based quota checks)
    and 0 its "not asked for" of the earliest publish time (``?getEarliestTimeInBacklog``)."""
    return {
        "bytesOutInternalCounter": 0,
        "publishRateLimitedTimes": 0,
        "earliestMsgPublishTimeInBacklogs": 0,
        "oldestBacklogMessageAgeSeconds": -1,
        "offloadedStorageSize": 0,
        "lastOffloadLedgerId": 0,
        "lastOffloadSuccessTimeStamp": 0,
        "lastOffloadFailureTimeStamp": 0,
        "ongoingTxnCount": 0,
        "abortedTxnCount": 0,
        "committedTxnCount": 0,
        "waitingPublishers": 0,
        "replication": {},
    }


class PersistentTopic(AbstractTopic):
    """One persistent topic partition: durable cursors and de-duplication state are saved."""

    def __init__(
        self, context: CoreContext, name: TopicName, ledger: ManagedLedger,
        metadata: MetadataStore,
    ) -> None:
        super().__init__(context, name, ledger, metadata)
        self._last_cursor_persist_ms = 0
        self.compacted = CompactedTopic(self.name, metadata)
        self._next_compaction_check_ms = 0

    def housekeeping(self, now_ms: int) -> None:
        super().housekeeping(now_ms)
        self.check_compaction(now_ms)
        self.persist_cursors(now_ms)

    # -- compaction -----------------------------------------------------------------------

    def compact(self) -> bool:
        """Compact everything confirmed so far (``PersistentTopic.triggerCompaction``);
        return whether it succeeded. The ``__compaction`` subscription's mark-delete moves
        to the horizon and its ``CompactedTopicLedger`` property names the new ledger."""
        assert self.compacted is not None
        horizon = self.last_entry_position()
        if horizon[1] < 0:  # nothing stored yet: nothing to compact
            self.compacted.status, self.compacted.last_error = SUCCESS, ""
            return True
        if not self.compacted.run(self.ledger, self.ledger.first_position(), horizon):
            self.context.emit(
                EventType.COMPACTION_FAILED, self.name, None, None,
                error=self.compacted.last_error,
            )
            return False
        subscription, created = self.get_or_create_subscription(
            COMPACTION_SUBSCRIPTION, durable=True, earliest=True
        )
        if created:
            self.subscriptions[COMPACTION_SUBSCRIPTION] = subscription
        cursor = subscription.cursor
        cursor.properties[COMPACTED_TOPIC_LEDGER_PROPERTY] = self.compacted.ledger_id
        cursor.mark_delete(horizon)
        cursor.dirty = True
        cursor.persist()
        self.context.emit(
            EventType.COMPACTED, self.name, None, None,
            horizon=list(horizon), kept=len(self.compacted.entries),
            removed=self.compacted.removed,
        )
        self.trim_ledgers()
        return True

    def compaction_backlog_bytes(self) -> int:
        """What compaction has not seen yet: the ``__compaction`` subscription's backlog, or
        the whole topic before the first compaction."""
        subscription = self.subscriptions.get(COMPACTION_SUBSCRIPTION)
        if subscription is None:
            return self.ledger.total_size
        return self.estimated_backlog_size(subscription.cursor.mark_delete_position)

    def check_compaction(self, now_ms: int) -> None:
        """``checkCompaction``: compact when the backlog compaction has not seen exceeds
        the threshold (``compactionThreshold`` policy, else
        ``brokerServiceCompactionThresholdInBytes``; 0 = never), at most once per
        ``brokerServiceCompactionMonitorIntervalInSeconds``."""
        if now_ms < self._next_compaction_check_ms:
            return
        settings = self.context.settings
        self._next_compaction_check_ms = (
            now_ms + settings.broker_service_compaction_monitor_interval_in_seconds * 1000
        )
        threshold = self.context.policies_for(self).compaction_threshold
        if threshold > 0 and self.compaction_backlog_bytes() > threshold:
            self.compact()

    def persist_cursors(self, now_ms: int, force: bool = False) -> None:
        interval = self.context.settings.managed_ledger_cursor_persist_interval_ms
        if not force and now_ms - self._last_cursor_persist_ms < interval:
            return
        self._last_cursor_persist_ms = now_ms
        self.persist_dedup()
        for subscription in self.subscriptions.values():
            if subscription.durable and subscription.cursor.dirty:
                subscription.cursor.persist()

    def persist_dedup(self) -> None:
        if self._dedup is not None and not self.pending_sends:
            position = self.ledger.last_confirmed
            if self._dedup.snapshot_position != position:
                self.metadata.put_policies(
                    self._dedup_scope, self._dedup.snapshot(position)
                )

    def close(self) -> None:
        self.persist_cursors(self.context.now_ms(), force=True)
        super().close()


def _hop(metadata: MessageMetadata) -> dict[str, Any] | None:
    """A message the client moved to a retry or dead-letter topic, from its properties."""
    props = metadata.properties
    if "ORIGIN_MESSAGE_ID" not in props or "REAL_TOPIC" not in props:
        return None
    hop: dict[str, Any] = {
        "origin_message_id": props["ORIGIN_MESSAGE_ID"],
        "real_topic": props["REAL_TOPIC"],
    }
    if "RECONSUMETIMES" in props:
        hop["reconsume_times"] = props["RECONSUMETIMES"]
        hop["delay_time"] = props.get("DELAY_TIME")
    return hop
