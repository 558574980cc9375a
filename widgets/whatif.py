"""What-if mode: the real broker core on a simulated clock, with a simulated client per consumer.

:class:`WhatIf` owns a :class:`~pulsarlab.broker.BrokerService` over memory storage and a
:class:`~pulsarlab.broker.ManualClock` — the very dispatchers, selectors and cursors the
broker runs, never a second model. Its methods are the buttons of the views: add or remove
a consumer, publish keys, receive, ack, nack, advance time. Each consumer has a small client
beside it that behaves like pulsar-client's: it grants its receiver queue size as permits on
subscribe, holds pushed messages in its queue until the application receives them, and
grants permits again once half the queue has been consumed.

After every operation the registered views are told once (:meth:`WhatIf.on_change`), so a
burst of core events inside one click costs one frame; :meth:`WhatIf.batch` groups several
operations into one frame.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pulsarlab.broker import (
    BrokerService,
    BrokerSettings,
    KeySharedMeta,
    KeySharedMetaMode,
    ManualClock,
    MessageId,
    MessageMetadata,
    SubType,
    TopicName,
)
from pulsarlab.broker.actions import ActiveConsumerChange, Deliver
from pulsarlab.broker.consumer import ServerConsumer
from pulsarlab.broker.entry import read_header
from pulsarlab.broker.format.batch import OutgoingMessage, encode_batch
from pulsarlab.broker.selectors import StickyKeyConsumerSelector, partition_for_key
from pulsarlab.broker.storage import MemoryStorage

from .pulsar_stats import Position
from .source import ClientState, EventLog, Palette, Snapshot

__all__ = ["WhatIf"]

log = logging.getLogger("pulsarlab.widgets")


@dataclass
class _Client:
    """pulsar-client's view of one consumer on one topic (partition)."""

    consumer: ServerConsumer
    topic: str
    queue_size: int
    queue: deque[Position] = field(default_factory=deque)
    received: list[Position] = field(default_factory=list)
    consumed_since_flow: int = 0


def _publish_label(keys: list[str | None]) -> str:
    shown = ", ".join("-" if k is None else k for k in keys[:4])
    more = f" … ({len(keys)} messages)" if len(keys) > 4 else ""
    return f"publish {shown}{more}"


