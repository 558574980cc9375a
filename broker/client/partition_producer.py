"""The producer of one topic or partition: sequence ids, batching, compression, chunking.

:class:`~.producer.Producer` holds one :class:`PartitionProducer` per partition (one for a
non-partitioned topic). Each assigns sequence ids and counts pending messages on the
caller's thread (``max_pending_messages``, ``block_if_queue_full``), then hands the message
to the I/O thread, which owns the batch container (:mod:`.batch`), the publish-delay timer,
compression (:mod:`.compression`), chunking (:mod:`.chunking`), the in-flight queue and
send timeouts. Receipts arrive in send order and complete the futures of blocking sends on
the I/O thread; ``send_async`` callbacks ``(Result, MessageId)`` run on the client's
listener thread.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import logging
import operator
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..entry import MessageMetadata
from ..format.compression import codec_name, compress
from ..message_id import MessageId
from .batch import Batch, OutgoingMessage, make_batch_builder
from .chunking import chunk_metadata, split_payload
from .connection import TimerHandle, now_ms
from .enums import CompressionType, Result
from .exceptions import (
    AlreadyClosed,
    MessageTooBig,
    ProducerNotInitialized,
    ProducerQueueIsFull,
    PulsarException,
    TopicTerminated,
    exception_for,
    exception_for_result,
)
from .message import message_id

__all__ = ["Handle", "PartitionProducer", "ProducerConfig", "SendCallback"]

log = logging.getLogger("pulsarlab.client")

SendCallback = Callable[[Result, MessageId | None], None]


@dataclass(slots=True)
class ProducerConfig:
    """The settings a partition producer needs (already validated by ``create_producer``)."""

    producer_name: str | None = None
    initial_sequence_id: int | None = None
    send_timeout_millis: int = 30_000
    compression_type: CompressionType = CompressionType.NONE
    max_pending_messages: int = 1000
    block_if_queue_full: bool = False
    batching_enabled: bool = False
    batching_max_messages: int = 1000
    batching_max_allowed_size_in_bytes: int = 128 * 1024
    batching_max_publish_delay_ms: int = 10
    key_based_batching: bool = False
    chunking_enabled: bool = False
    chunk_max_message_size: int | None = None
    properties: dict[str, str] = field(default_factory=dict)
    access_mode: str = "Shared"  # ProducerAccessMode's name, enforced by the broker
    # A subscription the broker creates with the producer (a dead-letter topic's, as
    # Pulsar's client asks in CommandProducer.initial_subscription_name).
    initial_subscription_name: str | None = None


Handle = SendCallback | concurrent.futures.Future | None
"""What settles one message: its ``send_async`` callback, a blocking send's future, or
nothing (a ``send_async`` without a callback)."""


@dataclass(slots=True)
class _SendOp:
    number: int
    sequence_id: int
    messages: list[OutgoingMessage]
    batched: bool
    created_ms: int
    receipts_left: int = 1
    # (payload, metadata) of each SEND, kept to send again after a reconnect
    frames: list[tuple[bytes, MessageMetadata]] = field(default_factory=list)


_ARM_TIMER = object()  # queued by a caller that started a batch: the I/O thread arms its timer


def _messages_of(item: Batch | OutgoingMessage) -> list[OutgoingMessage]:
    return item.messages if type(item) is Batch else [item]


_SEQUENCE_ID = operator.attrgetter("sequence_id")


def _run_receipt_callbacks(callbacks: list[SendCallback | None], partition: int, ledger: int,
                           entry: int, batch_size: int) -> None:
    """The ``send_async`` callbacks of one receipt, in order, each with its message id
    (made here, on the listener thread); one raising does not stop the others."""
    for i, callback in enumerate(callbacks):
        if callback is None:
            continue
        msg_id = message_id(partition, ledger, entry, i if batch_size else -1, batch_size)
        try:
            callback(Result.Ok, msg_id)
        except Exception:
            log.exception("a user callback raised")


class PartitionProducer:
    """The producer of one topic or partition on the client's connection."""

    def __init__(self, client: Any, topic: str, partition: int, config: ProducerConfig) -> None:
        self._client = client
        self._conn = client._conn
        self.topic = topic
        self.partition = partition
        self.config = config
        self.producer_id = self._conn.new_id()
        self.name = config.producer_name or ""
        self.topic_epoch: int | None = None  # the broker gives an exclusive producer one
        self.last_published = -1
        self._next_sequence = 0
        # A plain lock under the condition: the hot paths take it directly.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._pending_count = 0
        # Under the lock: the batch container, filled on the caller's thread, and what is
        # ready to send (whole batches, and unbatched messages) in send order, which the
        # I/O thread takes in one task per burst of sends (``_take_posted``), not per message.
        self._builder = (
            make_batch_builder(
                config.key_based_batching,
                config.batching_max_messages,
                config.batching_max_allowed_size_in_bytes,
                self._conn.encode_batch,
            )
            if config.batching_enabled
            else None
        )
        self._batch_started_ms = 0  # when the container's first message arrived
        self._timer_armed = False  # a publish-delay timer is scheduled (or asked for)
        self._submitted: list[Batch | OutgoingMessage | object] = []  # object: _ARM_TIMER
        self._take_posted = False
        self._closed = False
        self._connected = False
        self._terminated = False  # the broker terminated the topic: no send can succeed
        self._reopening = False  # the topic was unloaded: PRODUCER sent again, not answered
        self._resend: list[_SendOp] = []  # refused while reopening: sent again once open
        self._resend_all = False  # reconnecting: every send in flight goes again once open
        # I/O-thread state.
        self._batch_timer: TimerHandle | None = None
        self._timeout_timer: TimerHandle | None = None
        self._inflight: deque[_SendOp] = deque()
        self._op_numbers = itertools.count(1)
        self._flush_waiters: list[tuple[int, concurrent.futures.Future]] = []

    # -- lifecycle (caller's thread) ------------------------------------------------------

    def open(self) -> None:
        conn = self._conn
        conn.post(lambda: conn.register_producer(self.producer_id, self))
        fields: dict[str, Any] = {"topic": self.topic, "producer_id": self.producer_id}
        if self.config.producer_name:
            fields["producer_name"] = self.config.producer_name
        if self.config.access_mode != "Shared":
            fields["access_mode"] = self.config.access_mode
        # A WaitForExclusive producer is answered once it gets the topic: no time-out.
        waits = self.config.access_mode == "WaitForExclusive"
        if self.config.initial_subscription_name:
            fields["initial_subscription_name"] = self.config.initial_subscription_name
        try:
            reply = conn.wait(conn.request("PRODUCER", **fields), None if waits else -1.0)
        except BaseException:
            conn.post(lambda: conn.unregister_producer(self.producer_id))
            raise
        self.name = reply["producer_name"]
        self.topic_epoch = reply.get("topic_epoch")
        broker_last = reply["last_sequence_id"]
        initial = self.config.initial_sequence_id
        if initial is not None:
            self.last_published = initial
            self._next_sequence = initial + 1
        else:
            self.last_published = broker_last
            self._next_sequence = broker_last + 1
        self._connected = True

    def submit(self, message: OutgoingMessage, handle: Handle, sequence_id: int | None) -> None:
        """Queue one message (raises ``ProducerQueueIsFull`` / ``AlreadyClosed``).

        A batched message goes into the batch container here, on the caller's thread; a
        full batch is encoded here too, so the I/O thread only sends whole batches.
        """
        limit = self.config.max_pending_messages
        with self._lock:
            if self._closed or self._terminated or 0 < limit <= self._pending_count:
                self._wait_for_room(limit)
            self._pending_count += 1
            if sequence_id is None:
                sequence_id = self._next_sequence
                self._next_sequence += 1
            message.sequence_id = sequence_id
            message.handle = handle
            builder = self._builder
            submitted = self._submitted
            if builder is None or message.deliver_at_time:
                if builder is not None and builder.num_messages:
                    submitted.extend(builder.flush())
                submitted.append(message)
            else:
                ready = builder.offer(message)
                if ready:
                    submitted.extend(ready)
                if builder.num_messages == 1:
                    self._batch_started_ms = now_ms()
                    if not self._timer_armed:
                        self._timer_armed = True
                        submitted.append(_ARM_TIMER)
            if self._take_posted or not submitted:
                return
            self._take_posted = True
        self._conn.post(self._io_take_submitted)

    def _wait_for_room(self, limit: int) -> None:
        """Raise if the producer cannot take a message; block until fewer than ``limit``
        messages are pending (the lock is held)."""
        if self._closed:
            raise AlreadyClosed(f"producer on {self.topic} is closed")
        if self._terminated:
            raise TopicTerminated(f"topic {self.topic} was terminated")
        while 0 < limit <= self._pending_count:
            if not self.config.block_if_queue_full:
                raise ProducerQueueIsFull(
                    f"producer on {self.topic} has {self._pending_count} pending messages"
                )
            self._cond.wait(0.1)
            if self._closed:
                raise AlreadyClosed(f"producer on {self.topic} is closed")

    def flush(self) -> None:
        """Send the current batch, wait until every pending message has its receipt and its
        ``send_async`` callback has run."""
        if self._closed and not self._inflight:
            return
        future: concurrent.futures.Future = concurrent.futures.Future()

        def task() -> None:
            self._io_flush_batch()
            last = self._inflight[-1].number if self._inflight else 0
            if last == 0:
                future.set_result(None)
            else:
                self._flush_waiters.append((last, future))

        self._conn.post(task)
        send_timeout = self.config.send_timeout_millis
        timeout = send_timeout / 1000 + 5 if send_timeout > 0 else None
        self._conn.wait(future, timeout)
        self._wait_for_callbacks()

    def _wait_for_callbacks(self) -> None:
        """Let the listener thread run the ``send_async`` callbacks queued so far.

        Once ``flush()`` returns, every callback of a message it waited for has run — code
        written against the official client reads its callbacks' results right after
        ``flush()``. The receipts queue the callbacks before they release the flush, so one
        marker task behind them is enough. Skipped when called from a callback (it would
        wait on itself).
        """
        executor = self._client._executor
        if executor.is_executor_thread or getattr(executor, "_closed", False):
            return
        ran = threading.Event()
        executor.submit(ran.set)
        ran.wait(30)

    def close(self) -> None:
        if self._closed:
            return
        try:
            self.flush()
        except PulsarException as exc:
            log.warning("flush before closing the producer on %s failed: %s", self.topic, exc)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        conn = self._conn
        try:
            conn.wait(conn.request("CLOSE_PRODUCER", producer_id=self.producer_id))
        finally:
            conn.post(self._io_closed)

    @property
    def is_connected(self) -> bool:
        return self._connected and not self._closed and not self._conn.closed

    # -- I/O thread -----------------------------------------------------------------------

    def _io_take_submitted(self) -> None:
        """Send what the callers queued, in order; arm the publish-delay timer if asked."""
        with self._lock:
            items, self._submitted = self._submitted, []
            self._take_posted = False
        if self._terminated and items:
            error = TopicTerminated(f"topic {self.topic} was terminated")
            for item in items:
                if item is not _ARM_TIMER:
                    self._settle(_messages_of(item), error.result, None, error)
            return
        for item in items:
            if type(item) is Batch:
                self._io_send(item.metadata, item.payload, item.messages, batched=True)
            elif item is _ARM_TIMER:
                self._io_arm_batch_timer()
            else:
                self._io_send_one(item)

    def _io_send_one(self, message: OutgoingMessage) -> None:
        metadata = MessageMetadata(
            sequence_id=message.sequence_id,
            properties=dict(message.properties) if message.properties else {},
            partition_key=message.partition_key,
            ordering_key=message.ordering_key,
            event_time=message.event_time or 0,
            deliver_at_time=message.deliver_at_time or 0,
            null_value=bool(message.null_value),
        )
        self._io_send(metadata, message.payload, [message], batched=False)

    def _io_arm_batch_timer(self) -> None:
        """Schedule the publish-delay flush of the batch the container holds now."""
        with self._lock:
            due = self._batch_started_ms + self.config.batching_max_publish_delay_ms
        self._batch_timer = self._conn.schedule(max(0, due - now_ms()), self._io_batch_due)

    def _io_batch_due(self) -> None:
        """The publish delay passed: send the batch, unless it is younger than the delay
        (the one the timer was armed for went out full); then wait for that one."""
        self._batch_timer = None
        with self._lock:
            builder = self._builder
            if builder is None or not builder.num_messages:
                self._timer_armed = False
                return
            due = self._batch_started_ms + self.config.batching_max_publish_delay_ms
            if due > now_ms():
                self._batch_timer = self._conn.schedule(due - now_ms(), self._io_batch_due)
                return
            self._timer_armed = False
            self._submitted.extend(builder.flush())
        self._io_take_submitted()

    def _io_flush_batch(self) -> None:
        """Send the container's batch now (flush and close), then everything queued."""
        with self._lock:
            builder = self._builder
            if builder is not None and builder.num_messages:
                self._submitted.extend(builder.flush())
        self._io_take_submitted()

    def _io_send(self, metadata: MessageMetadata, payload: bytes,
                 messages: list[OutgoingMessage], batched: bool) -> None:
        metadata.producer_name = self.name
        metadata.publish_time = now_ms()
        metadata.uncompressed_size = len(payload)
        codec = codec_name(self.config.compression_type)
        if codec != "NONE":
            metadata.compression = codec
            payload = compress(codec, payload)
        max_size = self._conn.max_message_size
        chunk_size = min(self.config.chunk_max_message_size or max_size, max_size)
        chunked = self.config.chunking_enabled and not batched and len(payload) > chunk_size
        if len(payload) > max_size and not chunked:
            error = MessageTooBig(
                f"message of {len(payload)} bytes exceeds the max message size {max_size}"
            )
            self._settle(messages, error.result, None, error)
            return
        op = _SendOp(next(self._op_numbers), messages[0].sequence_id, messages, batched, now_ms())
        sequence_id = op.sequence_id
        if chunked:
            pieces = split_payload(payload, chunk_size)
            op.receipts_left = len(pieces)
            uuid = f"{self.name}-{sequence_id}"
            self._inflight.append(op)
            for i, piece in enumerate(pieces):
                chunk = replace(metadata, **chunk_metadata(uuid, i, len(pieces), len(payload)))
                op.frames.append((piece, chunk))
        else:
            self._inflight.append(op)
            op.frames.append((payload, metadata))
        self._io_write(op)
        self._io_arm_timeout()

    def _io_write(self, op: _SendOp) -> None:
        count = len(op.messages) if op.batched else 1
        highest = op.messages[-1].sequence_id if op.batched else None
        send = self._conn.send_message
        for payload, metadata in op.frames:
            send(self.producer_id, op.sequence_id, metadata, payload, count, highest)

    def _io_arm_timeout(self) -> None:
        timeout = self.config.send_timeout_millis
        if timeout <= 0 or self._timeout_timer is not None or not self._inflight:
            return
        delay = self._inflight[0].created_ms + timeout - now_ms()
        self._timeout_timer = self._conn.schedule(max(1, delay), self._io_check_timeouts)

    def _io_check_timeouts(self) -> None:
        self._timeout_timer = None
        timeout = self.config.send_timeout_millis
        now = now_ms()
        while self._inflight and self._inflight[0].created_ms + timeout <= now:
            op = self._inflight.popleft()
            error = exception_for_result(
                Result.Timeout, f"no send receipt from the broker within {timeout} ms"
            )
            self._settle(op.messages, Result.Timeout, None, error)
        self._io_release_flush_waiters()
        self._io_arm_timeout()

    def _find_op(self, sequence_id: int) -> _SendOp | None:
        for op in self._inflight:
            if op.sequence_id == sequence_id:
                return op
        return None

    def on_send_receipt(self, cmd: Any) -> None:
        op = self._find_op(cmd["sequence_id"])
        if op is None:
            log.debug("receipt for unknown sequence id %s on %s", cmd["sequence_id"], self.topic)
            return
        op.receipts_left -= 1
        if op.receipts_left > 0:
            return
        self._inflight.remove(op)
        ledger, entry, partition = cmd["message_id"][:3]
        messages = op.messages
        self.last_published = max(self.last_published, max(map(_SEQUENCE_ID, messages)))
        batch_size = len(messages) if op.batched else 0
        handles = [m.handle for m in messages]
        if concurrent.futures.Future in set(map(type, handles)):  # a blocking send waits
            ids = [message_id(partition, ledger, entry, i if batch_size else -1, batch_size)
                   for i in range(len(messages))]
            self._settle(messages, Result.Ok, ids, None)
        else:
            # Only callbacks (or nothing) to tell: free the queue slots now, and let the
            # listener thread make the message ids as it runs the callbacks, off this thread
            # (the producer's caller is waiting for those slots).
            self._free(len(messages))
            if any(handles):
                self._client._executor.submit(_run_receipt_callbacks, handles, partition,
                                              ledger, entry, batch_size)
        self._io_release_flush_waiters()

    def on_send_error(self, cmd: Any) -> None:
        op = self._find_op(cmd["sequence_id"])
        if op is None:
            return
        if self._reopening and cmd["code"] == "ProducerNotFound":
            self._resend.append(op)  # sent while the unloaded topic closed it: send again
            return
        self._inflight.remove(op)
        error = exception_for(cmd["code"], cmd["message"])
        self._settle(op.messages, error.result, None, error)
        self._io_release_flush_waiters()

    def on_close_producer(self, cmd: Any) -> None:
        log.warning("the broker closed the producer on %s: %s", self.topic, cmd.get("reason"))
        self._connected = False
        if cmd.get("reason") == "terminated":  # Java's producer state Terminated
            with self._lock:
                self._terminated = True
            self._io_fail_all(TopicTerminated(f"topic {self.topic} was terminated"))
        elif cmd.get("reason") == "unloaded" and not self._closed:
            self._io_reopen()
        elif cmd.get("reason") == "reconnect" and not self._closed:
            # The connection was lost (or the broker closed the producer): create it again
            # and send every message still waiting for its receipt, as Java's client does.
            self._resend_all = True
            self._io_reopen()

    def _io_reopen(self) -> None:
        """The topic was unloaded: open the producer again under its name (Java's
        ``ProducerImpl`` reconnects); sends queue behind the new PRODUCER command."""
        fields: dict[str, Any] = {"topic": self.topic, "producer_id": self.producer_id,
                                  "producer_name": self.name}
        if self.config.access_mode != "Shared":  # back with its epoch, as Java's client
            fields.update(access_mode=self.config.access_mode, topic_epoch=self.topic_epoch)
        self._reopening = True

        def reopened(future: Any) -> None:
            self._conn.post(lambda: self._io_reopened(future.exception()))

        self._conn.request("PRODUCER", **fields).add_done_callback(reopened)

    def _io_reopened(self, error: BaseException | None) -> None:
        self._reopening = False
        resend, self._resend = self._resend, []
        if self._resend_all:  # everything in flight, in order (sends made meanwhile too)
            self._resend_all = False
            resend = list(self._inflight)
        if isinstance(error, TopicTerminated):  # Java's producer state Terminated
            with self._lock:
                self._terminated = True
            self._io_fail_all(TopicTerminated(f"topic {self.topic} was terminated"))
            return
        if error is not None:
            log.warning("re-opening the producer on %s failed: %s", self.topic, error)
            self._io_fail_all(ProducerNotInitialized(f"producer on {self.topic}: {error}"))
            return
        self._connected = True
        for op in resend:
            self._io_write(op)

    def on_connection_closed(self) -> None:
        self._io_fail_all(AlreadyClosed("the client was closed"))

    def _io_closed(self) -> None:
        self._io_fail_all(AlreadyClosed(f"producer on {self.topic} is closed"))
        self._conn.unregister_producer(self.producer_id)
        self._connected = False

    def _io_fail_all(self, error: PulsarException) -> None:
        if self._batch_timer is not None:
            self._batch_timer.cancel()
            self._batch_timer = None
        with self._lock:
            queued, self._submitted = self._submitted, []
            if self._builder is not None and self._builder.num_messages:
                queued.extend(self._builder.flush())
            self._timer_armed = False
        for item in queued:
            if item is not _ARM_TIMER:
                self._settle(_messages_of(item), error.result, None, error)
        while self._inflight:
            self._settle(self._inflight.popleft().messages, error.result, None, error)
        self._io_release_flush_waiters()

    def _io_release_flush_waiters(self) -> None:
        if not self._flush_waiters:
            return
        oldest = self._inflight[0].number if self._inflight else None
        keep = []
        for number, future in self._flush_waiters:
            if oldest is None or number < oldest:
                if not future.done():
                    future.set_result(None)
            else:
                keep.append((number, future))
        self._flush_waiters = keep

    def _free(self, n: int) -> None:
        """Give ``n`` queue slots back and wake callers blocked on a full queue."""
        with self._lock:
            self._pending_count -= n
            self._cond.notify_all()

    def _settle(self, messages: list[OutgoingMessage], result: Result,
                ids: list[MessageId] | None, error: PulsarException | None) -> None:
        """Settle ``messages`` (ids in the same order, or None on an error): free their
        queue slots, complete blocking sends, and queue the callbacks as one executor task."""
        self._free(len(messages))
        callbacks = []
        for i, message in enumerate(messages):
            handle = message.handle
            if handle is None:
                continue
            msg_id = None if ids is None else ids[i]
            if type(handle) is concurrent.futures.Future:
                if not handle.done():
                    if error is None:
                        handle.set_result(msg_id)
                    else:
                        handle.set_exception(error)
            else:
                callbacks.append((handle, msg_id))
        if callbacks:
            self._client._executor.submit_callbacks(result, callbacks)
