"""``BrokerService``: the sans-I/O broker core.

It owns topics, producers, consumers and timers, the schema registry and the authorizer
(namespace permissions) every face and the admin API share. Commands come in as method calls;
what must go out (messages to push, send receipts, active-consumer notices) is queued as
actions that the shell drains with :meth:`take_actions`; state changes go to event
listeners. Time comes from an injected clock and only moves when :meth:`tick` is called.

Publishing is two-phase, for group commit: :meth:`send` appends, :meth:`commit` makes all
appended entries durable at once, then releases their receipts and dispatches them.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from .actions import Action, ConsumerClosed, ProducerClosed, ProducerReady, SendReceipts
from .authorization import Authorizer
from .clock import Clock, TimerHandle, TimerQueue
from .consumer import KeySharedMeta, ServerConsumer, SubType
from .entry import MessageMetadata, check_ranges
from .errors import (
    ConsumerNotFound,
    InvalidArgument,
    MetadataError,
    NotAllowed,
    PartitionsNotIncreased,
    ProducerBusy,
    ProducerNotFound,
    PulsarLabError,
    StorageError,
    SubscriptionAlreadyExists,
    SubscriptionNotFound,
    TopicAlreadyExists,
    TopicBusy,
    TopicNotFound,
    TopicTerminated,
)
from .events import EventListener, EventType, make_event
from .format.metadata import is_encrypted
from .limits import check_topic_quota
from .message_id import MessageId
from .non_persistent import NonPersistentTopic
from .policies import POLICY_KEYS, Policies, validate_policy
from .producer_access import ProducerAccessMode
from .rates import Rate, date_string
from .redelivery_request import RedeliveryRequest
from .schemas import SchemaRegistry
from .settings import BrokerSettings
from .storage import MemoryStorage
from .storage.base import Position, Storage
from .subscription import Subscription
from .topic import AbstractTopic, PersistentTopic, Producer
from .topic_name import TopicName

_I64_MAX = (1 << 63) - 1
log = logging.getLogger("pulsarlab.broker")

_new_tuple = tuple.__new__  # a NamedTuple's own __new__ takes three times as long


class LastMessageId(NamedTuple):
    """A consumer's GetLastMessageId answer (``batch_index`` -1: not in a batch)."""

    ledger_id: int
    entry_id: int
    partition: int
    batch_index: int
    mark_delete_position: Position