class WhatIf:
    """Drive the broker core by hand for one topic and subscription.

    ``partitions=0`` makes a non-partitioned topic; ``n > 0`` a partitioned one whose
    consumers, like a partitioned consumer of pulsar-client, attach to every partition.
    Other keyword arguments are broker settings (e.g.
    ``key_shared_use_consistent_hashing=False`` for AUTO_SPLIT hash ranges,
    ``active_consumer_failover_delay_ms``, or ``pulsar_version="4.0"`` for Pulsar 4.0's
    Key_Shared).
    """

    simulated = True

    def __init__(
        self,
        sub_type: SubType | str = SubType.Key_Shared,
        *,
        topic: str = "what-if",
        subscription: str = "what-if-sub",
        partitions: int = 0,
        key_shared_mode: KeySharedMetaMode | str = KeySharedMetaMode.AUTO_SPLIT,
        receiver_queue_size: int = 10,
        batch_index_ack: bool = False,
        clock: ManualClock | None = None,
        **settings: Any,
    ) -> None:
        self.sub_type = SubType(sub_type)
        self.key_shared_mode = KeySharedMetaMode(key_shared_mode)
        self.receiver_queue_size = receiver_queue_size
        self.batch_index_ack = batch_index_ack
        self.clock = clock or ManualClock()
        self.settings = BrokerSettings.from_kwargs(**settings)
        self.service = BrokerService(MemoryStorage(), self.clock, self.settings)
        self.events = EventLog()
        self.palette = Palette()
        self.start_ms = self.clock.now_ms()
        self.service.add_listener(self.events.append)
        name = TopicName.get(topic)
        self.topic = str(name)
        self.subscription = subscription
        self.partitions = partitions
        if partitions:
            self.service.create_partitioned_topic(self.topic, partitions)
            self.partition_topics = [str(name.partition(i)) for i in range(partitions)]
        else:
            self.partition_topics = [self.service.get_topic(self.topic).name]
        for t in self.partition_topics:
            self.service.create_subscription(t, subscription, MessageId.earliest)
        self.active: dict[int, bool] = {}
        self._clients: dict[int, _Client] = {}
        self._by_name: dict[str, list[_Client]] = {}
        self._producers: dict[str, int] = {}
        # pulsar-client numbers each producer's messages 0, 1, 2, ...
        self._sequence_ids: dict[str, Iterator[int]] = {}
        self._round_robin = itertools.count()
        self.published_keys: list[str | None] = []
        """Each key published so far, once, in first-published order (``None``: key-less)."""
        self._callbacks: list[Callable[[], None]] = []
        self._batch_depth = 0
        self._changed_in_batch = False
        self._actions: list[str] = []
        self.last_action = "start"
        """What the operations since the previous notification did (a view step's label)."""
        self._version = 0
        self._cached: tuple[int, Snapshot] | None = None

    # -- notifications --------------------------------------------------------------------

    def on_change(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (a view's refresh) after every operation."""
        self._callbacks.append(callback)

    @contextlib.contextmanager
    def batch(self) -> Iterator[WhatIf]:
        """Group operations: the views are told once, at the end."""
        self._batch_depth += 1
        try:
            yield self
        finally:
            self._batch_depth -= 1
            if self._batch_depth == 0 and self._changed_in_batch:
                self._changed_in_batch = False
                self._notify()

    def _changed(self, action: str = "change") -> None:
        self._drain()
        self._version += 1
        self._actions.append(action)
        if self._batch_depth:
            self._changed_in_batch = True
        else:
            self._notify()

    def _notify(self) -> None:
        self.last_action = "; ".join(self._actions)
        self._actions = []
        for callback in list(self._callbacks):
            callback()

    # -- reading --------------------------------------------------------------------------

    def now_ms(self) -> int:
        return self.clock.now_ms()

    @property
    def consumer_names(self) -> list[str]:
        return list(self._by_name)

    def selector(self, partition: int = 0) -> StickyKeyConsumerSelector | None:
        """The Key_Shared dispatcher's live selector (the broker's own object)."""
        sub = self._subscription(partition)
        return sub.dispatcher.selector if sub.dispatcher is not None else None

    def dispatcher(self, partition: int = 0) -> Any:
        return self._subscription(partition).dispatcher

    def _subscription(self, partition: int) -> Any:
        return self.service.topics[self.partition_topics[partition]].subscriptions[
            self.subscription
        ]

    def snapshot(self) -> Snapshot:
        """Stats and internal stats of every partition, plus the simulated clients."""
        if self._cached is not None and self._cached[0] == self._version:
            return self._cached[1]
        topics = {t: self.service.topic_stats(t) for t in self.partition_topics}
        internal = {t: self.service.internal_stats(t) for t in self.partition_topics}
        clients: dict[str, ClientState] = {}
        pending: dict[str, tuple[Position, ...]] = {}
        for name, parts in self._by_name.items():
            clients[name] = ClientState(
                queue=sum(len(c.queue) for c in parts),
                queue_size=sum(c.queue_size for c in parts),
                received=tuple(p for c in parts for p in c.received),
            )
            pending[name] = tuple(sorted(p for c in parts for p in c.consumer.pending_acks))
        snap = Snapshot(
            time_ms=self.now_ms(),
            topics=topics,
            internal=internal,
            clients=clients,
            pending=pending,
            settings={
                "pulsar_version": self.settings.pulsar_version,
                "key_shared_use_consistent_hashing":
                    self.settings.key_shared_use_consistent_hashing,
                "consistent_hashing_points":
                    self.settings.subscription_key_shared_consistent_hashing_replica_points,
                "active_consumer_failover_delay_ms":
                    self.settings.active_consumer_failover_delay_ms,
            },
        )
        self._cached = (self._version, snap)
        return snap

    # -- consumers ------------------------------------------------------------------------

    def add_consumer(
        self,
        name: str,
        *,
        priority_level: int = 0,
        hash_ranges: Iterable[tuple[int, int]] | None = None,
        allow_out_of_order_delivery: bool = False,
        receiver_queue_size: int | None = None,
    ) -> None:
        """Subscribe a consumer named ``name`` (to every partition) and grant its permits.

        ``hash_ranges`` are a Key_Shared STICKY consumer's declared slot ranges. Broker
        errors (a range conflict, a type mismatch) propagate with nothing changed.
        """
        if name in self._by_name:
            raise ValueError(f"a consumer named {name!r} is already connected")
        meta = None
        if self.sub_type is SubType.Key_Shared:
            meta = KeySharedMeta(
                self.key_shared_mode,
                tuple((int(start), int(end)) for start, end in hash_ranges or ()),
                allow_out_of_order_delivery,
            )
        size = receiver_queue_size or self.receiver_queue_size
        clients: list[_Client] = []
        try:
            for t in self.partition_topics:
                consumer = self.service.subscribe(
                    t, self.subscription, name, self.sub_type,
                    priority_level=priority_level, key_shared_meta=meta,
                    batch_index_ack_enabled=self.batch_index_ack,
                )
                client = _Client(consumer, t, size)
                self._clients[consumer.consumer_id] = client
                clients.append(client)
        except Exception:
            for client in clients:
                self._close(client)
            self._drain()
            raise
        self._by_name[name] = clients
        self.palette.color(name)
        for client in clients:
            self.service.flow(client.consumer.consumer_id, size)
        self._changed(f"add consumer {name}")

    def remove_consumer(self, name: str) -> None:
        """Close the consumer (its unacknowledged messages go back to the subscription)."""
        for client in self._clients_of(name):
            self._close(client)
        del self._by_name[name]
        self._changed(f"remove consumer {name}")

    def _close(self, client: _Client) -> None:
        self._clients.pop(client.consumer.consumer_id, None)
        self.service.close_consumer(client.consumer.consumer_id)

    def _clients_of(self, name: str) -> list[_Client]:
        clients = self._by_name.get(name)
        if clients is None:
            raise KeyError(f"no consumer named {name!r}")
        return clients

    # -- producing ------------------------------------------------------------------------

    def publish(
        self,
        keys: Iterable[str | None] | str | None = None,
        *,
        count: int = 1,
        batch: int | None = None,
        ordering_key: bytes | None = None,
        properties: Mapping[str, str] | None = None,
        payload: bytes = b"what-if",
    ) -> list[Position]:
        """Publish one message per key (``None`` = no key) and confirm them.

        With no ``keys``, ``count`` key-less messages. Keyed messages of a partitioned topic
        go to ``partition_for_key``; key-less ones round-robin, as pulsar-client routes.
        ``payload=b""`` publishes tombstones (for :meth:`compact`).
        """
        if keys is None or isinstance(keys, str):
            keys = [keys] * (count if keys is None else 1)
        keys = list(keys)
        self.published_keys += [k for k in dict.fromkeys(keys) if k not in self.published_keys]
        positions: list[Position] = []
        for key in keys:
            topic = self._route(key)
            producer_id = self._producer(topic)
            metadata = MessageMetadata(
                partition_key=key, ordering_key=ordering_key, num_messages_in_batch=batch,
                properties=dict(properties or {}),
                sequence_id=next(self._sequence_ids.setdefault(topic, itertools.count())),
            )
            positions.append(self.service.send(producer_id, metadata, payload))
        self.service.commit()
        self._changed(_publish_label(keys))
        return positions

    def publish_batch(self, keys: Iterable[str | None], *, payload: bytes = b"what-if"
                      ) -> Position:
        """Publish one batch holding a message per key (``None`` = no key), as a batching
        producer does; its entry goes where its first key routes."""
        keys = list(keys)
        if not keys:
            raise ValueError("a batch holds at least one message")
        self.published_keys += [k for k in dict.fromkeys(keys) if k not in self.published_keys]
        topic = self._route(keys[0])
        sequence_ids = self._sequence_ids.setdefault(topic, itertools.count())
        messages = [OutgoingMessage(payload, partition_key=key, sequence_id=next(sequence_ids))
                    for key in keys]
        metadata = MessageMetadata(
            num_messages_in_batch=len(messages), partition_key=keys[0],
            sequence_id=messages[0].sequence_id, highest_sequence_id=messages[-1].sequence_id,
        )
        position = self.service.send(self._producer(topic), metadata, encode_batch(messages))
        self.service.commit()
        self._changed(f"{_publish_label(keys)} in one batch")
        return position

    def _route(self, key: str | None) -> str:
        if not self.partitions:
            return self.partition_topics[0]
        if key is None:
            return self.partition_topics[next(self._round_robin) % self.partitions]
        return self.partition_topics[partition_for_key(key, self.partitions)]

    def _producer(self, topic: str) -> int:
        producer_id = self._producers.get(topic)
        if producer_id is None:
            producer_id = self.service.create_producer(topic).producer_id
            self._producers[topic] = producer_id
        return producer_id

    # -- consuming ------------------------------------------------------------------------

    def receive(self, name: str, n: int | None = None) -> list[Position]:
        """The application takes up to ``n`` (default all) messages from the queue.

        Permits are granted again once half the receiver queue has been consumed, as
        pulsar-client does.
        """
        got: list[Position] = []
        for client in self._clients_of(name):
            while client.queue and (n is None or len(got) < n):
                position = client.queue.popleft()
                client.received.append(position)
                got.append(position)
                client.consumed_since_flow += 1
            if client.consumed_since_flow >= max(1, client.queue_size // 2):
                self.service.flow(client.consumer.consumer_id, client.consumed_since_flow)
                client.consumed_since_flow = 0
        self._changed(f"{name} receives")
        return got

    def ack(
        self,
        name: str,
        positions: Iterable[Position] | None = None,
        *,
        batch_indexes: Mapping[Position, Iterable[int]] | None = None,
    ) -> None:
        """Acknowledge ``positions`` (default: everything received and not yet acked).

        ``batch_indexes`` acks only some messages of a batched entry (batch-index ack,
        honoured when the broker and the consumer enable it).
        """
        for client in self._clients_of(name):
            chosen = self._choose(client, positions)
            if batch_indexes:
                chosen |= {p for p in batch_indexes if self._owns(client, p)}
            if not chosen:
                continue
            ack_sets = {}
            for position, indexes in (batch_indexes or {}).items():
                if position in chosen:
                    size = self._batch_size(client.topic, position)
                    acked = sum(1 << i for i in indexes)
                    ack_sets[position] = (((1 << size) - 1) & ~acked, size)
            self.service.ack(client.consumer.consumer_id, sorted(chosen), ack_sets=ack_sets)
            fully = chosen - set(ack_sets)
            client.received = [p for p in client.received if p not in fully]
            client.queue = deque(p for p in client.queue if p not in fully)
        self._changed(f"{name} acks")

    def ack_cumulative(self, name: str, position: Position) -> None:
        """Acknowledge everything up to ``position`` (Exclusive/Failover only)."""
        for client in self._clients_of(name):
            ledgers = self.service.topics[client.topic].ledger.ledgers
            if any(info.ledger_id == position[0] for info in ledgers):
                self.service.ack(client.consumer.consumer_id, [position], cumulative=True)
                client.received = [p for p in client.received if p > position]
        self._changed(f"{name} acks cumulatively up to {position[0]}:{position[1]}")

    def nack(self, name: str, positions: Iterable[Position] | None = None) -> None:
        """Give messages back for redelivery (default: everything received, unacked).

        The core has no negative-ack timer yet, so this is Pulsar's
        ``redeliverUnacknowledgedMessages`` for those messages: they are redelivered at once.
        """
        for client in self._clients_of(name):
            chosen = self._choose(client, positions)
            if not chosen:
                continue
            self.service.redeliver_unacknowledged(client.consumer.consumer_id, sorted(chosen))
            client.received = [p for p in client.received if p not in chosen]
            client.queue = deque(p for p in client.queue if p not in chosen)
        self._changed(f"{name} nacks")

    def redeliver_all(self, name: str) -> None:
        """``consumer.redeliver_unacknowledged_messages()``: drop the queue, redeliver all."""
        for client in self._clients_of(name):
            cleared = len(client.queue)
            client.queue.clear()
            client.received.clear()
            self.service.redeliver_unacknowledged(client.consumer.consumer_id)
            if cleared:
                self.service.flow(client.consumer.consumer_id, cleared)
        self._changed(f"{name} asks to redeliver unacked")

    def flow(self, name: str, permits: int) -> None:
        """Grant extra permits by hand."""
        for client in self._clients_of(name):
            self.service.flow(client.consumer.consumer_id, permits)
        self._changed(f"{name} flows {permits} permits")

    def _choose(self, client: _Client, positions: Iterable[Position] | None) -> set[Position]:
        if positions is None:
            return set(client.received)
        chosen = {(int(p[0]), int(p[1])) for p in positions}
        return {p for p in chosen if self._owns(client, p)}

    @staticmethod
    def _owns(client: _Client, position: Position) -> bool:
        return position in client.received or position in client.consumer.pending_acks

    def _batch_size(self, topic: str, position: Position) -> int:
        data = self.service.topics[topic].ledger.read_entry(position)
        return read_header(data).num_messages if data is not None else 1

    # -- compaction ---------------------------------------------------------------------

    def compact(self) -> None:
        """Compact the topic (each partition) now, as ``admin topics compact``."""
        for topic in self.partition_topics:
            self.service.compact_topic(topic)
        self._changed("compact")

    # -- time -----------------------------------------------------------------------------

    def advance(self, ms: int) -> None:
        """Move the simulated clock on and run the broker's timers."""
        self.clock.advance(ms)
        self.service.tick()
        self._changed(f"advance {ms} ms")

    # -- actions --------------------------------------------------------------------------

    def _drain(self) -> None:
        for action in self.service.take_actions():
            if isinstance(action, Deliver):
                client = self._clients.get(action.consumer_id)
                if client is not None:
                    client.queue.extend(e.position for e in action.entries)
            elif isinstance(action, ActiveConsumerChange):
                self.active[action.consumer_id] = action.is_active
