"""Dead-letter and retry-letter publishing for the client, and the worker that runs it.

The rules (when a message is dead-lettered, which properties it carries, the topic names)
live in the sans-I/O :mod:`pulsarlab.broker.client.redelivery`; this module does the I/O the way
Pulsar's client does:

* :class:`LetterProducers` — the dead-letter producer (named
  ``<topic>-<subscription>-<consumer>-DLQ``) and the retry-letter producer of one topic
  consumer, created on first use with batching off and chunking on. Before the first
  dead letter, the policy's ``initial_subscription_name`` is created on the dead-letter
  topic (earliest, through the broker's ``topics.create_subscription`` admin call; an
  existing one is kept) so nothing published there is lost.
* :func:`copy_message` — republish a received message: payload (or null value), key,
  ordering key and the given properties.
* :class:`BackgroundWorker` — one lazily started thread per consumer: producer creation
  and sends block, so they never run on the client's I/O thread, which only decides.
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from ..topic_name import TopicName
from .exceptions import AlreadyClosed, PulsarException
from .message import Message
from .redelivery import DeadLetterPolicy

__all__ = ["BackgroundWorker", "LetterProducers", "copy_message", "origin_topic"]

log = logging.getLogger("pulsarlab.client")


def origin_topic(message: Message) -> str:
    """``REAL_TOPIC`` of a message: its topic, without a ``-partition-N`` suffix (Java)."""
    topic = message.topic_name()
    if not topic:
        return ""
    try:
        return str(TopicName.get(topic).partitioned_topic_name)
    except Exception:
        return topic


def copy_message(
    producer: Any,
    message: Message,
    properties: dict[str, str],
    deliver_after_ms: int = 0,
) -> Any:
    """Publish ``message``'s payload, keys and ``properties`` with ``producer``; its id."""
    return producer.send(
        None if message.has_null_value() else message.data(),
        properties=properties,
        partition_key=message.partition_key() or None,
        ordering_key=message.ordering_key() or None,
        deliver_after=(
            datetime.timedelta(milliseconds=deliver_after_ms) if deliver_after_ms > 0 else None
        ),
    )


class LetterProducers:
    """The dead-letter and retry-letter producers of one topic consumer (lazy, thread-safe)."""

    def __init__(
        self,
        client: Any,
        policy: DeadLetterPolicy,
        topic: str,
        subscription: str,
        consumer_name: Callable[[], str],
    ) -> None:
        self._client = client
        self.policy = policy
        self._topic = topic
        self._subscription = subscription
        self._consumer_name = consumer_name
        self._lock = threading.Lock()
        self._dead: Any = None
        self._retry: Any = None
        self._closed = False

    @property
    def dead_letter_producer_name(self) -> str:
        return self.policy.dlq_producer_name(self._topic, self._subscription,
                                             self._consumer_name())

    def dead_letter(self) -> Any:
        """The dead-letter producer; the initial subscription is created first."""
        with self._lock:
            self._check_open()
            if self._dead is None:
                # The producer asks the broker for the initial subscription (Pulsar's
                # CommandProducer.initial_subscription_name), as Pulsar's client does.
                self._dead = self._create(self.policy.dead_letter_topic,
                                          self.dead_letter_producer_name,
                                          self.policy.initial_subscription_name)
            return self._dead

    def retry_letter(self) -> Any:
        """The retry-letter producer (broker-assigned name, as in Java)."""
        with self._lock:
            self._check_open()
            if self._retry is None:
                self._retry = self._create(self.policy.retry_letter_topic, None)
            return self._retry

    def _check_open(self) -> None:
        if self._closed:
            raise AlreadyClosed(f"the consumer on {self._topic} is closed")

    def _create(self, topic: str, name: str | None, initial_subscription: str | None = None
                ) -> Any:
        extra = {"_initial_subscription_name": initial_subscription} if initial_subscription else {}
        producer = self._client.create_producer(
            topic,
            producer_name=name,
            batching_enabled=False,
            chunking_enabled=True,
            block_if_queue_full=False,
            **extra,
        )
        # Owned by the consumer (closed with it), not by Client.close()'s producer sweep.
        self._client._forget(producer)
        return producer

    def close(self) -> None:
        with self._lock:
            self._closed = True
            producers = [p for p in (self._dead, self._retry) if p is not None]
            self._dead = self._retry = None
        for producer in producers:
            try:
                producer.close()
            except PulsarException as exc:
                log.warning("closing a dead/retry-letter producer failed: %s", exc)


class BackgroundWorker:
    """One daemon thread running submitted jobs in order; started on the first job."""

    def __init__(self, name: str = "pulsarlab-client-letters") -> None:
        self._name = name
        self._jobs: deque[Callable[[], None]] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._busy = 0
        self._closed = False

    def submit(self, job: Callable[[], None]) -> bool:
        """Queue ``job``; False (not queued) once the worker is closed."""
        with self._cond:
            if self._closed:
                return False
            self._jobs.append(job)
            self._busy += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify_all()
        return True

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every queued job has run; False on timeout."""
        if threading.current_thread() is self._thread:
            return self._busy <= 1
        with self._cond:
            return self._cond.wait_for(lambda: self._busy == 0, timeout)

    def close(self, timeout: float | None = None) -> bool:
        """Refuse new jobs, run the queued ones (waiting up to ``timeout``), stop."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        return self.drain(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._jobs or self._closed)
                if not self._jobs:
                    return
                job = self._jobs.popleft()
            try:
                job()
            except Exception:
                log.exception("a dead/retry-letter job failed")
            finally:
                with self._cond:
                    self._busy -= 1
                    self._cond.notify_all()
