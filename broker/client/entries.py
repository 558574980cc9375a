"""``EntryBatch``: one stored entry as a bulk reader takes it, without a message per row.

A reader created with ``deliver_entries=True`` (an extension for bulk readers such as the
Spark source) queues one :class:`EntryBatch` per entry the broker delivers instead of one
:class:`~.message.Message` per message: the entry's metadata, its decompressed payload and,
for a batch, the checked items of :func:`~.batch.batch_items` (``(properties,
partition_key, ordering_key, event_time, sequence_id, null_value, payload)``) with the batch
indexes still to read (indexes before a batched start id, or acked in the broker's ack set,
are left out). Columns can then be built per entry, the way Arrow wants them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..entry import MessageMetadata
from ..message_id import MessageId

__all__ = ["EntryBatch"]


class EntryBatch:
    """The messages of one entry still to read; ``count`` of them."""

    __slots__ = ("_message_id", "_owner", "entry_id", "indexes", "items", "ledger_id",
                 "metadata", "partition", "payload", "redelivery_count", "topic")

    def __init__(self, topic: str, partition: int, ledger_id: int, entry_id: int,
                 metadata: MessageMetadata, payload: bytes, items: list[Sequence[Any]] | None,
                 indexes: list[int] | None, redelivery_count: int, owner: Any) -> None:
        self.topic = topic
        self.partition = partition
        self.ledger_id = ledger_id
        self.entry_id = entry_id
        self.metadata = metadata
        self.payload = payload  # the whole (decompressed) payload: one message's, or a batch's
        self.items = items  # a batch's items, None for a single message
        self.indexes = indexes  # the batch indexes to read, None for all of them
        self.redelivery_count = redelivery_count
        self._owner = owner
        if items is None:
            last = MessageId(partition, ledger_id, entry_id, -1)
        else:
            size = len(items)
            index = size - 1 if indexes is None else indexes[-1]
            last = MessageId(partition, ledger_id, entry_id, index, size)
        self._message_id = last

    @property
    def batch_size(self) -> int:
        """Messages in the entry's batch (0 for a single message)."""
        return 0 if self.items is None else len(self.items)

    @property
    def count(self) -> int:
        """How many messages of this entry are to be read."""
        if self.items is None:
            return 1
        return len(self.items) if self.indexes is None else len(self.indexes)

    def rows(self) -> list[Sequence[Any]]:
        """The messages to read as batch items (a single message as one synthetic item)."""
        items = self.items
        if items is None:
            m = self.metadata
            return [(m.properties or None, m.partition_key, m.ordering_key, m.event_time,
                     m.sequence_id, m.null_value, self.payload)]
        if self.indexes is None:
            return items
        return [items[i] for i in self.indexes]

    def batch_indexes(self) -> list[int] | range:
        """The batch index of each of :meth:`rows` (``[-1]`` for a single message)."""
        if self.items is None:
            return [-1]
        return range(len(self.items)) if self.indexes is None else self.indexes

    def message_id(self) -> MessageId:
        """The id of the last message to read in this entry."""
        return self._message_id

    def __repr__(self) -> str:
        return (f"EntryBatch(topic={self.topic!r}, entry=({self.ledger_id}, {self.entry_id}),"
                f" {self.count} messages)")
