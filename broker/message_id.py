"""``MessageId``: the position of a message, with Pulsar's ordering and serialised form.

A message id is ``(ledger_id, entry_id, partition, batch_index)`` plus the batch size for
batched messages. Ids order by ledger, entry, partition, then batch index; a non-batched
id (batch index -1) sorts before the batched ids of the same entry, as in Pulsar.
"""

from __future__ import annotations

import struct
from functools import total_ordering
from typing import ClassVar

_INT64_MAX = (1 << 63) - 1
_WIRE = struct.Struct(">qqiii")


@total_ordering
class MessageId:
    """Identifies one message in a topic (partition) and orders it against others."""

    __slots__ = ("_batch_index", "_batch_size", "_entry_id", "_ledger_id", "_partition")

    earliest: ClassVar[MessageId]
    latest: ClassVar[MessageId]

    def __init__(
        self,
        partition: int = -1,
        ledger_id: int = -1,
        entry_id: int = -1,
        batch_index: int = -1,
        batch_size: int = 0,
    ) -> None:
        for name, value in (
            ("partition", partition),
            ("ledger_id", ledger_id),
            ("entry_id", entry_id),
            ("batch_index", batch_index),
            ("batch_size", batch_size),
        ):
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(
                    f"Argument {name} is expected to be of type 'int' and not "
                    f"'{type(value).__name__}'"
                )
        self._partition = partition
        self._ledger_id = ledger_id
        self._entry_id = entry_id
        self._batch_index = batch_index
        self._batch_size = batch_size

    def ledger_id(self) -> int:
        return self._ledger_id

    def entry_id(self) -> int:
        return self._entry_id

    def partition(self) -> int:
        return self._partition

    def batch_index(self) -> int:
        return self._batch_index

    def batch_size(self) -> int:
        return self._batch_size

    @property
    def position(self) -> tuple[int, int]:
        """The entry's ``(ledger_id, entry_id)`` position in the managed ledger."""
        return (self._ledger_id, self._entry_id)

    def _key(self) -> tuple[int, int, int, int]:
        return (self._ledger_id, self._entry_id, self._partition, self._batch_index)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MessageId):
            return NotImplemented
        return self._key() == other._key()

    def __lt__(self, other: MessageId) -> bool:
        if not isinstance(other, MessageId):
            return NotImplemented
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return f"({self._ledger_id},{self._entry_id},{self._partition},{self._batch_index})"

    def __repr__(self) -> str:
        return (
            f"MessageId(partition={self._partition}, ledger_id={self._ledger_id}, "
            f"entry_id={self._entry_id}, batch_index={self._batch_index})"
        )

    def serialize(self) -> bytes:
        """Encode to 28 bytes (big-endian ledger, entry, partition, batch index, batch size)."""
        return _WIRE.pack(
            self._ledger_id, self._entry_id, self._partition, self._batch_index, self._batch_size
        )

    @staticmethod
    def deserialize(data: bytes, topic: str | None = None) -> MessageId:
        """Decode what :meth:`serialize` produced; a wrong length is a ``ValueError``."""
        if not isinstance(data, bytes | bytearray | memoryview) or len(data) != _WIRE.size:
            raise ValueError(
                f"a serialized MessageId is {_WIRE.size} bytes, got "
                f"{len(data) if hasattr(data, '__len__') else type(data).__name__}"
            )
        ledger, entry, partition, batch_index, batch_size = _WIRE.unpack(bytes(data))
        return MessageId(partition, ledger, entry, batch_index, batch_size)


MessageId.earliest = MessageId(-1, -1, -1, -1)
MessageId.latest = MessageId(-1, _INT64_MAX, _INT64_MAX, -1)
