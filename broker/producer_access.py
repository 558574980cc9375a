"""Producer access modes: who may publish on a topic, and the topic epoch.

One :class:`ExclusiveAccess` per topic holds Pulsar's ``AbstractTopic`` state for them
(``hasExclusiveProducer``, ``exclusiveProducerName``, ``topicEpoch``,
``waitingExclusiveProducers``) and its rules (``incrementTopicEpochIfNeeded``,
``handleProducerRemoved``):

- ``Shared`` joins unless an exclusive producer holds the topic or one waits for it
  (``ProducerBusy``);
- ``Exclusive`` takes the topic when no producer is on it (``ProducerFenced`` otherwise);
- ``ExclusiveWithFencing`` takes it in any case: the producers on it are closed and the
  waiting ones fail with ``ProducerFenced``;
- ``WaitForExclusive`` takes it when free, else waits in line (first come, first served)
  and gets it when the holder leaves.

An exclusive producer that takes the topic moves the epoch on by one (or to the epoch its
client gives back when it reconnects); a client whose epoch is older than the topic's was
replaced in between and is refused with ``ProducerFenced``.

One difference from Pulsar 3.3, on purpose: a ``WaitForExclusive`` producer queued behind
``Shared`` producers gets the topic when the last of them leaves. Pulsar 3.3 only promotes
a waiter when an *exclusive* producer leaves, so that one waits forever (apache/pulsar
PR 24516 fixes it the same way).

The module is sans-I/O: the service closes and fails the producers it names.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING

from .errors import (
    InvalidArgument,
    ProducerBusy,
    ProducerFenced,
    PulsarLabError,
    ServiceNotReady,
    TopicTerminated,
)

if TYPE_CHECKING:
    from .topic import Producer

__all__ = ["ExclusiveAccess", "ProducerAccessMode", "RecentlyClosed", "waiting_refused"]


class ProducerAccessMode(StrEnum):
    """Pulsar's ``ProducerAccessMode``, by its protocol names."""

    Shared = "Shared"
    Exclusive = "Exclusive"
    WaitForExclusive = "WaitForExclusive"
    ExclusiveWithFencing = "ExclusiveWithFencing"

    @classmethod
    def parse(cls, value: object) -> ProducerAccessMode:
        """The mode named ``value`` (a mode, or its name); ``InvalidArgument`` otherwise."""
        try:
            return cls(value)
        except ValueError:
            raise InvalidArgument(
                f"unknown producer access mode {value!r}: one of {', '.join(cls)}"
            ) from None


