"""The ``%pulsar produce`` and ``%pulsar consume`` commands: messages in and out of a topic
through the connected client (pulsarlab's or the official one), with a progress bar for
large runs.

``MessageCommands`` is a part of :class:`~.magics.PulsarMagics`; it uses the magics'
``runtime`` and the ``_full`` topic-name helper.
"""

from __future__ import annotations

import argparse
from typing import Any

from .magic_grammar import SUB_TYPES
from .progress import Progress
from .results import MessageList, SentMessages, message_row
from .runtime import BrokerRuntime, PulsarMagicError

__all__ = ["MessageCommands"]

PROGRESS_MIN = 500  # messages from which produce/consume show a bar


class MessageCommands:
    """The message commands of the ``%pulsar`` magics."""

    runtime: BrokerRuntime

    def _full(self, topic: str) -> str:
        raise NotImplementedError

    def _cmd_produce(self, args: argparse.Namespace, cell: str | None) -> SentMessages:
        topic = self._full(args.topic)
        if cell is not None:
            if args.value:
                raise PulsarMagicError("give the messages either on the line or in the cell")
            values = [line for line in cell.splitlines() if line.strip()]
            if not values:
                raise PulsarMagicError("the cell has no message (one message per line)")
        else:
            if not args.value:
                raise PulsarMagicError(
                    "give a VALUE (or use %%pulsar produce TOPIC with one message per line)"
                )
            values = [" ".join(args.value)]
        properties = dict(args.properties) or None
        total = len(values) * args.count
        connection = self.runtime.connection()
        connection.check_write(f"send {total} message{'s' * (total != 1)} to {topic}")
        producer = connection.client().create_producer(topic, block_if_queue_full=True)
        ids: list[Any] = [None] * total
        failures: list[str] = []

        def settled(index: int) -> Any:
            def callback(result: Any, message_id: Any) -> None:
                # Result.Ok in both clients (the official one also hands over an id on failure)
                if message_id is None or getattr(result, "name", "Ok") != "Ok":
                    failures.append(str(result))
                    message_id = None
                ids[index] = message_id
            return callback

        try:
            with Progress(total, f"producing to {topic}",
                          enabled=None if total >= PROGRESS_MIN else False) as progress:
                index = 0
                for _ in range(args.count):
                    for value in values:
                        producer.send_async(value.encode("utf-8"), settled(index),
                                            properties=properties, partition_key=args.key)
                        index += 1
                        progress.update(index)
                producer.flush()
                progress.update(index, force=True)
        finally:
            producer.close()
        if failures:
            raise PulsarMagicError(f"{len(failures)} of {total} messages failed: {failures[0]}")
        return SentMessages(ids, topic)

    def _cmd_consume(self, args: argparse.Namespace, cell: str | None) -> MessageList:
        topic = self._full(args.topic)
        self.runtime.last_subscription = args.sub
        connection = self.runtime.connection()
        connection.check_write(f"receive and acknowledge up to {args.count} messages of "
                               f"{args.sub} on {topic}")
        api = connection.api  # ConsumerType, InitialPosition, Timeout of its client
        Timeout = api.Timeout
        consumer = connection.client().subscribe(
            topic, args.sub,
            consumer_type=getattr(api.ConsumerType, SUB_TYPES[args.type]),
            initial_position=(api.InitialPosition.Earliest if args.earliest
                              else api.InitialPosition.Latest),
        )
        rows: list[dict[str, Any]] = []
        interrupted = False
        try:
            with Progress(args.count, f"consuming {topic} / {args.sub}",
                          enabled=None if args.count >= PROGRESS_MIN else False) as progress:
                while len(rows) < args.count:
                    try:
                        msg = consumer.receive(timeout_millis=args.timeout)
                    except Timeout:
                        break
                    except KeyboardInterrupt:
                        interrupted = True
                        break
                    rows.append(message_row(
                        topic=msg.topic_name(), message_id=str(msg.message_id()),
                        key=msg.partition_key(), data=msg.data(),
                        properties=msg.properties(), publish_time=msg.publish_timestamp(),
                        event_time=msg.event_timestamp(),
                        redelivery_count=msg.redelivery_count(),
                        producer_name=msg.producer_name(),
                    ))
                    consumer.acknowledge(msg)
                    progress.update(len(rows))
                progress.update(len(rows), force=True)
        finally:
            consumer.close()
        if interrupted:
            print(f"interrupted after {len(rows)} messages")
        return MessageList(rows, f"from {topic} / {args.sub}")
