"""The official ``pulsar-client`` enums, with the same member names and C++ values.

The official package re-exports pybind11 enums from the C++ client; these are plain
:class:`enum.Enum` classes with the same member names (``ConsumerType.KeyShared``, not
``Key_Shared``) so code written against ``pulsar`` runs unchanged. ``HashingScheme`` is an
extension (the official Python client does not expose it; see apache/pulsar#6945).
"""

from __future__ import annotations

import enum

from ..selectors.hashing import HashingScheme

__all__ = [
    "BatchingType",
    "CompressionType",
    "ConsumerCryptoFailureAction",
    "ConsumerType",
    "HashingScheme",
    "InitialPosition",
    "KeySharedMode",
    "LoggerLevel",
    "PartitionsRoutingMode",
    "ProducerAccessMode",
    "RegexSubscriptionMode",
    "Result",
]


class ConsumerType(enum.Enum):
    """Subscription type of a consumer."""

    Exclusive = 0
    Shared = 1
    Failover = 2
    KeyShared = 3

    @property
    def wire_name(self) -> str:
        """The ``sub_type`` sent in SUBSCRIBE (``Key_Shared`` on the wire, as Pulsar names it)."""
        return "Key_Shared" if self is ConsumerType.KeyShared else self.name

    @classmethod
    def from_wire_name(cls, name: str) -> ConsumerType:
        """The type of a wire name, in any case (``Key_Shared``, ``key_shared``, ``shared``)."""
        for member in cls:
            if member.wire_name.lower() == name.lower():
                return member
        raise ValueError(f"unknown subscription type {name!r}")


class InitialPosition(enum.Enum):
    """Where a new subscription starts."""

    Latest = 0
    Earliest = 1


class KeySharedMode(enum.Enum):
    """How a Key_Shared consumer gets its hash ranges."""

    AutoSplit = 0
    Sticky = 1


class PartitionsRoutingMode(enum.Enum):
    """How a producer on a partitioned topic picks a partition."""

    UseSinglePartition = 0
    RoundRobinDistribution = 1
    CustomPartition = 2


class BatchingType(enum.Enum):
    """Which batch container the producer uses."""

    Default = 0
    KeyBased = 1


class CompressionType(enum.Enum):
    """Payload compression codec."""

    NONE = 0
    LZ4 = 1
    ZLib = 2
    ZSTD = 3
    SNAPPY = 4


class ProducerAccessMode(enum.Enum):
    """Who may publish on a topic; the broker enforces it (Pulsar's access modes)."""

    Shared = 0
    Exclusive = 1
    WaitForExclusive = 2
    ExclusiveWithFencing = 3


class RegexSubscriptionMode(enum.Enum):
    """Which topics a pattern subscription considers."""

    PersistentOnly = 0
    NonPersistentOnly = 1
    AllTopics = 2


class ConsumerCryptoFailureAction(enum.Enum):
    """Accepted for compatibility; pulsarlab has no end-to-end encryption."""

    FAIL = 0
    DISCARD = 1
    CONSUME = 2


class LoggerLevel(enum.Enum):
    """Accepted for compatibility (``ConsoleLogger``/``FileLogger`` levels)."""

    Debug = 0
    Info = 1
    Warn = 2
    Error = 3


class Result(enum.Enum):
    """Outcome codes, as passed to ``send_async`` callbacks (``Result.Ok`` on success)."""

    Ok = 0
    UnknownError = 1
    InvalidConfiguration = 2
    Timeout = 3
    LookupError = 4
    ConnectError = 5
    ReadError = 6
    AuthenticationError = 7
    AuthorizationError = 8
    ErrorGettingAuthenticationData = 9
    BrokerMetadataError = 10
    BrokerPersistenceError = 11
    ChecksumError = 12
    ConsumerBusy = 13
    NotConnected = 14
    AlreadyClosed = 15
    InvalidMessage = 16
    ConsumerNotInitialized = 17
    ProducerNotInitialized = 18
    ProducerBusy = 19
    TooManyLookupRequestException = 20
    InvalidTopicName = 21
    InvalidUrl = 22
    ServiceUnitNotReady = 23
    OperationNotSupported = 24
    ProducerBlockedQuotaExceededError = 25
    ProducerBlockedQuotaExceededException = 26
    ProducerQueueIsFull = 27
    MessageTooBig = 28
    TopicNotFound = 29
    SubscriptionNotFound = 30
    ConsumerNotFound = 31
    UnsupportedVersionError = 32
    TopicTerminated = 33
    CryptoError = 34
    IncompatibleSchema = 35
    ConsumerAssignError = 36
    CumulativeAcknowledgementNotAllowedError = 37
    TransactionCoordinatorNotFoundError = 38
    InvalidTxnStatusError = 39
    NotAllowedError = 40
    TransactionConflict = 41
    TransactionNotFound = 42
    ProducerFenced = 43
    MemoryBufferIsFull = 44
    Interrupted = 45