class ExclusiveAccess:
    """One topic's exclusive-producer state and the admission rules of every mode."""

    __slots__ = ("_save", "exclusive_producer", "topic_epoch", "waiting")

    def __init__(self, topic_epoch: int | None = None,
                 save: Callable[[int], None] | None = None) -> None:
        """``save(epoch)`` keeps a new epoch with the topic's metadata (Pulsar keeps it in
        the managed ledger's properties), so it survives an unload or a restart."""
        self.topic_epoch = topic_epoch
        self.exclusive_producer: str | None = None  # the holder's name, if one holds it
        self.waiting: deque[Producer] = deque()  # WaitForExclusive producers, in line
        self._save = save

    @property
    def held(self) -> bool:
        """Whether an exclusive producer holds the topic."""
        return self.exclusive_producer is not None

    def admit(self, producer: Producer, has_producers: bool) -> bool:
        """Admit ``producer`` under its access mode: ``True`` when it may publish now,
        ``False`` when it waits in line; ``ProducerBusy`` / ``ProducerFenced`` when refused.
        On admission ``producer.topic_epoch`` is the topic's epoch (what the client keeps).

        An ``ExclusiveWithFencing`` producer expects the service to have fenced the topic
        (:meth:`fence`) first when it was not free."""
        mode = producer.access_mode
        if mode is ProducerAccessMode.Shared:
            if self.held or self.waiting:
                raise ProducerBusy(
                    f"Topic has an existing exclusive producer: {self.exclusive_producer}"
                )
            producer.topic_epoch = self.topic_epoch  # Pulsar tells a Shared one too
            return True
        if mode is ProducerAccessMode.Exclusive:
            if self.held or self.waiting:
                raise ProducerFenced(
                    f"Topic has an existing exclusive producer: {self.exclusive_producer}"
                )
            if has_producers:
                raise ProducerFenced("Topic has existing shared producers")
        elif mode is ProducerAccessMode.WaitForExclusive and (self.held or has_producers):
            self.waiting.append(producer)
            return False
        self._check_epoch(producer)
        self._take(producer)
        return True

    def fence(self) -> list[Producer]:
        """An ``ExclusiveWithFencing`` producer arrives on a busy topic: the waiting
        producers, now refused (``ProducerFenced``: "Fenced out"); the service closes
        them and every producer on the topic."""
        waiting = list(self.waiting)
        self.waiting.clear()
        return waiting

    def removed(self, producer: Producer, has_producers: bool) -> Producer | None:
        """``producer`` left the topic (or gave up waiting): the waiting producer that
        takes the topic now, if any."""
        if not producer.ready:
            if producer in self.waiting:
                self.waiting.remove(producer)
            return None
        if self.exclusive_producer == producer.producer_name:
            self.exclusive_producer = None
        elif self.held or has_producers:
            return None
        if not self.waiting:
            return None
        waiter = self.waiting.popleft()
        self._take(waiter)  # as Pulsar: its own epoch if its client gave one, else the next
        return waiter

    def stale(self, producer: Producer) -> bool:
        """Whether ``producer``'s client epoch is older than the topic's."""
        return producer.topic_epoch is not None and producer.topic_epoch < self._epoch()

    def _epoch(self) -> int:
        return -1 if self.topic_epoch is None else self.topic_epoch

    def _check_epoch(self, producer: Producer) -> None:
        if self.stale(producer):
            raise ProducerFenced(
                f"Topic epoch has already moved. Current epoch: {self.topic_epoch}, "
                f"Producer epoch: {producer.topic_epoch}"
            )

    def _take(self, producer: Producer) -> None:
        """``producer`` holds the topic; its ``topic_epoch`` becomes the topic's."""
        self.exclusive_producer = producer.producer_name
        if producer.topic_epoch is None:
            producer.topic_epoch = self._epoch() + 1
        if producer.topic_epoch != self.topic_epoch and self._save is not None:
            self._save(producer.topic_epoch)
        self.topic_epoch = producer.topic_epoch


def waiting_refused(reason: str) -> PulsarLabError:
    """The error a waiting producer's PRODUCER gets when the broker closes it while it waits
    (``ProducerClosed.reason``): "Fenced out" by an ExclusiveWithFencing producer, as
    Pulsar's, or the topic terminated, deleted or unloaded under it."""
    if reason == "fenced":
        return ProducerFenced("Fenced out")
    if reason == "terminated":
        return TopicTerminated("Topic was already terminated")
    return ServiceNotReady(f"the topic was {reason} while the producer waited for it")


class RecentlyClosed:
    """The client ids of the producers the broker closed on one connection (the newest
    ``limit``): a SEND to one of them was on its way, not a broken protocol (Pulsar's
    ``ServerCnx.recentlyClosedProducers``)."""

    __slots__ = ("_ids", "limit")

    def __init__(self, limit: int = 10_000) -> None:
        self._ids: dict[int, None] = {}
        self.limit = limit

    def add(self, client_id: int) -> None:
        self._ids[client_id] = None
        if len(self._ids) > self.limit:
            del self._ids[next(iter(self._ids))]

    def discard(self, client_id: int) -> None:
        """The client opened a producer under that id again."""
        self._ids.pop(client_id, None)

    def __contains__(self, client_id: object) -> bool:
        return client_id in self._ids
