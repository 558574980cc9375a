"""What the core asks the shell to do: deliver messages, answer sends, notify consumers.

Commands on :class:`~pulsarlab.broker.service.BrokerService` queue these; the shell drains
them with ``take_actions()`` and turns each into frames for the connection it names.
They are plain slotted records, not frozen ones (a frozen dataclass's ``__init__`` costs
four times as much), or tuples where one is made per message or commit
(``SendReceipts``, ``DeliveredEntry``). Nobody mutates them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from .storage.base import Position


class DeliveredEntry(NamedTuple):
    """One entry pushed to a consumer (a message, or a batch of them)."""

    position: Position
    partition: int
    redelivery_count: int
    data: bytes
    # Batch-index ack state (bits set = still unacknowledged), or None for the whole entry.
    ack_set: int | None = None


@dataclass(slots=True)
class Deliver:
    consumer_id: int
    conn: Any
    topic: str
    entries: list[DeliveredEntry]


class SendReceipt(NamedTuple):
    """A send is durable: its message id goes back to the producer (one message of a
    :class:`SendReceipts`)."""

    producer_id: int
    conn: Any
    sequence_id: int
    ledger_id: int
    entry_id: int
    partition: int


class SendReceipts(NamedTuple):
    """Sends of one producer that one group commit made durable, in the order sent: their
    message ids go back to it. One action per producer and commit (a tuple: its shell
    writes them in one go), not one per message."""

    producer_id: int
    conn: Any
    partition: int
    receipts: list[tuple[int, int, int]]  # (sequence_id, ledger_id, entry_id)

    def each(self) -> list[SendReceipt]:
        """One :class:`SendReceipt` per message."""
        return [SendReceipt(self.producer_id, self.conn, sequence_id, ledger_id, entry_id,
                            self.partition)
                for sequence_id, ledger_id, entry_id in self.receipts]


@dataclass(slots=True)
class SendError:
    producer_id: int
    conn: Any
    sequence_id: int
    code: str
    message: str


@dataclass(slots=True)
class ActiveConsumerChange:
    """Tells a Failover/Exclusive consumer whether it is now the active one."""

    consumer_id: int
    conn: Any
    is_active: bool


@dataclass(slots=True)
class ConsumerClosed:
    """The broker closed a consumer (topic deleted, subscription removed, unloaded)."""

    consumer_id: int
    conn: Any
    reason: str


@dataclass(slots=True)
class ProducerClosed:
    """The broker closed a producer: its topic was deleted, terminated or unloaded, or an
    ExclusiveWithFencing producer fenced it out (``reason`` "fenced"; a waiting producer
    is then refused)."""

    producer_id: int
    conn: Any
    reason: str


@dataclass(slots=True)
class ProducerReady:
    """A waiting (``WaitForExclusive``) producer got the topic and may publish now."""

    producer_id: int
    conn: Any
    topic_epoch: int | None


@dataclass(slots=True)
class ReachedEndOfTopic:
    """The consumer's topic is terminated and its subscription has consumed all of it."""

    consumer_id: int
    conn: Any


Action = (
    Deliver | SendReceipts | SendError | ActiveConsumerChange | ConsumerClosed | ProducerClosed
    | ProducerReady | ReachedEndOfTopic
)
