"""``Reader``: read a topic from a chosen message id on a non-durable exclusive subscription.

A reader is a :class:`~.consumer.Consumer` on a subscription named ``reader-<random>``
(``<prefix>-reader-<random>`` with ``subscription_role_prefix``) that the broker does not
persist; it starts at ``MessageId.earliest``, ``MessageId.latest`` or a given id
(``start_message_id_inclusive`` decides whether that id itself is read). Messages it reads
are acknowledged cumulatively, so the subscription's backlog shows its progress.

Extension: a reader made with ``deliver_entries=True`` hands out whole entries
(:class:`~.entries.EntryBatch`, via :meth:`Reader.read_entry`) instead of messages, and does
not acknowledge them (its non-durable cursor is thrown away with it); bulk readers such as
the Spark source build their columns per entry that way.
"""

from __future__ import annotations

from typing import Any

from ..message_id import MessageId
from .checks import check_type
from .consumer import Consumer
from .entries import EntryBatch
from .exceptions import InvalidConfiguration
from .message import Message
from .topic_consumer import TopicConsumer

__all__ = ["Reader"]


class Reader:
    """Reads messages in order from one topic (every partition of a partitioned one)."""

    def __init__(self, consumer: Consumer, topic: str) -> None:
        self._consumer = consumer
        self._topic = topic
        self._latest_at_start: dict[int, MessageId] = {}

    def topic(self) -> str:
        return self._topic

    def read_next(self, timeout_millis: int | None = None) -> Message:
        """The next message; waits at most ``timeout_millis`` (raises ``Timeout``)."""
        if timeout_millis is not None:
            check_type(int, timeout_millis, "timeout_millis")
        if self._consumer._config.deliver_entries:
            raise InvalidConfiguration("this reader delivers entries: use read_entry()")
        message = self._consumer._take(timeout_millis)
        self._after_read(message)
        return message

    def read_entry(self, timeout_millis: int | None = None) -> EntryBatch:
        """Extension (``deliver_entries=True`` readers): the next entry's messages still to
        read, as one :class:`~.entries.EntryBatch`; waits at most ``timeout_millis``."""
        if timeout_millis is not None:
            check_type(int, timeout_millis, "timeout_millis")
        if not self._consumer._config.deliver_entries:
            raise InvalidConfiguration("read_entry() needs a reader made with deliver_entries=True")
        return self._consumer._take(timeout_millis)  # type: ignore[return-value]

    def _after_read(self, message: Message) -> None:
        owner: TopicConsumer = message._owner
        owner.acknowledge(message.message_id(), cumulative=True)

    def has_message_available(self) -> bool:
        """Whether a message is waiting or the topic holds one after the last one read."""
        self._consumer._check_open()
        return any(self._has_more(tc) for tc in self._consumer._consumers)

    def _has_more(self, tc: TopicConsumer) -> bool:
        with self._consumer._cond:
            if any(m._owner is tc for m in self._consumer._queue):
                return True
        last = tc.get_last_message_id()
        if last.entry_id() < 0:
            return False
        if tc.last_dequeued is not None:
            return last.position > tc.last_dequeued.position
        start = tc.start_message_id
        if start is None or start == MessageId.earliest:
            return True
        if start == MessageId.latest:
            if tc.start_inclusive:
                return True
            baseline = self._latest_at_start.get(tc.consumer_id)
            return baseline is not None and last.position > baseline.position
        if last.position != start.position:
            return last.position > start.position
        if tc.start_inclusive:
            return True
        return 0 <= start.batch_index() < start.batch_size() - 1

    def _remember_latest(self) -> None:
        """Record where the topic ended when a ``latest`` reader started."""
        for tc in self._consumer._consumers:
            self._latest_at_start[tc.consumer_id] = tc.get_last_message_id()

    def get_last_message_id(self) -> MessageId:
        """The id of the last message the (one, non-partitioned) topic holds, asked of the
        broker (``GET_LAST_MESSAGE_ID``; the official ``Consumer.get_last_message_id``, Java's
        ``Reader.getLastMessageIds``); entry id ``-1`` when the topic holds nothing."""
        return self._consumer.get_last_message_id()

    def seek(self, messageid: MessageId | int) -> None:
        """Reposition to a message id or a publish time (ms): the next read is what followed
        the id (the id itself for a reader made with ``start_message_id_inclusive``)."""
        self._consumer.seek(messageid)

    def has_reached_end_of_topic(self) -> bool:
        """Extension (Java's ``Reader.hasReachedEndOfTopic``): the topic is terminated and
        the reader has read all of it."""
        return self._consumer.has_reached_end_of_topic()

    def close(self) -> None:
        self._consumer.close()

    def is_connected(self) -> bool:
        return self._consumer.is_connected()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Reader(topic={self._topic!r})"


def reader_listener_adapter(listener: Any) -> Any:
    """Wrap ``reader_listener(reader, msg)`` so the reader acks what it hands over."""

    def call(reader: Reader, message: Message) -> None:
        reader._after_read(message)
        listener(reader, message)

    return call
