"""``Consumer``: receive, listen, acknowledge — over one or many topics and partitions.

A consumer subscribes one :class:`~.topic_consumer.TopicConsumer` per topic (per partition
of a partitioned topic, as the real client does) and gathers their messages in one
receiver queue. ``receive`` and ``batch_receive`` take from it; with a
``message_listener`` the client's listener thread takes from it and calls
``listener(consumer, message)`` (never on the I/O thread). Acks go to the topic consumer a
message (or its id) came from. A list of topics or a ``re.Pattern`` gives a multi-topic
consumer; a pattern is re-listed every ``pattern_auto_discovery_period`` seconds and new
matching topics are subscribed (topics that disappear are dropped). There is no ordering
across topics.

Redelivery (negative acks, ack timeout, dead letters) is per topic consumer; see
:mod:`.topic_consumer`. Dead-letter publishing runs on this consumer's background worker
(:class:`~.dead_letter.BackgroundWorker`), which :meth:`Consumer.close` drains before the
topic consumers close. With ``retry_enable=True`` the retry-letter topic is one of the
subscribed topics and :meth:`Consumer.reconsume_later` publishes to it.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from ..message_id import MessageId
from ..topic_name import TopicName
from .checks import check_type, check_type_or_none
from .dead_letter import BackgroundWorker
from .entries import EntryBatch
from .enums import ConsumerType, RegexSubscriptionMode
from .exceptions import (
    AlreadyClosed,
    CumulativeAcknowledgementNotAllowedError,
    InvalidConfiguration,
    OperationNotSupported,
    PulsarException,
    Timeout,
)
from .message import Message, TopicMessageId
from .policies import ConsumerBatchReceivePolicy
from .topic_consumer import ConsumerConfig, TopicConsumer

__all__ = ["Consumer"]

log = logging.getLogger("pulsarlab.client")


class Consumer:
    """Receives messages from a subscription on one or more topics."""

    def __init__(
        self,
        client: Any,
        config: ConsumerConfig,
        topic_label: str,
        message_listener: Callable[[Any, Message], None] | None = None,
        batch_receive_policy: ConsumerBatchReceivePolicy | None = None,
        listener_target: Any = None,
    ) -> None:
        self._client = client
        self._config = config
        self._topic_label = topic_label
        self._listener = message_listener
        self._listener_target = listener_target if listener_target is not None else self
        self._batch_policy = batch_receive_policy or ConsumerBatchReceivePolicy()
        self._consumers: list[TopicConsumer] = []
        self._by_topic: dict[str, TopicConsumer] = {}
        self._topics: dict[str, list[TopicConsumer]] = {}  # subscribed topic -> its consumers
        self._queue: deque[Message] = deque()
        # A plain lock under the condition: the hot paths take it directly (cheaper than
        # the condition's RLock and its Python-level __enter__/__exit__).
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._paused = False
        self._closed = False
        self._watcher: threading.Thread | None = None
        self._watch_stop = threading.Event()
        self._worker: BackgroundWorker | None = None
        self._worker_lock = threading.Lock()
        self.active_consumer_listener: Callable[[Consumer, str, bool], None] | None = None

    # -- setup (used by Client) -----------------------------------------------------------

    def _add_topic(self, topic: str) -> None:
        """Subscribe ``topic`` (all partitions of a partitioned one)."""
        name = str(TopicName.get(topic))
        if name in self._topics:
            return
        partitions = self._client._partitions_of(name)
        names = [name] if partitions == 0 else [
            str(TopicName.get(name).partition(i)) for i in range(partitions)
        ]
        opened: list[TopicConsumer] = []
        try:
            for n in names:
                tc = TopicConsumer(self, n, self._config)
                tc.open()
                opened.append(tc)
        except BaseException:
            for tc in opened:
                with contextlib.suppress(PulsarException):
                    tc.close()
            raise
        self._topics[name] = opened
        for tc in opened:
            self._consumers.append(tc)
            self._by_topic[tc.topic] = tc

    def _remove_topic(self, name: str) -> None:
        self._drain_worker()
        for tc in self._topics.pop(name, []):
            self._consumers.remove(tc)
            self._by_topic.pop(tc.topic, None)
            try:
                tc.close()
            except PulsarException as exc:
                log.warning("closing the consumer on %s failed: %s", tc.topic, exc)

    def _watch_pattern(self, pattern: re.Pattern, namespace: str, period_s: float,
                       mode: RegexSubscriptionMode) -> None:
        """Start the discovery thread of a pattern subscription."""

        def loop() -> None:
            while not self._watch_stop.wait(period_s):
                try:
                    self._discover(pattern, namespace, mode)
                except PulsarException as exc:
                    log.warning("topic discovery for %s failed: %s", pattern.pattern, exc)
                except Exception:
                    log.exception("topic discovery for %s failed", pattern.pattern)

        self._watcher = threading.Thread(target=loop, name="pulsarlab-client-discovery",
                                         daemon=True)
        self._watcher.start()

    def _discover(self, pattern: re.Pattern, namespace: str, mode: RegexSubscriptionMode) -> None:
        found = self._client._matching_topics(pattern, namespace, mode)
        if self._closed:
            return
        for name in found:
            if name not in self._topics and not self._closed:
                log.info("pattern %s: subscribing new topic %s", pattern.pattern, name)
                self._add_topic(name)
        for name in list(self._topics):
            if name not in found:
                log.info("pattern %s: topic %s is gone", pattern.pattern, name)
                self._remove_topic(name)

    # -- I/O thread callbacks -------------------------------------------------------------

    def _enqueue(self, messages: list[Message]) -> None:
        with self._lock:
            self._queue.extend(messages)
            self._cond.notify_all()
        if self._listener is not None:
            executor = self._client._executor
            for _ in messages:
                executor.submit(self._listener_step)

    def _drop_queued(self, owner: TopicConsumer) -> int:
        """Remove ``owner``'s messages from the receiver queue; returns how many."""
        with self._cond:
            queue = self._queue  # changed in place: receivers take from it without the lock
            keep: list[Message] = []
            dropped = 0
            while queue:
                try:
                    m = queue.popleft()
                except IndexError:
                    break
                if m._owner is not owner:
                    keep.append(m)
                else:  # a whole entry (deliver_entries readers) holds several messages
                    dropped += m.count if type(m) is EntryBatch else 1
            queue.extendleft(reversed(keep))
        return dropped

    def _background(self, job: Callable[[], None]) -> bool:
        """Run ``job`` on this consumer's worker thread; False once the consumer closes."""
        with self._worker_lock:
            if self._closed:
                return False
            if self._worker is None:
                self._worker = BackgroundWorker()
            return self._worker.submit(job)

    def _stop_worker(self) -> None:
        with self._worker_lock:
            worker = self._worker
        if worker is not None and not worker.close(self._client._conn.operation_timeout):
            log.warning("dead-letter publishing of %s did not finish in time", self)

    def _drain_worker(self) -> None:
        with self._worker_lock:
            worker = self._worker
        if worker is not None:
            worker.drain(self._client._conn.operation_timeout)

    def _on_active_change(self, owner: TopicConsumer, is_active: bool) -> None:
        listener = self.active_consumer_listener
        if listener is not None:
            self._client._executor.submit(listener, self, owner.topic, is_active)

    # -- receiving ------------------------------------------------------------------------

    def _listener_step(self) -> None:
        if self._paused or self._closed:
            return
        with self._cond:
            if not self._queue:
                return
            message = self._queue.popleft()
        message._owner.on_dequeued(message)
        assert self._listener is not None
        self._listener(self._listener_target, message)

    def _take(self, timeout_millis: int | None) -> Message:
        # deque.popleft is atomic: a message already queued is taken without the lock;
        # only an empty queue takes the lock to wait (and looks again under it).
        try:
            message = self._queue.popleft()
        except IndexError:
            message = self._wait_and_take(timeout_millis)
        message._owner.on_dequeued(message)
        return message

    def _wait_and_take(self, timeout_millis: int | None) -> Message:
        """Wait for a message under the lock (which :meth:`_enqueue` notifies under)."""
        deadline = None if timeout_millis is None else time.monotonic() + timeout_millis / 1000
        queue = self._queue
        with self._lock:
            while not queue:
                if self._closed:
                    raise AlreadyClosed("the consumer is closed")
                if deadline is None:
                    self._cond.wait(1.0)
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise Timeout("no message received in time")
                self._cond.wait(remaining)
            return queue.popleft()

    def topic(self) -> str:
        return self._topic_label

    def subscription_name(self) -> str:
        return self._config.subscription

    def consumer_name(self) -> str:
        return self._consumers[0].consumer_name if self._consumers else (
            self._config.consumer_name or ""
        )

    def receive(self, timeout_millis: int | None = None) -> Message:
        """The next message; waits at most ``timeout_millis`` (raises ``Timeout``)."""
        if timeout_millis is not None and type(timeout_millis) is not int:
            check_type(int, timeout_millis, "timeout_millis")
        if self._listener is not None:
            raise InvalidConfiguration("cannot receive() when a message listener is set")
        return self._take(timeout_millis)

    def batch_receive(self) -> list[Message]:
        """Messages up to the batch-receive policy's count/bytes, waiting at most its timeout."""
        if self._listener is not None:
            raise InvalidConfiguration("cannot batch_receive() when a message listener is set")
        policy = self._batch_policy
        deadline = time.monotonic() + max(0, policy.timeout_ms) / 1000
        out: list[Message] = []
        size = 0
        while True:
            if policy.max_num_message > 0 and len(out) >= policy.max_num_message:
                break
            if policy.max_num_bytes > 0 and size >= policy.max_num_bytes:
                break
            remaining = deadline - time.monotonic()
            if policy.timeout_ms > 0 and remaining <= 0:
                break
            try:
                message = self._take(max(0, int(remaining * 1000)) if policy.timeout_ms > 0
                                     else None)
            except Timeout:
                break
            out.append(message)
            size += len(message.data())
        return out

    # -- acknowledging --------------------------------------------------------------------

    def _owner_of(self, message: Message | MessageId) -> tuple[TopicConsumer, MessageId]:
        if isinstance(message, Message):
            owner = message._owner
            if isinstance(owner, TopicConsumer):
                return owner, message.message_id()
            message = message.message_id()
        if not isinstance(message, MessageId):
            raise ValueError(
                f"Argument message is expected to be of type 'Message' or 'MessageId' and not "
                f"'{type(message).__name__}'"
            )
        if isinstance(message, TopicMessageId) and message.topic_name() in self._by_topic:
            return self._by_topic[message.topic_name()], message
        if len(self._consumers) == 1:
            return self._consumers[0], message
        matches = [c for c in self._consumers if c.partition == message.partition()]
        if len(matches) == 1:
            return matches[0], message
        raise ValueError(f"cannot tell which topic message id {message} belongs to")

    def acknowledge(self, message: Message | MessageId) -> None:
        """Acknowledge one message (grouped; sent within ``acknowledgements_group_time_ms``)."""
        if self._closed:
            raise AlreadyClosed("the consumer is closed")
        if type(message) is Message:  # the common call: the message knows its consumer
            owner = message._owner
            if type(owner) is TopicConsumer:
                owner.acknowledge(message)
                return
        owner, msg_id = self._owner_of(message)
        owner.acknowledge(msg_id)

    def acknowledge_cumulative(self, message: Message | MessageId) -> None:
        """Acknowledge every message up to this one (Exclusive and Failover only)."""
        self._check_open()
        if self._config.consumer_type in (ConsumerType.Shared, ConsumerType.KeyShared):
            raise CumulativeAcknowledgementNotAllowedError(
                f"cumulative ack is not allowed on a {self._config.consumer_type.name} "
                "subscription"
            )
        owner, msg_id = self._owner_of(message)
        owner.acknowledge(msg_id, cumulative=True)

    def negative_acknowledge(self, message: Message | MessageId) -> None:
        """Ask for redelivery after ``negative_ack_redelivery_delay_ms`` (non-blocking).

        With ``negative_ack_redelivery_backoff`` the delay is ``backoff.next(count)``,
        where count is the message's redelivery count (0 when only an id is given, as in
        Java).
        """
        self._check_open()
        owner, msg_id = self._owner_of(message)
        count = message.redelivery_count() if isinstance(message, Message) else 0
        owner.negative_acknowledge(msg_id, count)

    def reconsume_later(self, message: Message, delay: int | datetime.timedelta,
                        properties: dict[str, str] | None = None) -> None:
        """Extension (Java's ``reconsumeLater``): retry ``message`` after ``delay``.

        Needs ``subscribe(..., retry_enable=True)``. The message is published to the
        retry-letter topic with ``REAL_TOPIC``, ``ORIGIN_MESSAGE_ID``, ``RECONSUMETIMES``
        (1, 2, ...), ``DELAY_TIME`` and ``properties``, delivered after ``delay`` (ms or a
        ``timedelta``; delayed delivery works on Shared and Key_Shared subscriptions); once
        ``RECONSUMETIMES`` would pass the policy's ``max_redeliver_count`` it goes to the
        dead-letter topic instead. The original is then acknowledged. Blocks until the
        copy is published.
        """
        self._check_open()
        if not self._config.retry_enable:
            raise InvalidConfiguration(
                "reconsume_later() needs a consumer subscribed with retry_enable=True"
            )
        if not isinstance(message, Message) or message._owner not in self._consumers:
            raise ValueError(
                "Argument message is expected to be a Message received by this consumer"
            )
        if isinstance(delay, datetime.timedelta):
            delay_ms = int(delay.total_seconds() * 1000)
        elif isinstance(delay, int) and not isinstance(delay, bool):
            delay_ms = delay
        else:
            raise ValueError(
                "Argument delay is expected to be of type 'int' (ms) or 'timedelta' and not "
                f"'{type(delay).__name__}'"
            )
        check_type_or_none(dict, properties, "properties")
        for k, v in (properties or {}).items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ValueError(f"message properties must map str to str, not {k!r}: {v!r}")
        owner, _ = self._owner_of(message)
        owner.reconsume_later(message, delay_ms, properties)

    def redeliver_unacknowledged_messages(self) -> None:
        """Redeliver every unacknowledged message (the local queue is cleared)."""
        self._check_open()
        for tc in self._consumers:
            tc.redeliver_unacknowledged()

    # -- listener -------------------------------------------------------------------------

    def pause_message_listener(self) -> None:
        self._paused = True

    def resume_message_listener(self) -> None:
        self._paused = False
        if self._listener is not None:
            with self._cond:
                pending = len(self._queue)
            for _ in range(pending):
                self._client._executor.submit(self._listener_step)

    # -- positioning ----------------------------------------------------------------------

    def seek(self, messageid: MessageId | int) -> None:
        """Reset to a message id or a publish time in ms (every topic). What comes next is
        what followed the id (the id too with ``start_message_id_inclusive``)."""
        self._check_open()
        if isinstance(messageid, bool) or not isinstance(messageid, MessageId | int):
            raise ValueError(f"invalid seek_arg type {type(messageid)}")
        if isinstance(messageid, int) or messageid in (MessageId.earliest, MessageId.latest):
            targets = list(self._consumers)
        else:
            targets = [self._owner_of(messageid)[0]]
        for tc in targets:
            tc.seek(messageid)

    def get_last_message_id(self) -> MessageId:
        self._check_open()
        if len(self._consumers) != 1:
            raise OperationNotSupported(
                "get_last_message_id() needs a consumer of one non-partitioned topic"
            )
        return self._consumers[0].get_last_message_id()

    # -- lifecycle ------------------------------------------------------------------------

    def unsubscribe(self) -> None:
        """Delete the subscription (this must be its only consumer) and close."""
        self._check_open()
        self._stop_watcher()
        self._drain_worker()
        for tc in self._consumers:
            tc.unsubscribe()
        self._mark_closed()

    def close(self) -> None:
        """Close the consumer (idempotent); unacked messages go back to the subscription."""
        if self._closed:
            return
        self._stop_watcher()
        self._stop_worker()
        errors = []
        for tc in self._consumers:
            try:
                tc.close()
            except PulsarException as exc:
                errors.append(exc)
        self._mark_closed()
        if errors and not isinstance(errors[0], AlreadyClosed):
            log.warning("closing a consumer: %s", errors[0])

    def _mark_closed(self) -> None:
        self._closed = True
        with self._cond:
            self._cond.notify_all()
        self._client._forget(self)

    def _stop_watcher(self) -> None:
        self._watch_stop.set()
        watcher = self._watcher
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join(5)

    def has_reached_end_of_topic(self) -> bool:
        """Extension (Java's ``hasReachedEndOfTopic``): every topic of this consumer is
        terminated and its subscription has acknowledged all of it."""
        return all(tc.reached_end_of_topic for tc in self._consumers)

    def is_connected(self) -> bool:
        return (
            not self._closed
            and not self._client._conn.closed
            and all(tc.connected for tc in self._consumers)
        )

    def _check_open(self) -> None:
        if self._closed:
            raise AlreadyClosed("the consumer is closed")

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Consumer(topic={self._topic_label!r}, "
                f"subscription={self._config.subscription!r})")
