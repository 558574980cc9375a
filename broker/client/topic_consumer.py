"""One consumer of one topic or partition: subscribe, decode deliveries, permits and acks.

A :class:`~.consumer.Consumer` owns one :class:`TopicConsumer` per topic (per partition of
a partitioned topic). The I/O thread calls ``on_entries`` with each burst of Pulsar MESSAGEs:
metadata read (:func:`~pulsarlab.broker.format.metadata.read_pulsar_metadata`), chunks reassembled,
payloads decompressed, batches split in Pulsar's layout (skipping indexes the broker's ack
set marks acked), and the messages handed to the parent's receiver queue. Permits: FLOW
with the receiver queue size at subscribe, then a refill once half has been consumed by the
application (messages skipped by the client count as consumed at once, as in Java).

Acks, nacks and ack timeouts are posted to the I/O thread and kept in sans-I/O trackers
(:mod:`.ack_grouping`; :mod:`pulsarlab.broker.client.redelivery` for the rest) driven by the
connection's timers:

* negative acks: ``NegativeAcksTracker`` (entry-level ids, optional back-off); its timer
  fires every delay/3 and the due ids go back in one ``REDELIVER_UNACKNOWLEDGED``
  (reason ``"nack"``, with when each was nacked);
* ack timeout: ``UnAckedMessageTracker``, fed when the application takes a message from
  the receive queue (never while it is prefetched), ticked every ``tick_duration_ms``;
  timed-out ids are redelivered with reason ``"ack_timeout"``;
* Exclusive and Failover turn any such request into "redeliver everything" (the broker
  rewinds), as Pulsar's client does;
* dead letters (Shared and Key_Shared): a message received with
  ``redelivery_count >= max_redeliver_count`` is remembered; when it is next to be
  redelivered it is published to the dead-letter topic and acknowledged instead (on the
  consumer's :class:`~.dead_letter.BackgroundWorker`; if that fails it is redelivered
  normally); one arriving with a count above the max is not delivered at all, it goes to
  the dead-letter topic at once;
* ``reconsume_later`` (``retry_enable``): republish to the retry-letter topic (or, past
  the max, the dead-letter topic), then acknowledge.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import logging
from collections import deque
from dataclasses import dataclass
from typing import Any

from ..entry import MessageMetadata
from ..format.compression import decompress
from ..format.metadata import is_encrypted, read_pulsar_metadata
from ..message_id import MessageId
from ..topic_name import TopicName
from .ack_grouping import AckGroupingTracker
from .chunking import ChunkedMessageCollector
from .connection import TimerHandle, now_ms
from .dead_letter import LetterProducers, copy_message, origin_topic
from .entries import EntryBatch
from .enums import ConsumerType, InitialPosition, KeySharedMode
from .exceptions import AlreadyClosed
from .message import Delivery, Message, delivered
from .redelivery import (
    DeadLetterPolicy,
    NegativeAcksTracker,
    UnAckedMessageTracker,
    dead_letter_properties,
    retry_properties,
)

__all__ = ["ConsumerConfig", "TopicConsumer"]

log = logging.getLogger("pulsarlab.client")

Position = tuple[int, int]

SHARED_TYPES = (ConsumerType.Shared, ConsumerType.KeyShared)
MAX_REDELIVER_UNACKNOWLEDGED = 1000  # positions per REDELIVER command (Java's limit)


@dataclass(slots=True)
class ConsumerConfig:
    """Validated subscribe settings shared by the topic consumers of one ``Consumer``."""

    subscription: str
    consumer_type: ConsumerType = ConsumerType.Exclusive
    schema: Any = None
    receiver_queue_size: int = 1000
    consumer_name: str | None = None
    unacked_messages_timeout_ms: int | None = None
    negative_ack_redelivery_delay_ms: int = 60_000
    initial_position: InitialPosition = InitialPosition.Latest
    durable: bool = True
    is_reader: bool = False
    start_message_id: MessageId | None = None
    start_message_id_inclusive: bool = False
    key_shared_policy: Any = None
    key_hash_ranges: list[tuple[int, int]] | None = None
    batch_index_ack_enabled: bool = False
    read_compacted: bool = False
    priority_level: int = 0
    max_pending_chunked_message: int = 10
    auto_ack_oldest_chunked_message_on_queue_full: bool = False
    expire_time_of_incomplete_chunked_message_ms: int = 60_000
    acknowledgements_group_time_ms: int = 100
    tick_duration_ms: int = 1000
    negative_ack_redelivery_backoff: Any = None
    ack_timeout_redelivery_backoff: Any = None
    # With retry_enable its topic names are already resolved for the whole consumer.
    dead_letter_policy: Any = None
    retry_enable: bool = False
    # Extension for bulk readers: queue whole entries (EntryBatch), not messages.
    deliver_entries: bool = False


class TopicConsumer:
    """The consumer of one topic or partition (its own consumer id on the connection)."""

    def __init__(self, parent: Any, topic: str, config: ConsumerConfig) -> None:
        self.parent = parent
        self._conn = parent._client._conn
        self.topic = topic
        self.partition = TopicName.get(topic).partition_index
        self.config = config
        self.consumer_id = self._conn.new_id()
        self.consumer_name = config.consumer_name or ""
        self.connected = False
        self.closed = False
        self.is_active: bool | None = None
        self.reached_end_of_topic = False
        self._last_read: Message | EntryBatch | None = None  # the last one taken
        self.start_message_id = config.start_message_id
        self.start_inclusive = config.start_message_id_inclusive
        # Acks from the application wait here for the I/O thread, which takes them all in
        # one task per burst (a posted task per ack would cost more than the ack). No
        # lock: appends and pops of a deque are atomic, and the flag is cleared before the
        # I/O thread counts what it takes (see _io_take_acks).
        self._acks_in: deque[MessageId | Message | tuple[MessageId, bool]] = deque()
        self._acks_posted = False
        # Set before the first cumulative ack is queued, never cleared: from then on the
        # I/O thread looks at each ack for the (ack, True) of a cumulative one.
        self._cumulative_acks = False
        # Messages counted as consumed: FLOW asks for more each time the count passes a
        # multiple of the refill threshold (next() on a count is atomic: no lock per message).
        self._consumed = itertools.count(1)
        self._queue_size = max(1, config.receiver_queue_size)
        self._refill_threshold = max(1, self._queue_size // 2)
        # I/O-thread state.
        self.acks = AckGroupingTracker(
            config.acknowledgements_group_time_ms, 1000, config.batch_index_ack_enabled
        )
        self.nacks = self._new_nack_tracker()
        self._nacked_at: dict[Position, int] = {}
        self.unacked = self._new_unacked_tracker()
        self.dead_letter: DeadLetterPolicy | None = None
        self.letters: LetterProducers | None = None
        dlp = config.dead_letter_policy
        if dlp is not None and not config.is_reader:
            self.dead_letter = DeadLetterPolicy.resolve(
                topic, config.subscription, dlp.max_redeliver_count, dlp.dead_letter_topic,
                dlp.retry_letter_topic, dlp.initial_subscription_name,
            )
            self.letters = LetterProducers(parent._client, self.dead_letter, topic,
                                           config.subscription, lambda: self.consumer_name)
        # Dead-lettering on redelivery: Shared and Key_Shared only (as in Pulsar).
        self._dlq_on_redelivery = (
            self.dead_letter is not None and config.consumer_type in SHARED_TYPES
        )
        self._possible_dlq: dict[Position, list[Message]] = {}
        self._dlq_inflight: set[Position] = set()
        self.chunks = ChunkedMessageCollector(
            config.max_pending_chunked_message,
            config.expire_time_of_incomplete_chunked_message_ms,
            config.auto_ack_oldest_chunked_message_on_queue_full,
        )
        self._chunk_members: dict[Position, list[Position]] = {}
        self._batch_filter: tuple[Position, int, bool] | None = None
        self._min_publish_time: int | None = None  # a non-durable seek by time
        self._ack_timer: TimerHandle | None = None
        self._nack_timer: TimerHandle | None = None
        self._unacked_timer: TimerHandle | None = None
        self._chunk_timer: TimerHandle | None = None
        self._io_start_at(config.start_message_id, config.start_message_id_inclusive)

    # -- requests (caller's thread) -------------------------------------------------------

    def open(self) -> None:
        conn = self._conn
        conn.post(lambda: conn.register_consumer(self.consumer_id, self))
        try:
            reply = conn.wait(conn.request("SUBSCRIBE", **self._subscribe_fields()))
        except BaseException:
            conn.post(lambda: conn.unregister_consumer(self.consumer_id))
            raise
        result = reply.get("result")
        if not self.consumer_name and isinstance(result, str):
            self.consumer_name = result
        self.connected = True
        conn.send("FLOW", consumer_id=self.consumer_id, permits=self._queue_size)
        if self.unacked is not None:
            conn.post(self._io_arm_unacked_timer)

    def _subscribe_fields(self) -> dict[str, Any]:
        c = self.config
        fields: dict[str, Any] = {
            "topic": self.topic,
            "subscription": c.subscription,
            "consumer_id": self.consumer_id,
            "sub_type": c.consumer_type.wire_name,
            "initial_position": "earliest"
            if c.initial_position is InitialPosition.Earliest
            else "latest",
            "durable": c.durable,
            "priority_level": c.priority_level,
            "batch_index_ack_enabled": c.batch_index_ack_enabled,
            "is_reader": c.is_reader,
        }
        if c.read_compacted:
            fields["read_compacted"] = True
        if self.consumer_name:  # configured, or the one the first subscription got
            fields["consumer_name"] = self.consumer_name
        policy = c.key_shared_policy
        if c.consumer_type is ConsumerType.KeyShared and policy is not None:
            sticky = policy.key_shared_mode is KeySharedMode.Sticky
            fields["key_shared_mode"] = "STICKY" if sticky else "AUTO_SPLIT"
            fields["allow_out_of_order_delivery"] = policy.allow_out_of_order_delivery
            if sticky:
                fields["sticky_ranges"] = [list(r) for r in policy.sticky_ranges]
        if c.key_hash_ranges:
            fields["key_hash_ranges"] = [list(r) for r in c.key_hash_ranges]
        # Where a (re)subscription starts: the configured start id, or where a seek or
        # the last message read left a non-durable subscription (which the broker drops
        # with its consumer).
        start = self.start_message_id
        if start is not None:
            fields["start_message_id"] = [
                start.ledger_id(), start.entry_id(), start.partition(), start.batch_index()
            ]
            # A batched start id: the broker starts at its entry; indexes are filtered here.
            fields["start_message_id_inclusive"] = (
                True if start.batch_index() >= 0 else self.start_inclusive
            )
        return fields

    def _io_prepare_seek(self, start: MessageId, min_publish_time: int | None) -> None:
        self._io_start_at(start, self.config.start_message_id_inclusive)
        self._min_publish_time = min_publish_time
        self._last_read = None  # the resubscription starts at the target, not after it

    def _io_start_at(self, start: MessageId | None, inclusive: bool) -> None:
        """Where the next subscription of a non-durable consumer starts; an exclusive
        start (or a batch index) is filtered here, as Pulsar's brokers start AT the id."""
        self.start_message_id = start
        self.start_inclusive = inclusive
        self._batch_filter = None
        if start is None:
            return
        if start.batch_index() >= 0:
            self._batch_filter = (start.position, start.batch_index(), inclusive)
        elif (not inclusive and start.ledger_id() >= 0 and start.entry_id() >= 0
              and start != MessageId.latest):
            self._batch_filter = (start.position, -1, False)

    def seek(self, target: MessageId | int) -> None:
        """Reset the subscription to a message id or a publish time (ms). The broker moves
        the cursor to the id; the id itself is skipped here unless the consumer was made
        with ``start_message_id_inclusive`` (Java's ``resetIncludeHead``), as Pulsar's
        clients do."""
        conn = self._conn
        conn.post(self._io_flush_acks)
        if not self.config.durable:
            # The broker closes the consumer after a seek and drops its non-durable
            # subscription: the next one starts at the target (a time: from the earliest,
            # messages published before it skipped here).
            at_time = None if isinstance(target, MessageId) else int(target)
            conn.post(lambda: self._io_prepare_seek(
                MessageId.earliest if at_time is not None else target, at_time))
        if isinstance(target, MessageId):
            fields: dict[str, Any] = {
                "message_id": [target.ledger_id(), target.entry_id(), target.partition(),
                               target.batch_index()]
            }
        else:
            fields = {"publish_time": int(target)}
        # The broker disconnects the subscription's consumers (CLOSE_CONSUMER) before it
        # answers; this one subscribes again as any closed consumer does.
        future = conn.request("SEEK", consumer_id=self.consumer_id, **fields)

        def after(done: concurrent.futures.Future) -> None:
            # Runs on the I/O thread as the reply is handled, before any later MESSAGE.
            if done.exception() is None:
                self._io_reset_after_seek(target)

        future.add_done_callback(after)
        conn.wait(future)

    def get_last_message_id(self) -> MessageId:
        reply = self._conn.wait(
            self._conn.request("GET_LAST_MESSAGE_ID", consumer_id=self.consumer_id)
        )
        ledger, entry, partition, batch_index = reply["result"][:4]
        return MessageId(partition, ledger, entry, batch_index)

    def unsubscribe(self) -> None:
        conn = self._conn
        conn.post(self._io_flush_acks)
        conn.wait(conn.request("UNSUBSCRIBE", consumer_id=self.consumer_id))
        self._finish_close()

    def close(self) -> None:
        if self.closed:
            return
        conn = self._conn
        if not conn.closed:
            conn.post(self._io_flush_acks)
            try:
                conn.wait(conn.request("CLOSE_CONSUMER", consumer_id=self.consumer_id))
            finally:
                self._finish_close()
        else:
            self.closed = True

    def _finish_close(self) -> None:
        self.closed = True
        self.connected = False
        conn = self._conn
        if not conn.closed:
            conn.post(self._io_closed)
        if self.letters is not None:
            self.letters.close()

    # -- application side (any thread) ----------------------------------------------------

    @property
    def last_dequeued(self) -> MessageId | None:
        """The id of the last message the application took (None before the first)."""
        last = self._last_read
        return None if last is None else last.message_id()

    def on_dequeued(self, message: Message) -> None:
        """The application took ``message`` from the receiver queue (ack timeout starts)."""
        self._last_read = message
        if type(message) is EntryBatch:  # a bulk reader's entry: no ack timeout, n permits
            self.add_permits(message.count)
            return
        if self.unacked is not None:
            position = message.message_id().position
            count = message.redelivery_count()
            self._conn.post(lambda: self._io_track_unacked(position, count))
        threshold = self._refill_threshold
        if next(self._consumed) % threshold == 0:
            self._flow(threshold)

    def add_permits(self, n: int) -> None:
        """Count ``n`` messages as consumed; send FLOW once half the queue is free."""
        if n <= 0:
            return
        # max() over islice() takes n counts in one C call, which no other thread can
        # interleave with: they are last - n + 1 .. last.
        last = max(itertools.islice(self._consumed, n))
        threshold = self._refill_threshold
        passed = last // threshold - (last - n) // threshold
        if passed:
            self._flow(passed * threshold)

    def _flow(self, permits: int) -> None:
        # Disconnected (a seek, an unload): subscribing again grants a whole queue.
        if self.connected and not self.closed and not self._conn.closed:
            self._conn.send("FLOW", consumer_id=self.consumer_id, permits=permits)

    def acknowledge(self, msg_id: MessageId | Message, cumulative: bool = False) -> None:
        """Queue an ack for the I/O thread; a received :class:`Message` may stand for its
        id (no id object is made for an ack that only the grouping tracker hears of)."""
        if cumulative:
            self._cumulative_acks = True
            self._acks_in.append((msg_id, True))
        else:
            self._acks_in.append(msg_id)
        if self._acks_posted:
            return
        self._acks_posted = True
        self._conn.post(self._io_take_acks)

    def negative_acknowledge(self, msg_id: MessageId, redelivery_count: int = 0) -> None:
        """Nack; ``redelivery_count`` picks the back-off delay (0 for a bare id, as Java)."""
        self._conn.post(lambda: self._io_nack(msg_id, redelivery_count))

    def reconsume_later(self, message: Message, delay_ms: int,
                        properties: dict[str, str] | None) -> None:
        """Publish ``message`` to the retry-letter topic (past the max: the dead-letter
        topic) with Pulsar's properties, then acknowledge it (blocks until published)."""
        letters, policy = self.letters, self.dead_letter
        assert letters is not None and policy is not None
        delay_ms = max(0, delay_ms)
        props, times = retry_properties(message.properties(), origin_topic(message),
                                        str(message.message_id()), delay_ms, properties)
        if times > policy.max_redeliver_count:
            copy_message(letters.dead_letter(), message, props)
        else:
            copy_message(letters.retry_letter(), message, props, delay_ms)
        self.acknowledge(message.message_id())

    def redeliver_unacknowledged(self) -> None:
        self._conn.post(self._io_redeliver_all)

    # -- I/O thread: deliveries -----------------------------------------------------------

    def on_entries(self, entries: list[tuple[tuple, bytes, bytes]]) -> None:
        """Pulsar MESSAGEs: ``((ledger, entry, partition, redelivery_count, ack_set),
        serialized MessageMetadata, payload)`` each."""
        out: list[Message] = []
        now = now_ms()
        for entry, raw, payload in entries:
            try:
                meta = read_pulsar_metadata(raw)[0]  # per entry: no from_pulsar layer
                if meta.num_messages_in_batch is not None and is_encrypted(raw):
                    # End-to-end encrypted (this client cannot decrypt): the batch as
                    # stored, as ONE message, as Pulsar's ConsumerCryptoFailureAction.CONSUME
                    # hands it over; acked or dead-lettered like any message.
                    meta.num_messages_in_batch = None
                    meta.compression = "NONE"
                messages = self._io_decode(entry, meta, payload, now)
            except Exception as exc:
                log.warning("dropped an undecodable entry %s on %s: %s", entry[:2], self.topic, exc)
                self.add_permits(1)
                continue
            if messages and self._dlq_on_redelivery:
                messages = self._io_check_dead_letter(messages, entry[3], now)
            out.extend(messages)
        if out:
            self.parent._enqueue(out)

    def _io_check_dead_letter(self, messages: list[Message], redelivery_count: int,
                              now: int) -> list[Message]:
        """Remember messages at the max redelivery count; dead-letter those above it."""
        policy = self.dead_letter
        assert policy is not None
        if not policy.should_dead_letter(redelivery_count):
            return messages
        position = messages[0].message_id().position
        self._possible_dlq[position] = messages
        if redelivery_count <= policy.max_redeliver_count:
            return messages
        # Past the max (a DLQ publish failed, or the consumer died holding it): the
        # application never sees it; it goes to the dead-letter topic now.
        self.add_permits(len(messages))
        self._io_redeliver([position], "consumer_request", [now])
        return []

    def _io_decode(self, entry: Any, meta: MessageMetadata, payload: bytes,
                   now: int) -> list[Message]:
        ledger, entry_id, partition, redelivery_count = entry[:4]
        ack_set = entry[4] if len(entry) > 4 else None
        if partition < 0:
            partition = self.partition
        position = (ledger, entry_id)
        if self.acks.is_duplicate(position) or (
                self._min_publish_time is not None and self._before_seek_time(meta)):
            self.add_permits(meta.num_messages)
            return []
        chunk_positions: list[Position] | None = None
        if meta.chunk_id is not None and (meta.num_chunks_from_msg or 1) > 1:
            outcome = self.chunks.add(
                meta.uuid or "", meta.chunk_id, meta.num_chunks_from_msg or 1,
                meta.total_chunk_msg_size or 0, payload, position, meta, now,
            )
            if outcome.ack:
                self._io_ack_positions(outcome.ack)
            if outcome.message is None:
                self.add_permits(1)
                self._io_arm_chunk_expiry()
                return []
            payload = outcome.message.payload
            chunk_positions = list(outcome.message.chunk_ids)
        if meta.compression and meta.compression != "NONE":
            payload = decompress(meta.compression, payload, meta.uncompressed_size)
        topic, schema = self.topic, self.config.schema
        if (meta.num_messages_in_batch is None and self._batch_filter is not None
                and self._filtered(position, -1)):  # an exclusive start's own entry
            self.add_permits(1)
            return []
        if self.config.deliver_entries:
            return self._io_entry_batch(meta, payload, position, partition, ack_set,
                                        redelivery_count, chunk_positions)
        if meta.num_messages_in_batch is None:
            if chunk_positions is not None:
                self._chunk_members[position] = chunk_positions
            fields = (meta.properties or None, meta.partition_key, meta.ordering_key,
                      meta.event_time, meta.sequence_id, meta.null_value, payload)
            return [delivered(fields, Delivery(topic, partition, ledger, entry_id, 0,
                                               meta.publish_time, meta.producer_name,
                                               meta.schema_version, redelivery_count, schema),
                              -1, self)]
        n = meta.num_messages_in_batch
        gone: list[int] = []
        items = self._conn.batch_items(payload, n, gone)
        if gone:  # slots compaction emptied (SingleMessageMetadata.compacted_out)
            ack_set = _without_compacted_out(ack_set, gone, n)
        self.acks.on_batch_received(position, n, ack_set)
        delivery = Delivery(topic, partition, ledger, entry_id, n, meta.publish_time,
                            meta.producer_name, meta.schema_version, redelivery_count, schema)
        if ack_set is None and self._batch_filter is None:
            return [delivered(item, delivery, i, self) for i, item in enumerate(items)]
        out = []
        skipped = 0
        for i, item in enumerate(items):
            if (ack_set is not None and not (ack_set >> i) & 1) or self._filtered(position, i):
                skipped += 1
                continue
            out.append(delivered(item, delivery, i, self))
        self.add_permits(skipped)
        return out

    def _io_entry_batch(self, meta: MessageMetadata, payload: bytes, position: Position,
                        partition: int, ack_set: int | None, redelivery_count: int,
                        chunk_positions: list[Position] | None) -> list[Any]:
        """``deliver_entries``: the whole entry as one :class:`EntryBatch`."""
        ledger, entry_id = position
        if meta.num_messages_in_batch is None:
            if chunk_positions is not None:
                self._chunk_members[position] = chunk_positions
            return [EntryBatch(self.topic, partition, ledger, entry_id, meta, payload, None,
                               None, redelivery_count, self)]
        n = meta.num_messages_in_batch
        gone: list[int] = []
        items = self._conn.batch_items(payload, n, gone)
        if gone:  # slots compaction emptied (SingleMessageMetadata.compacted_out)
            ack_set = _without_compacted_out(ack_set, gone, n)
        self.acks.on_batch_received(position, n, ack_set)
        indexes = None
        if ack_set is not None or self._batch_filter is not None:
            indexes = [
                i for i in range(n)
                if not ((ack_set is not None and not (ack_set >> i) & 1)
                        or self._filtered(position, i))
            ]
            self.add_permits(n - len(indexes))
            if not indexes:
                return []
        return [EntryBatch(self.topic, partition, ledger, entry_id, meta, payload, items,
                           indexes, redelivery_count, self)]

    def _before_seek_time(self, meta: MessageMetadata) -> bool:
        """Whether an entry precedes the publish time a non-durable consumer sought (the
        first one at or after it ends the filter)."""
        assert self._min_publish_time is not None
        if meta.publish_time < self._min_publish_time:
            return True
        self._min_publish_time = None
        return False

    def _filtered(self, position: Position, index: int) -> bool:
        """Batch indexes before a batched start/seek id are skipped (Java does the same)."""
        flt = self._batch_filter
        if flt is None:
            return False
        start, start_index, inclusive = flt
        if position != start:
            if position > start:
                self._batch_filter = None
            return False
        return index < start_index or (index == start_index and not inclusive)

    def on_active_consumer_change(self, cmd: Any) -> None:
        self.is_active = bool(cmd["is_active"])
        self.parent._on_active_change(self, self.is_active)

    def on_reached_end_of_topic(self, cmd: Any) -> None:
        log.info("consumer on %s reached the end of the terminated topic", self.topic)
        self.reached_end_of_topic = True

    def on_close_consumer(self, cmd: Any) -> None:
        log.warning("the broker closed the consumer on %s: %s", self.topic, cmd.get("reason"))
        self.connected = False
        if cmd.get("reason") in ("unloaded", "reconnect") and not self.closed:
            last = self._last_read
            if not self.config.durable and last is not None:
                # The broker dropped the non-durable subscription: go on after the last
                # message the application took (what was queued is dropped), as Java's.
                self._io_start_at(last.message_id(), False)
            self._io_resubscribe()

    def _io_resubscribe(self) -> None:
        """The topic was unloaded: subscribe again, as Java's ``ConsumerImpl`` reconnects.
        Queued messages are dropped (the broker delivers the unacked ones again)."""
        conn = self._conn
        self.parent._drop_queued(self)

        def resubscribed(future: Any) -> None:
            if future.exception() is not None:
                log.warning("re-subscribing to %s failed: %s", self.topic, future.exception())
                return
            self.connected = True
            conn.send("FLOW", consumer_id=self.consumer_id, permits=self._queue_size)

        conn.request("SUBSCRIBE", **self._subscribe_fields()).add_done_callback(resubscribed)

    def on_connection_closed(self) -> None:
        self.connected = False

    def _io_closed(self) -> None:
        for timer in (self._ack_timer, self._nack_timer, self._unacked_timer, self._chunk_timer):
            if timer is not None:
                timer.cancel()
        self._ack_timer = self._nack_timer = self._unacked_timer = self._chunk_timer = None
        self._conn.unregister_consumer(self.consumer_id)
        self.parent._drop_queued(self)

    # -- I/O thread: acks -----------------------------------------------------------------

    def _io_take_acks(self) -> None:
        # Cleared first: an ack appended from now on posts this task again; one appended
        # before is counted here.
        self._acks_posted = False
        take = self._acks_in.popleft
        acks = [take() for _ in range(len(self._acks_in))]
        # The flag is read after the pops: a cumulative ack among them set it first.
        if self._only_grouping(self._cumulative_acks):
            # The common burst: individual acks only the grouping tracker has to hear of.
            self._io_grouped(self.acks.add_individuals(acks))
            return
        for ack in acks:
            if type(ack) is tuple:
                self._io_ack(ack[0], True)
            else:
                self._io_ack(ack, False)

    def _only_grouping(self, cumulative: bool) -> bool:
        """Nothing but the grouping tracker has to hear of an ack (no chunks, dead-letter
        counts, nacks or ack timeout to settle): the common case."""
        return not (cumulative or self._chunk_members or self._possible_dlq or self._nacked_at
                    or self.unacked is not None)

    def _io_grouped(self, full: bool) -> None:
        """After acks went to the grouping tracker: flush it when full, else arm its timer."""
        if full:
            self._io_flush_acks()
        elif self._ack_timer is None and self.acks.has_pending:
            self._ack_timer = self._conn.schedule(
                self.config.acknowledgements_group_time_ms, self._io_flush_acks
            )

    def _io_ack(self, msg_id: MessageId | Message, cumulative: bool) -> None:
        if self._only_grouping(cumulative):
            # The common ack: nothing but the grouping tracker has to hear of it.
            self._io_grouped(self.acks.add_individual(msg_id))
            return
        if type(msg_id) is Message:
            msg_id = msg_id.message_id()
        position = msg_id.position
        members = self._chunk_members.pop(position, None)
        flush = False
        if cumulative:
            flush = self.acks.add_cumulative(msg_id)
            if self.unacked is not None:
                self.unacked.remove_up_to(position)
            for p in [p for p in self._possible_dlq if p <= position]:
                del self._possible_dlq[p]
        else:
            for p in members or [position]:
                if p == position:
                    flush |= self.acks.add_individual(msg_id)
                else:
                    flush |= self.acks.add_individual(MessageId(self.partition, p[0], p[1]))
            if self.unacked is not None:
                self.unacked.remove(position)
            waiting = self._possible_dlq.get(position)
            if waiting is not None:
                rest = [m for m in waiting if m.message_id() != msg_id]
                if rest:
                    self._possible_dlq[position] = rest
                else:
                    del self._possible_dlq[position]
        self.nacks.remove(position)
        self._nacked_at.pop(position, None)
        if flush:
            self._io_flush_acks()
        elif self.acks.has_pending and self._ack_timer is None:
            self._ack_timer = self._conn.schedule(
                self.config.acknowledgements_group_time_ms, self._io_flush_acks
            )

    def _io_ack_positions(self, positions: list[Position]) -> None:
        for p in positions:
            self.acks.add_individual(MessageId(self.partition, p[0], p[1]))
        self._io_flush_acks()

    def _io_flush_acks(self) -> None:
        if self._ack_timer is not None:
            self._ack_timer.cancel()
            self._ack_timer = None
        if self.closed and not self.connected:
            return
        flush = self.acks.flush()
        for fields in flush.commands():
            self._conn.send_now("ACK", 0, consumer_id=self.consumer_id, **fields)

    # -- I/O thread: nacks, ack timeout, redelivery ---------------------------------------

    def _new_nack_tracker(self) -> NegativeAcksTracker:
        c = self.config
        return NegativeAcksTracker(c.negative_ack_redelivery_delay_ms,
                                   c.negative_ack_redelivery_backoff)

    def _new_unacked_tracker(self) -> UnAckedMessageTracker | None:
        c = self.config
        if not c.unacked_messages_timeout_ms:
            return None
        return UnAckedMessageTracker(c.unacked_messages_timeout_ms, now_ms(), c.tick_duration_ms,
                                     c.ack_timeout_redelivery_backoff)

    def _io_nack(self, msg_id: MessageId, redelivery_count: int) -> None:
        if self.closed:
            return
        position = msg_id.position  # entry level: the batch index is dropped (Pulsar 3.x)
        now = now_ms()
        self.nacks.add(position, redelivery_count, now)
        self._nacked_at[position] = now
        if self.unacked is not None:
            self.unacked.remove(position)
        self._io_arm_nack_timer()

    def _io_arm_nack_timer(self) -> None:
        at = self.nacks.next_timer_ms
        if at is None or self._nack_timer is not None or self.closed:
            return
        self._nack_timer = self._conn.schedule(at - now_ms(), self._io_nack_fire)

    def _io_nack_fire(self) -> None:
        self._nack_timer = None
        if self.closed:
            return
        now = now_ms()
        due = sorted(self.nacks.on_timer(now))
        if due:
            self._io_redeliver(due, "nack", [self._nacked_at.pop(p, now) for p in due])
        self._io_arm_nack_timer()

    def _io_track_unacked(self, position: Position, redelivery_count: int) -> None:
        if self.unacked is None or self.closed:
            return
        self.unacked.add(position, redelivery_count, now_ms())

    def _io_arm_unacked_timer(self) -> None:
        """The ack-timeout wheel turns every tick while the consumer is open (as in Java)."""
        if self.unacked is None or self.closed or self._unacked_timer is not None:
            return
        self._unacked_timer = self._conn.schedule(self.unacked.next_tick_ms - now_ms(),
                                                  self._io_unacked_tick)

    def _io_unacked_tick(self) -> None:
        self._unacked_timer = None
        if self.unacked is None or self.closed:
            return
        now = now_ms()
        timed_out = sorted(self.unacked.on_tick(now))
        if timed_out:
            self._io_redeliver(timed_out, "ack_timeout", [now] * len(timed_out))
        self._io_arm_unacked_timer()

    def _io_redeliver(self, positions: list[Position], reason: str,
                      requested_at: list[int]) -> None:
        """Redeliver these entries (Shared/Key_Shared); others redeliver everything.

        Entries waiting for the dead-letter topic are handed to the background worker
        instead of being asked for again.
        """
        if not positions or self.closed:
            return
        if self.config.consumer_type not in SHARED_TYPES:
            self._io_redeliver_all(reason)
            return
        again: list[Position] = []
        again_at: list[int] = []
        dead: list[tuple[Position, int]] = []
        for position, at in zip(positions, requested_at, strict=True):
            if position in self._dlq_inflight:
                continue
            if self._dlq_on_redelivery and position in self._possible_dlq:
                dead.append((position, at))
                continue
            for member in self._chunk_members.pop(position, None) or [position]:
                again.append(member)
                again_at.append(at)
        self._io_send_redeliver(again, reason, again_at)
        if dead:
            self._io_dead_letter(dead, reason)

    def _io_send_redeliver(self, positions: list[Position], reason: str,
                           requested_at: list[int]) -> None:
        step = MAX_REDELIVER_UNACKNOWLEDGED
        for i in range(0, len(positions), step):
            self._conn.send_now(
                "REDELIVER_UNACKNOWLEDGED", 0, consumer_id=self.consumer_id,
                positions=[list(p) for p in positions[i:i + step]], reason=reason,
                requested_at=requested_at[i:i + step],
            )

    def _io_dead_letter(self, items: list[tuple[Position, int]], reason: str) -> None:
        jobs = [(p, at, list(self._possible_dlq[p])) for p, at in items]
        self._dlq_inflight.update(p for p, _ in items)
        if not self.parent._background(lambda: self._dead_letter_job(jobs, reason)):
            # The consumer is closing: the broker gets them back when it closes.
            self._dlq_inflight.difference_update(p for p, _ in items)

    def _dead_letter_job(self, jobs: list[tuple[Position, int, list[Message]]],
                         reason: str) -> None:
        """Worker thread: publish to the dead-letter topic, then ack the originals."""
        letters = self.letters
        assert letters is not None
        failed: list[tuple[Position, int]] = []
        try:
            for position, at, messages in jobs:
                try:
                    producer = letters.dead_letter()
                    for m in messages:
                        props = dead_letter_properties(m.properties(), origin_topic(m),
                                                       str(m.message_id()))
                        copy_message(producer, m, props)
                except Exception as exc:  # a failed publish must not strand the entry
                    log.warning("could not dead-letter %s of %s to %s (%s); redelivering it",
                                position, self.topic, letters.policy.dead_letter_topic, exc)
                    failed.append((position, at))
                    continue
                for m in messages:
                    self.acknowledge(m.message_id())
            done = [p for p, _, _ in jobs]
            self._conn.post(lambda: self._io_dead_lettered(done, failed, reason))
        except AlreadyClosed:
            pass  # the client is gone: the broker redelivers whatever was not acked

    def _io_dead_lettered(self, done: list[Position], failed: list[tuple[Position, int]],
                          reason: str) -> None:
        self._dlq_inflight.difference_update(done)
        if failed and not self.closed:
            again: list[Position] = []
            again_at: list[int] = []
            for position, at in failed:
                for member in self._chunk_members.pop(position, None) or [position]:
                    again.append(member)
                    again_at.append(at)
            self._io_send_redeliver(again, reason, again_at)

    def _io_reset_trackers(self) -> None:
        """Forget nacks, ack timeouts and dead-letter candidates (they all come back)."""
        if self._nack_timer is not None:
            self._nack_timer.cancel()
            self._nack_timer = None
        self.nacks = self._new_nack_tracker()
        self._nacked_at.clear()
        if self.unacked is not None:
            self.unacked = self._new_unacked_tracker()
            if self._unacked_timer is not None:
                self._unacked_timer.cancel()
                self._unacked_timer = None
            self._io_arm_unacked_timer()
        self._possible_dlq.clear()

    def _io_redeliver_all(self, reason: str = "consumer_request") -> None:
        """Ask for every unacked message again; what sits in the local queue is dropped."""
        if self.closed:
            return
        self._io_flush_acks()
        self.acks.forget_batches()
        self.chunks.clear()
        self._chunk_members.clear()
        self._io_reset_trackers()
        dropped = self.parent._drop_queued(self)
        self.add_permits(dropped)
        self._conn.send_now("REDELIVER_UNACKNOWLEDGED", 0, consumer_id=self.consumer_id,
                            reason=reason)

    def _io_reset_after_seek(self, target: MessageId | int) -> None:
        self.acks.flush()
        self.acks.forget_batches()
        self.acks.reset_cumulative()
        self.chunks.clear()
        self._chunk_members.clear()
        self._io_reset_trackers()
        self._last_read = None
        if not self.config.durable:
            pass  # seek() already set where the next subscription starts (_io_start_at)
        elif isinstance(target, MessageId):
            self._io_start_at(target, self.config.start_message_id_inclusive)
        else:
            self._io_start_at(None, True)
        dropped = self.parent._drop_queued(self)
        self.add_permits(dropped)

    def _io_arm_chunk_expiry(self) -> None:
        deadline = self.chunks.next_expiry()
        if deadline is None or self._chunk_timer is not None:
            return
        self._chunk_timer = self._conn.schedule(deadline - now_ms(), self._io_chunk_expiry)

    def _io_chunk_expiry(self) -> None:
        self._chunk_timer = None
        expired = self.chunks.expire(now_ms())
        if expired:
            self._io_ack_positions(expired)
        self._io_arm_chunk_expiry()


def _without_compacted_out(ack_set: int | None, compacted_out: list[int], n: int) -> int:
    """The batch's ack set (bits set: still to deliver) without the messages compaction
    left out: they are skipped, as Java's ``ConsumerImpl`` skips ``compacted_out`` ones,
    and count as acknowledged, so acking the survivors acknowledges the entry."""
    unacked = (1 << n) - 1 if ack_set is None else ack_set
    for index in compacted_out:
        unacked &= ~(1 << index)
    return unacked