class BrokerService:
    """The broker core: topics, subscriptions and dispatch, with no I/O of its own.

    It is the :class:`~pulsarlab.broker.context.CoreContext` of its topics.
    """

    def __init__(
        self,
        storage: Storage,
        clock: Clock,
        settings: BrokerSettings | None = None,
    ) -> None:
        self.storage = storage
        self.clock = clock
        self.settings = settings or BrokerSettings()
        self.topics: dict[str, AbstractTopic] = {}
        self.producers: dict[int, Producer] = {}
        self.consumers: dict[int, tuple[ServerConsumer, Subscription]] = {}
        self.outbox: list[Action] = []
        self.dirty_topics: set[AbstractTopic] = set()
        self._listeners: list[EventListener] = []
        self._timers = TimerQueue()
        self._ids = itertools.count(1)
        self._producer_names = itertools.count(0)
        self._next_housekeeping = self.now_ms() + self.settings.retention_check_interval_ms
        self._next_stats_update = (
            self.now_ms() + self.settings.stats_update_initial_delay_in_secs * 1000
        )
        self._next_unload_check = self.now_ms() + self._unload_frequency_ms()
        self._inactive_since: dict[str, int] = {}  # topic -> first seen inactive
        self._policies: dict[str, Policies] = {}
        self._non_persistent_storage = MemoryStorage()
        # One registry and one authorizer for every face and the admin API, saved in the
        # metadata store (they survive a restart).
        self.schemas = SchemaRegistry(storage.metadata)
        self.authorizer = Authorizer(self.settings, storage.metadata)
        self._load_topics()

    # -- time, events, actions ------------------------------------------------------------

    def now_ms(self) -> int:
        return self.clock.now_ms()

    @property
    def has_listeners(self) -> bool:
        return bool(self._listeners)

    def add_listener(self, listener: EventListener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: EventListener) -> None:
        self._listeners.remove(listener)

    def emit(
        self,
        type_: EventType,
        topic: str,
        subscription: str | None = None,
        consumer: str | None = None,
        **data: Any,
    ) -> None:
        if not self._listeners:
            return
        event = make_event(type_, self.now_ms(), topic, subscription, consumer, **data)
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                log.exception("event listener failed on %s", type_)

    def take_actions(self) -> list[Action]:
        """Everything queued for the shell since the last call."""
        actions, self.outbox = self.outbox, []
        return actions

    def push(self, action: Action) -> None:
        self.outbox.append(action)

    # What a face asks of the queue: its answers keep their order behind queued actions.

    def push_behind_pending(self, action: Action) -> bool:
        """Queue ``action`` (a face's answer) behind the actions queued so far, which may
        be for its connection and must reach it first; ``False`` (nothing queued) when it
        can go out at once."""
        if not self.outbox:
            return False
        self.outbox.append(action)
        return True

    def take_actions_for(self, conn: Any) -> list[Action]:
        """The actions queued for ``conn``, in order, taken out of the queue (a closing
        connection writes them first)."""
        outbox = self.outbox
        mine = [action for action in outbox if action.conn is conn]
        if mine:
            outbox[:] = [action for action in outbox if action.conn is not conn]
        return mine

    def actions_mark(self) -> int:
        """A mark of the queue's end, for :meth:`find_action`."""
        return len(self.outbox)

    def find_action(self, mark: int, wanted: Callable[[Action], bool]) -> int | None:
        """The place of the first action queued since ``mark`` that is ``wanted`` (for
        :meth:`insert_action`), ``None`` if there is none."""
        outbox = self.outbox
        for index in range(mark, len(outbox)):
            if wanted(outbox[index]):
                return index
        return None

    def insert_action(self, index: int, action: Action) -> None:
        """Queue ``action`` at ``index`` (from :meth:`find_action`), before what is there."""
        self.outbox.insert(index, action)

    def mark_dirty(self, topic: AbstractTopic) -> None:
        self.dirty_topics.add(topic)

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        return self._timers.schedule(self.now_ms() + max(0, delay_ms), callback)

    def next_deadline(self) -> int | None:
        """When :meth:`tick` next has something to do (ms since the epoch), if ever."""
        deadline = self._timers.next_deadline()
        if deadline is None or self._next_housekeeping < deadline:
            deadline = self._next_housekeeping
        return min(deadline, self._next_stats_update, self._next_unload_check)

    def tick(self) -> None:
        """Run timers that are due at the clock's current time, and housekeeping."""
        now = self.now_ms()
        self._timers.run_due(now)
        for topic in list(self.topics.values()):
            topic.housekeeping(now)
            for subscription in list(topic.subscriptions.values()):
                subscription.tick(now)
        if now >= self._next_housekeeping:
            self._next_housekeeping = now + self.settings.retention_check_interval_ms
            for topic in list(self.topics.values()):
                topic.trim_ledgers()
        if now >= self._next_stats_update:
            self._next_stats_update = now + self.settings.stats_update_frequency_in_secs * 1000
            self.update_rates()
        if now >= self._next_unload_check:
            self._next_unload_check = now + self._unload_frequency_ms()
            self._unload_inactive_topics(now)

    def update_rates(self) -> None:
        """Close the stats interval now (``BrokerService.updateRates``): every topic's,
        producer's, subscription's and consumer's rates become those of the interval."""
        now = self.now_ms()
        for topic in self.topics.values():
            topic.update_rates(now)

    # -- inactive topics ------------------------------------------------------------------

    def _unload_frequency_ms(self) -> int:
        return max(1, self.settings.broker_unload_inactive_topics_frequency_seconds) * 1000

    def _inactive(self, topic: AbstractTopic) -> bool:
        """Nobody uses it: no producer, no consumer, nothing being published or held."""
        return (
            not topic.producers and not topic.pending_sends and not topic.held_sends
            and topic not in self.dirty_topics
            and not any(sub.consumers for sub in topic.subscriptions.values())
        )

    def _unload_inactive_topics(self, now: int) -> None:
        """Unload persistent topics inactive for the configured time (checked every
        ``broker_unload_inactive_topics_frequency_seconds``).

        Pulsar's inactive-topic rules (brokerDeleteInactiveTopics*) delete such topics;
        here they are only unloaded, which keeps every message and cursor: the topic is
        closed as at a clean shutdown (cursors saved, files closed, memory freed) and the
        next producer, consumer or admin call reloads it as a restart would.
        """
        settings = self.settings
        if not settings.broker_unload_inactive_topics_enabled or not self.storage.durable:
            self._inactive_since.clear()
            return
        limit_ms = settings.broker_unload_inactive_topics_max_inactive_duration_seconds * 1000
        since = self._inactive_since
        for name, topic in list(self.topics.items()):
            if not isinstance(topic, PersistentTopic) or not self._inactive(topic):
                since.pop(name, None)
            elif now - since.setdefault(name, now) >= limit_ms:
                self.unload_topic(name)

    def unload_topic(self, topic: str, force: bool = False) -> None:
        """Close a loaded topic; its next use reloads it.

        Without ``force`` only a topic nobody uses is closed (``TopicBusy`` otherwise).
        With ``force`` (admin ``unload``, Pulsar's ``PersistentTopic.close``) its producers
        and consumers are disconnected first (CLOSE_PRODUCER / CLOSE_CONSUMER: clients
        reconnect by themselves) and what was appended is committed; the consumers' unacked
        messages go back to their subscriptions and are delivered again. A topic that
        storage cannot reload (non-persistent, or in-memory storage) stays loaded once its
        clients are disconnected.
        """
        loaded = self.topics.get(str(TopicName.get(topic)))
        if loaded is None:
            return
        if force:
            self._disconnect_clients_of(loaded, "unloaded")
            self.commit()
        elif not self._inactive(loaded):
            raise TopicBusy(f"topic {loaded.name} has connected producers or consumers")
        if not isinstance(loaded, PersistentTopic) or not self.storage.durable:
            return
        del self.topics[loaded.name]
        self._inactive_since.pop(loaded.name, None)
        try:
            loaded.close()
        except StorageError as exc:
            log.error("unloading topic %s: %s", loaded.name, exc)
            return
        log.info("unloaded topic %s", loaded.name)

    def _disconnect_clients_of(self, topic: AbstractTopic, reason: str) -> None:
        """Close every consumer and producer of ``topic``, telling their clients."""
        for consumer_id, (consumer, sub) in list(self.consumers.items()):
            if sub.topic is topic:
                self.close_consumer(consumer_id)
                self.outbox.append(ConsumerClosed(consumer_id, consumer.conn, reason))
        self.close_producers_of(topic.name, reason)

    # -- topics ---------------------------------------------------------------------------

    def _load_topics(self) -> None:
        """Reopen every topic the metadata store knows (recovering ledgers after a crash)."""
        for name, partitions in self.storage.metadata.list_topics().items():
            if partitions == 0:
                self._open_topic(TopicName.get(name))

    def _stored_topics(self) -> list[str]:
        """Every topic (each partition) the metadata stores hold, loaded or unloaded."""
        return [
            name
            for store in (self.storage.metadata, self._non_persistent_storage.metadata)
            for name, partitions in store.list_topics().items()
            if partitions == 0
        ]

    def storage_for(self, name: TopicName) -> Storage:
        """Persistent topics live in the broker's storage; non-persistent ones in memory."""
        return self.storage if name.persistent else self._non_persistent_storage

    def _open_topic(self, name: TopicName) -> AbstractTopic:
        key = str(name)
        topic = self.topics.get(key)
        if topic is None:
            storage = self.storage_for(name)
            ledger = storage.open_ledger(key, self.settings.ledger_config(), self.now_ms())
            cls = PersistentTopic if name.persistent else NonPersistentTopic
            topic = cls(self, name, ledger, storage.metadata)
            self.topics[key] = topic
        return topic

    def get_topic(self, topic: str, create: bool | None = None) -> AbstractTopic:
        """The topic (partition) named ``topic``, auto-created if allowed."""
        name = TopicName.get(topic)
        key = str(name)
        existing = self.topics.get(key)
        if existing is not None:
            return existing
        metadata = self.storage_for(name).metadata
        partitions = metadata.get_topic(key)
        if partitions is not None and partitions > 0:
            raise NotAllowed(
                f"{key} is a partitioned topic with {partitions} partitions; "
                f"use its partitions ({key}-partition-0 …)"
            )
        if partitions is None:
            parent = (
                metadata.get_topic(str(name.partitioned_topic_name)) if name.is_partition else None
            )
            if parent and name.partition_index >= parent:
                raise TopicNotFound(
                    f"{key}: partition {name.partition_index} does not exist "
                    f"(the topic has {parent} partitions)"
                )
            allow = self.settings.allow_auto_topic_creation if create is None else create
            if not allow:
                raise TopicNotFound(f"topic {key} does not exist")
            check_topic_quota(self.settings, self._stored_topics(), name)
            metadata.put_topic(key, 0)
            self.emit(EventType.TOPIC_CREATED, key, partitions=0)
        return self._open_topic(name)

    def create_topic(self, topic: str) -> str:
        """Create a non-partitioned topic; an existing one is an error."""
        name = TopicName.get(topic)
        key = str(name)
        if self.storage_for(name).metadata.get_topic(key) is not None:
            raise TopicAlreadyExists(f"topic {key} already exists")
        return self.get_topic(key, create=True).name

    def create_partitioned_topic(self, topic: str, partitions: int) -> str:
        """Record a partitioned topic of ``partitions`` partitions and create them."""
        name = TopicName.get(topic)
        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
            raise InvalidArgument(f"number of partitions must be an int >= 1, not {partitions!r}")
        limit = self.settings.max_num_partitions_per_partitioned_topic
        if 0 < limit < partitions:
            raise InvalidArgument(
                f"{partitions} partitions exceed max_num_partitions_per_partitioned_topic={limit}"
            )
        if name.is_partition:
            raise InvalidArgument(f"{name} is a partition name; pick a name without -partition-N")
        key = str(name)
        metadata = self.storage_for(name).metadata
        if metadata.get_topic(key) is not None:
            raise TopicAlreadyExists(f"topic {key} already exists")
        check_topic_quota(self.settings, self._stored_topics(), name, partitions)
        metadata.put_topic(key, partitions)
        for i in range(partitions):
            self.get_topic(str(name.partition(i)), create=True)
        self.emit(EventType.TOPIC_CREATED, key, partitions=partitions)
        return key

    def update_partitioned_topic(self, topic: str, partitions: int) -> None:
        """Grow a partitioned topic to ``partitions`` partitions (Pulsar never shrinks one).

        The new partitions get the durable subscriptions of partition 0, from the earliest
        message, as Pulsar's ``updatePartitionedTopic`` does."""
        name = TopicName.get(topic)
        key = str(name)
        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
            raise InvalidArgument(f"number of partitions must be an int >= 1, not {partitions!r}")
        metadata = self.storage_for(name).metadata
        current = metadata.get_topic(key)
        if current is None:
            raise TopicNotFound(f"topic {key} does not exist")
        if current == 0:
            raise NotAllowed(f"topic {key} is not a partitioned topic")
        if partitions < current:
            raise PartitionsNotIncreased(
                f"expected partitions {partitions} can't be less than the current {current}"
            )
        limit = self.settings.max_num_partitions_per_partitioned_topic
        if 0 < limit < partitions:
            raise PartitionsNotIncreased(
                f"{partitions} partitions exceed max_num_partitions_per_partitioned_topic={limit}"
            )
        if partitions == current:
            return
        check_topic_quota(self.settings, self._stored_topics(), name, partitions - current)
        first = self.get_topic(str(name.partition(0)), create=True)
        durable = [n for n, sub in first.subscriptions.items() if sub.durable]
        metadata.put_topic(key, partitions)
        for i in range(current, partitions):
            part = str(name.partition(i))
            self.get_topic(part, create=True)
            for sub_name in durable:
                self.create_subscription(part, sub_name, MessageId.earliest)
        self.emit(EventType.TOPIC_CREATED, key, partitions=partitions)

    def get_partitioned_topic_metadata(self, topic: str) -> int:
        """Number of partitions (0 for a non-partitioned topic)."""
        name = TopicName.get(topic)
        partitions = self.storage_for(name).metadata.get_topic(str(name))
        return partitions or 0

    def list_topics(self, namespace: str | None = None, include_system: bool = False) -> list[str]:
        """Topic names; partitioned topics are listed by their parent name."""
        out = []
        for store in (self.storage.metadata, self._non_persistent_storage.metadata):
            for name, partitions in store.list_topics().items():
                parsed = TopicName.get(name)
                if namespace and parsed.namespace != namespace:
                    continue
                if parsed.is_system_topic and not include_system:
                    continue
                parent = str(parsed.partitioned_topic_name)
                if partitions == 0 and parsed.is_partition and store.get_topic(parent):
                    continue
                out.append(name)
        return sorted(out)

    def delete_topic(self, topic: str, force: bool = False) -> None:
        name = TopicName.get(topic)
        key = str(name)
        metadata = self.storage_for(name).metadata
        partitions = metadata.get_topic(key)
        if partitions is None:
            raise TopicNotFound(f"topic {key} does not exist")
        names = [key] if partitions == 0 else [
            str(TopicName.get(key).partition(i)) for i in range(partitions)
        ]
        targets = [self.get_topic(n, create=True) for n in names]
        if not force:
            for t in targets:
                if t.producers or any(s.consumers for s in t.subscriptions.values()):
                    raise TopicBusy(f"topic {t.name} has connected producers or consumers")
        for t in targets:
            for consumer, _sub in [v for v in self.consumers.values() if v[1].topic is t]:
                self.outbox.append(ConsumerClosed(consumer.consumer_id, consumer.conn, "deleted"))
                del self.consumers[consumer.consumer_id]
            self._close_producers(t, "deleted")
            t.forget_topic_epoch()
            for subscription in t.subscriptions.values():
                subscription.close()
            t.ledger.delete()
            if t.compacted is not None:
                t.compacted.delete()
            metadata.delete_topic(t.name)
            for sub_name in list(metadata.get_cursors(t.name)):
                metadata.delete_cursor(t.name, sub_name)
            self.topics.pop(t.name, None)
            self.dirty_topics.discard(t)
        if partitions:
            metadata.delete_topic(key)
        self.emit(EventType.TOPIC_DELETED, key)

    def terminate_topic(self, topic: str) -> Position:
        """Terminate a non-partitioned persistent topic (or one partition); return its last
        position (Pulsar's admin ``terminate``, ``PersistentTopic.terminate``).

        Appended messages are committed first. Producers are disconnected (the client
        reconnects and is refused with ``TopicTerminatedError``), new sends and producers
        are refused, and consumers that consumed everything hear REACHED_END_OF_TOPIC.
        Terminating a terminated topic returns the same position.
        """
        name = TopicName.get(topic)
        key = str(name)
        if not name.persistent:
            raise NotAllowed(f"termination of a non-persistent topic is not allowed: {key}")
        partitions = self.storage.metadata.get_topic(key)
        if partitions is None:
            raise TopicNotFound(f"topic {key} not found")
        if partitions > 0:
            raise NotAllowed("Termination of a partitioned topic is not allowed")
        t = self.get_topic(key, create=False)
        if not t.terminated:
            self.commit()
        position = t.terminate()
        self.close_producers_of(t.name, "terminated")
        return position

    def _persistent_partition(self, topic: str, what: str) -> PersistentTopic:
        name = TopicName.get(topic)
        key = str(name)
        if not name.persistent:
            raise NotAllowed(f"{what} of a non-persistent topic is not allowed: {key}")
        partitions = self.storage.metadata.get_topic(key)
        if partitions is None:
            raise TopicNotFound(f"topic {key} not found")
        if partitions > 0:
            raise NotAllowed(f"{what} of a partitioned topic is not allowed: compact each "
                             f"partition")
        t = self.get_topic(key, create=False)
        assert isinstance(t, PersistentTopic)
        return t

    def compact_topic(self, topic: str) -> dict[str, str]:
        """Compact a persistent topic (or one partition) now, committing what was appended
        first (admin ``topics compact``); return the compaction's status."""
        t = self._persistent_partition(topic, "compaction")
        self.commit()
        t.compact()
        assert t.compacted is not None
        return t.compacted.status_json()

    def compaction_status(self, topic: str) -> dict[str, str]:
        """Pulsar's ``LongRunningProcessStatus`` of the topic's last compaction."""
        t = self._persistent_partition(topic, "compaction")
        assert t.compacted is not None
        return t.compacted.status_json()

    def close_producers_of(self, topic: str, reason: str) -> None:
        """The broker closes every producer of ``topic``, the waiting ones too (terminate,
        unload; a producer taking the topic with ExclusiveWithFencing fences the others, as
        Pulsar's AbstractTopic does)."""
        self._close_producers(self.get_topic(topic, create=False), reason)

    def _close_producers(self, t: AbstractTopic, reason: str) -> None:
        for producer in [*t.access.fence(), *t.producers.values()]:
            self._remove_producer(producer)
            self.outbox.append(ProducerClosed(producer.producer_id, producer.conn, reason))

    def terminate_partitioned_topic(self, topic: str) -> dict[int, Position]:
        """Terminate every partition of a partitioned topic: partition index -> position."""
        name = TopicName.get(topic)
        partitions = self.storage_for(name).metadata.get_topic(str(name))
        if partitions is None:
            raise TopicNotFound(f"topic {name} not found")
        if partitions == 0:
            raise NotAllowed(
                "Termination of a non-partitioned topic is not allowed using "
                "partitioned-terminate, please use terminate commands."
            )
        return {i: self.terminate_topic(str(name.partition(i))) for i in range(partitions)}

    # -- producers ------------------------------------------------------------------------

    def create_producer(
        self, topic: str, producer_name: str | None = None, conn: Any = None, *,
        address: str = "", client_version: str = "", encrypted: bool = False,
        access_mode: ProducerAccessMode | str = ProducerAccessMode.Shared,
        topic_epoch: int | None = None,
    ) -> Producer:
        """Attach a producer; ``address`` and ``client_version`` are for its stats.

        ``encrypted``: the producer says it encrypts its messages (``CommandProducer``'s
        flag); a namespace with ``encryption_required`` refuses any other, as Pulsar's
        ``ServerCnx.handleProducer`` does.

        ``access_mode`` is admitted by the topic's rules (:mod:`.producer_access`);
        ``topic_epoch`` is the epoch a reconnecting client gives back. A
        ``WaitForExclusive`` producer that must wait comes back with ``ready`` False: it
        is not on the topic and cannot send until a :class:`ProducerReady` action says it
        got the topic (or a :class:`ProducerClosed` one that it was fenced out). Once
        admitted, ``producer.topic_epoch`` is the topic's epoch."""
        mode = ProducerAccessMode.parse(access_mode)
        if topic_epoch is not None and (
            type(topic_epoch) is not int or not 0 <= topic_epoch <= _I64_MAX
        ):
            raise InvalidArgument(f"topic_epoch must be an int >= 0, not {topic_epoch!r}")
        t = self.get_topic(topic)
        if t.terminated:
            raise TopicTerminated(f"topic {t.name} was already terminated")
        if not encrypted and self.policies_for(t).encryption_required:
            raise MetadataError(f"Encryption is required in {t.name}")
        if producer_name is not None and not isinstance(producer_name, str):
            raise InvalidArgument(f"producer_name must be a string, not {producer_name!r}")
        if producer_name:
            for p in [*t.producers.values(), *t.access.waiting]:
                if p.producer_name == producer_name:
                    # Pulsar: NamedProducerAlreadyConnectedException -> ProducerBusy
                    raise ProducerBusy(
                        f"producer with name {producer_name!r} is already connected to {t.name}"
                    )
        name = producer_name or f"standalone-0-{next(self._producer_names)}"
        producer = Producer(
            next(self._ids), name, t, conn, address=address, client_version=client_version,
            connected_since_ms=self.now_ms(), msg_in_rate=Rate(self.now_ms()),
            access_mode=mode, topic_epoch=topic_epoch,
        )
        if mode is ProducerAccessMode.ExclusiveWithFencing and (t.access.held or t.producers):
            self._close_producers(t, "fenced")
        producer.ready = t.access.admit(producer, bool(t.producers))
        self.producers[producer.producer_id] = producer
        if producer.ready:
            self._attach_producer(producer)
        return producer

    def _attach_producer(self, producer: Producer) -> None:
        t = producer.topic
        if self.policies_for(t).deduplication_enabled:
            producer.last_sequence_id = t.deduplication().highest_sequence_id.get(
                producer.producer_name, -1
            )
        t.producers[producer.producer_id] = producer
        self.emit(EventType.PRODUCER_ADDED, t.name, producer=producer.producer_name)

    def producer(self, producer_id: int) -> Producer:
        """A producer by its core id: its name, last sequence id, topic epoch, readiness."""
        producer = self.producers.get(producer_id)
        if producer is None:
            raise ProducerNotFound(f"producer {producer_id} not found")
        return producer

    def close_producer(self, producer_id: int) -> None:
        """The client closes a producer (a waiting one gives up its place in line)."""
        producer = self.producers.get(producer_id)
        if producer is None:
            raise ProducerNotFound(f"producer {producer_id} not found")
        self._remove_producer(producer)

    def _remove_producer(self, producer: Producer) -> None:
        """Take ``producer`` off its topic; a waiting producer may get the topic."""
        self.producers.pop(producer.producer_id, None)
        t = producer.topic
        if producer.ready:
            t.producers.pop(producer.producer_id, None)
            self.emit(EventType.PRODUCER_REMOVED, t.name, producer=producer.producer_name)
        promoted = t.access.removed(producer, bool(t.producers))
        if promoted is not None:
            promoted.ready = True
            self._attach_producer(promoted)
            self.outbox.append(
                ProducerReady(promoted.producer_id, promoted.conn, promoted.topic_epoch)
            )

    def send(
        self, producer_id: int, metadata: MessageMetadata, payload: bytes, *,
        encrypted: bool | None = False, in_range: bool = False,
    ) -> Position | None:
        """Append a message (or batch); its receipt comes out of the next :meth:`commit`.

        ``None``: the send is held by the backlog quota (``producer_request_hold``).
        ``encrypted``: the message carries encryption keys; in a namespace with
        ``encryption_required`` any other is refused (Pulsar's ``Producer``:
        "Messages must be encrypted") and nothing is stored. ``None``: its Pulsar metadata
        says (read only where the namespace requires encryption). ``in_range``: the face
        knows every metadata value is within its stored range (Pulsar metadata of the usual
        kind, :func:`~.format.metadata.read_pulsar_metadata`); else the core checks.
        """
        producer = self.producers.get(producer_id)
        if producer is None or not producer.ready:
            raise ProducerNotFound(f"producer {producer_id} not found (or not ready)")
        namespace = producer.topic.namespace
        # namespace_policies' cache read inline (this runs per SEND), its method on a miss
        policies = self._policies.get(namespace) or self.namespace_policies(namespace)
        if policies.encryption_required and not (
            encrypted if encrypted is not None
            else is_encrypted(metadata.pulsar_metadata or b"")
        ):
            raise MetadataError("Messages must be encrypted")
        if type(payload) is not bytes:
            if not isinstance(payload, bytearray | memoryview):
                raise InvalidArgument(f"payload must be bytes, not {type(payload).__name__}")
            payload = bytes(payload)  # stored as bytes
        if not metadata.producer_name:
            metadata.producer_name = producer.producer_name
        if not metadata.publish_time:
            metadata.publish_time = self.clock.now_ms()
        if not in_range:
            try:  # what is stored must decode again when a consumer reaches it
                check_ranges(metadata)
            except ValueError as exc:
                raise InvalidArgument(f"SEND: {exc}; nothing was stored") from None
        try:
            return producer.topic.publish(producer, metadata, payload, policies)
        except StorageError as exc:
            log.error("%s", exc)
            raise

    def commit(self) -> None:
        """Group commit: make appended entries durable, release receipts, dispatch."""
        topics, self.dirty_topics = self.dirty_topics, set()
        for topic in topics:
            try:
                done = topic.sync()
            except StorageError as exc:
                topic.fail_pending_sends(exc)
                continue
            partition = topic.partition_index
            outbox = self.outbox
            last = receipts = None
            for p, sequence_id, position, _hop in done:  # one action per run of a producer
                if p is not last:
                    last, receipts = p, []
                    outbox.append(_new_tuple(SendReceipts, (
                        p.producer_id, p.conn, partition, receipts
                    )))
                receipts.append((sequence_id, *position))
            if done and self._listeners:
                for pending in done:
                    if pending.position[1] < 0:  # a duplicate: nothing was published
                        continue
                    self.emit(
                        EventType.PUBLISHED,
                        topic.name,
                        producer=pending.producer.producer_name,
                        sequence_id=pending.sequence_id,
                        position=list(pending.position),
                    )
                    if pending.hop is not None:
                        dead = topic.name.endswith("-DLQ") or (
                            pending.producer.producer_name.endswith("-DLQ")
                        )
                        kind = (
                            EventType.RETRIED
                            if "reconsume_times" in pending.hop and not dead
                            else EventType.DEAD_LETTERED
                        )
                        self.emit(kind, topic.name, position=list(pending.position),
                                  **pending.hop)
            topic.on_entries_confirmed()

    # -- consumers ------------------------------------------------------------------------

    def subscribe(
        self,
        topic: str,
        subscription: str,
        consumer_name: str | None = None,
        sub_type: SubType = SubType.Exclusive,
        *,
        initial_position_earliest: bool = False,
        durable: bool = True,
        priority_level: int = 0,
        key_shared_meta: KeySharedMeta | None = None,
        key_hash_ranges: list[tuple[int, int]] | None = None,
        start_message_id: MessageId | None = None,
        start_message_id_inclusive: bool = False,
        batch_index_ack_enabled: bool = False,
        is_reader: bool = False,
        read_compacted: bool = False,
        conn: Any = None,
        address: str = "",
        client_version: str = "",
    ) -> ServerConsumer:
        """Attach a consumer; on any error nothing is created or changed.

        ``address`` (the client's ``host:port``) and ``client_version`` (from its CONNECT)
        are shown in the consumer's stats."""
        if not isinstance(subscription, str) or not subscription:
            raise InvalidArgument("subscription name must be a non-empty string")
        if not isinstance(sub_type, SubType):
            raise InvalidArgument(f"unknown subscription type {sub_type!r}")
        if not isinstance(priority_level, int) or priority_level < 0:
            raise InvalidArgument(f"priority_level must be an int >= 0, not {priority_level!r}")
        if key_shared_meta is not None and sub_type is not SubType.Key_Shared:
            raise InvalidArgument("key_shared_policy is only valid on Key_Shared subscriptions")
        if key_hash_ranges and sub_type not in (SubType.Exclusive, SubType.Failover):
            raise InvalidArgument(
                "key hash ranges are for Exclusive/Failover consumers and readers; "
                "Key_Shared consumers declare sticky ranges in their key_shared_policy"
            )
        if read_compacted and sub_type not in (SubType.Exclusive, SubType.Failover):
            raise NotAllowed("readCompacted only allowed on failover or exclusive subscriptions")
        t = self.get_topic(topic)
        consumer_id = next(self._ids)
        consumer = ServerConsumer(
            consumer_id,
            consumer_name or f"consumer-{consumer_id}",
            conn=conn,
            priority_level=priority_level,
            batch_index_ack_enabled=batch_index_ack_enabled,
            key_shared_meta=key_shared_meta,
            key_hash_ranges=key_hash_ranges,
            is_reader=is_reader,
            read_compacted=read_compacted and t.compacted is not None,
            connected_since_ms=self.now_ms(),
            address=address,
            client_version=client_version,
        )
        start = None
        if start_message_id is not None:
            if start_message_id == MessageId.earliest:
                initial_position_earliest = True
            elif start_message_id == MessageId.latest:
                initial_position_earliest = False
            else:
                start = start_message_id.position
        sub, _created = t.get_or_create_subscription(
            subscription,
            durable=durable,
            earliest=initial_position_earliest,
            start_position=start,
            start_inclusive=start_message_id_inclusive,
        )
        t.attach(sub, consumer, sub_type)
        self.consumers[consumer_id] = (consumer, sub)
        return consumer

    def _consumer(self, consumer_id: int) -> tuple[ServerConsumer, Subscription]:
        entry = self.consumers.get(consumer_id)
        if entry is None:
            raise ConsumerNotFound(f"consumer {consumer_id} not found")
        return entry

    def flow(self, consumer_id: int, permits: int) -> None:
        """The consumer grants ``permits`` more messages."""
        if not isinstance(permits, int) or isinstance(permits, bool) or permits <= 0:
            raise InvalidArgument(f"flow permits must be an int > 0, not {permits!r}")
        consumer, sub = self._consumer(consumer_id)
        sub.flow(consumer, permits)

    def ack(
        self,
        consumer_id: int,
        positions: Iterable[Position | MessageId],
        *,
        cumulative: bool = False,
        ack_sets: dict[Position, tuple[int, int]] | None = None,
    ) -> None:
        """Acknowledge entries (see :meth:`Subscription.acknowledge`)."""
        consumer, sub = self._consumer(consumer_id)
        sub.acknowledge(
            consumer,
            [  # _position()'s common case inline: an ack carries many positions
                p if type(p) is tuple and len(p) == 2 and type(p[0]) is int and type(p[1]) is int
                else _position(p)
                for p in positions
            ],
            cumulative=cumulative, ack_sets=ack_sets,
        )

    def honours_ack_sets(self, consumer_id: int) -> bool:
        """Whether the consumer's acks apply batch-index ack sets (the broker and the
        consumer both enable batch-index acks); otherwise an ack set changes nothing and
        the entry is acknowledged whole, so a face need not read them."""
        consumer, sub = self._consumer(consumer_id)
        return sub.batch_index_ack_enabled(consumer)

    def redeliver_unacknowledged(
        self,
        consumer_id: int,
        positions: Iterable[Position | MessageId] | None = None,
        *,
        reason: str = "consumer_request",
        requested_at: list[int] | None = None,
    ) -> None:
        """The consumer asks for messages again (all of its unacked ones if no positions).

        ``reason`` ("consumer_request", "nack", "ack_timeout") and ``requested_at`` (when
        the client nacked each one or saw it time out) only travel to the event stream.
        """
        request = RedeliveryRequest(
            None if positions is None else tuple(_position(p) for p in positions),
            reason,
            None if requested_at is None else tuple(requested_at),
        )
        consumer, sub = self._consumer(consumer_id)
        sub.redeliver_unacknowledged(consumer, request)

    def close_consumer(self, consumer_id: int) -> None:
        consumer, sub = self._consumer(consumer_id)
        del self.consumers[consumer_id]
        sub.topic.detach(sub, consumer)

    def unsubscribe(self, consumer_id: int) -> None:
        """Delete the consumer's subscription (it must be the only consumer left)."""
        consumer, sub = self._consumer(consumer_id)
        others = [c for c in sub.consumers if c is not consumer]
        if others:
            raise NotAllowed(
                f"subscription {sub.name!r} has other connected consumers; cannot unsubscribe"
            )
        self.close_consumer(consumer_id)
        if sub.name in sub.topic.subscriptions:
            sub.topic.remove_subscription(sub.name)

    def close_connection(self, conn: Any) -> None:
        """A client went away: close its producers and consumers."""
        for consumer_id, (consumer, _sub) in list(self.consumers.items()):
            if consumer.conn == conn:
                self.close_consumer(consumer_id)
        for producer_id, producer in list(self.producers.items()):
            if producer.conn == conn:
                self.close_producer(producer_id)

    # -- admin on subscriptions -----------------------------------------------------------

    def subscription(self, topic: str, subscription: str) -> Subscription:
        """An existing subscription of an existing topic (admin lookups)."""
        t = self.get_topic(topic, create=False)
        sub = t.subscriptions.get(subscription)
        if sub is None:
            raise SubscriptionNotFound(f"subscription {subscription!r} not found on {t.name}")
        return sub

    def reset_cursor(self, topic: str, subscription: str, message_id: MessageId) -> None:
        sub = self.subscription(topic, subscription)
        sub.reset_cursor(_reset_position(sub, message_id))

    def seek(
        self, consumer_id: int, *, message_id: MessageId | None = None,
        publish_time: int | None = None,
    ) -> Position:
        """A consumer's SEEK to a message id or a publish time; the position read next.

        As Pulsar's ``ServerCnx.handleSeek`` → ``PersistentSubscription.resetCursor``: every
        consumer of the subscription is disconnected first (a :class:`ConsumerClosed`
        action, reason "seek": its client subscribes again, with an empty queue and fresh
        permits, so nothing dispatched before the seek is mistaken for what follows it),
        then the cursor moves. A non-durable subscription (a reader's) goes with its last
        consumer, as in Pulsar: its client subscribes again from the position."""
        _consumer, sub = self._consumer(consumer_id)
        if publish_time is not None:
            position = sub.position_for_publish_time(publish_time)
        elif message_id is not None:
            position = _reset_position(sub, message_id)
        else:
            raise InvalidArgument("seek needs a message id or a publish time")
        for consumer in list(sub.consumers):
            self.close_consumer(consumer.consumer_id)
            self.outbox.append(ConsumerClosed(consumer.consumer_id, consumer.conn, "seek"))
        if sub.topic.subscriptions.get(sub.name) is sub:
            sub.reset_cursor(position)
        return position

    def create_subscription(
        self, topic: str, subscription: str, message_id: MessageId = MessageId.latest
    ) -> None:
        """Create a durable subscription with no consumer (admin)."""
        t = self.get_topic(topic)
        if subscription in t.subscriptions:
            raise SubscriptionAlreadyExists(
                f"subscription {subscription!r} already exists on {t.name}"
            )
        if message_id in (MessageId.earliest, MessageId.latest):
            sub, _ = t.get_or_create_subscription(
                subscription, durable=True, earliest=message_id == MessageId.earliest
            )
        else:
            sub, _ = t.get_or_create_subscription(
                subscription, durable=True, earliest=False,
                start_position=message_id.position, start_inclusive=True,
            )
        t.subscriptions[subscription] = sub
        sub.cursor.persist()
        self.emit(EventType.SUBSCRIPTION_CREATED, t.name, subscription, None, durable=True)

    def delete_subscription(self, topic: str, subscription: str, force: bool = False) -> None:
        sub = self.subscription(topic, subscription)
        if sub.consumers and not force:
            raise TopicBusy(f"subscription {subscription!r} has connected consumers")
        for consumer in list(sub.consumers):
            self.outbox.append(ConsumerClosed(consumer.consumer_id, consumer.conn, "unsubscribed"))
            self.consumers.pop(consumer.consumer_id, None)
            sub.remove_consumer(consumer)
        sub.topic.remove_subscription(subscription)

    def skip_messages(self, topic: str, subscription: str, count: int) -> None:
        """Acknowledge the next ``count`` unacknowledged entries of the subscription."""
        if type(count) is not int or not 0 <= count <= _I64_MAX:
            raise InvalidArgument(f"the number of messages to skip must be >= 0, not {count!r}")
        self.subscription(topic, subscription).skip_messages(count)

    def skip_all_messages(self, topic: str, subscription: str) -> None:
        """Acknowledge the subscription's whole backlog (Pulsar's skip-all / clear-backlog)."""
        self.subscription(topic, subscription).skip_all_messages()

    def consumer_last_message_id(self, consumer_id: int) -> LastMessageId:
        """Pulsar's GetLastMessageId for a consumer, whichever face asks: the last message
        it can reach with its batch index (``AbstractTopic.last_message_id_for``), and its
        subscription's mark-delete position."""
        consumer, sub = self._consumer(consumer_id)
        ledger_id, entry_id, batch_index = sub.topic.last_message_id_for(consumer)
        return LastMessageId(ledger_id, entry_id, sub.topic.partition_index, batch_index,
                             sub.cursor.mark_delete_position)

    def consumer_stats(self, consumer_id: int) -> dict[str, Any]:
        """What Pulsar's CONSUMER_STATS answers about a consumer (its
        ``CommandConsumerStatsResponse`` field names; the face adds the client's address)."""
        consumer, sub = self._consumer(consumer_id)
        return {
            "consumerName": consumer.consumer_name,
            "availablePermits": max(consumer.permits, 0),
            "unackedMessages": max(consumer.unacked_messages, 0),
            "blockedConsumerOnUnackedMsgs": consumer.blocked_on_unacked,
            "type": str(sub.sub_type),
            "connectedSince": date_string(consumer.connected_since_ms),
            "msgRateOut": consumer.msg_out_rate.rate,
            "msgThroughputOut": consumer.msg_out_rate.value_rate,
            "msgRateRedeliver": consumer.msg_redeliver_rate.rate,
            "msgRateExpired": sub.msg_expired_rate.rate,
            "msgBacklog": sub.cursor.number_of_entries_in_backlog(),
        }

    def last_message_id(self, topic: str) -> Position:
        """The position of the topic's last stored entry (``(ledger, -1)`` when empty)."""
        return self.get_topic(topic, create=False).last_entry_position()

    def last_message_id_with_batch(self, topic: str) -> tuple[int, int, int]:
        """The last entry's position and its largest batch index (see
        :meth:`AbstractTopic.last_message_id`)."""
        return self.get_topic(topic, create=False).last_message_id()

    def peek_messages(self, topic: str, subscription: str, count: int) -> list[tuple]:
        """The next ``count`` unacknowledged entries, without moving anything."""
        return self.subscription(topic, subscription).peek_messages(count)

    def expire_messages(self, topic: str, subscription: str, expire_time_seconds: int) -> None:
        """Acknowledge every entry published more than ``expire_time_seconds`` ago."""
        self.subscription(topic, subscription).expire_messages(expire_time_seconds, self.now_ms())

    # -- policies -------------------------------------------------------------------------

    def policies_for(self, topic: AbstractTopic) -> Policies:
        """Policies in force for ``topic`` (namespace policies over broker defaults)."""
        return self.namespace_policies(topic.namespace)

    def namespace_policies(self, namespace: str) -> Policies:
        """Policies in force in ``namespace`` (its policies over broker defaults)."""
        policies = self._policies.get(namespace)
        if policies is None:
            stored = self.storage.metadata.get_policies(namespace)
            policies = Policies.resolve(self.settings, stored)
            self._policies[namespace] = policies
        return policies

    def set_namespace_policy(self, namespace: str, key: str, value: Any) -> None:
        """Set one namespace policy (admin); it applies from the next operation on."""
        parts = namespace.split("/") if isinstance(namespace, str) else []
        if len(parts) != 2 or "" in parts:
            raise InvalidArgument(f"namespace must be 'tenant/namespace', not {namespace!r}")
        validate_policy(key, value)
        store = self.storage.metadata
        stored = store.get_policies(namespace) or {}
        stored[key] = value
        store.put_policies(namespace, stored)
        self._policies.pop(namespace, None)

    def remove_namespace_policy(self, namespace: str, key: str) -> None:
        """Drop one namespace policy: the broker default applies again."""
        if key not in POLICY_KEYS:
            raise InvalidArgument(f"unknown namespace policy {key!r}")
        store = self.storage.metadata
        stored = store.get_policies(namespace) or {}
        if stored.pop(key, None) is not None:
            store.put_policies(namespace, stored)
        self._policies.pop(namespace, None)

    def forget_namespace_policies(self, namespace: str) -> None:
        """A deleted namespace takes its policies with it."""
        if self.storage.metadata.get_policies(namespace):
            self.storage.metadata.put_policies(namespace, {})
        self._policies.pop(namespace, None)

    def topic_stats(self, topic: str) -> dict[str, Any]:
        return self.get_topic(topic, create=False).stats()

    def internal_stats(self, topic: str) -> dict[str, Any]:
        return self.get_topic(topic, create=False).internal_stats()

    def close(self) -> None:
        """Persist cursors and close every ledger (a clean shutdown)."""
        self.commit()
        for topic in self.topics.values():
            topic.close()
        self.topics.clear()
        self.storage.close()


def _reset_position(sub: Subscription, message_id: MessageId) -> Position:
    """Where a reset to ``message_id`` reads next (earliest and latest resolved)."""
    ledger = sub.topic.ledger
    if message_id == MessageId.earliest:
        return ledger.first_position()
    if message_id == MessageId.latest:
        return ledger.next_position(ledger.last_confirmed)
    return message_id.position


def _position(value: Position | MessageId) -> Position:
    if (
        type(value) is tuple and len(value) == 2
        and type(value[0]) is int and type(value[1]) is int
    ):
        return value  # the common case, checked without a generator
    if isinstance(value, MessageId):
        return value.position
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        return value
    raise InvalidArgument(f"not a message id or (ledger, entry) position: {value!r}")


__all__ = ["BrokerService", "PulsarLabError"]
