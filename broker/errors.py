"""Broker error types: one exception per failure a client can be told about.

Each class carries the Pulsar ``ServerError`` name it corresponds to (``code``), so the
wire layer can send it and the client can raise the matching ``pulsar-client`` exception.
Messages are one line and name the problem.
"""

from __future__ import annotations


class PulsarLabError(Exception):
    """Base class of every error the broker reports to a client."""

    code = "UnknownError"


class InvalidTopicName(PulsarLabError):
    code = "InvalidTopicName"


class TopicNotFound(PulsarLabError):
    code = "TopicNotFound"


class TopicAlreadyExists(PulsarLabError):
    code = "TopicAlreadyExists"


class SubscriptionNotFound(PulsarLabError):
    code = "SubscriptionNotFound"


class ConsumerBusy(PulsarLabError):
    """A second consumer on an Exclusive subscription, or a type change with consumers."""

    code = "ConsumerBusy"


class SubscriptionTypeMismatch(ConsumerBusy):
    code = "ConsumerBusy"


class ConsumerAssignError(PulsarLabError):
    """Key_Shared could not give the consumer a hash range (conflicts, no range left)."""

    code = "ConsumerAssignError"


class MessageTooBig(PulsarLabError):
    code = "MessageTooBig"


class ProducerBlockedQuotaExceeded(PulsarLabError):
    """The topic's backlog quota is exceeded and its policy is producer_exception."""

    code = "ProducerBlockedQuotaExceededException"


class IncompatibleSchema(PulsarLabError):
    """A schema the topic's compatibility strategy refuses (Pulsar's
    ``IncompatibleSchemaException``)."""

    code = "IncompatibleSchema"


class MetadataError(PulsarLabError):
    """Pulsar's ``ServerMetadataException``: e.g. a namespace that requires encryption."""

    code = "MetadataError"


class NotAllowed(PulsarLabError):
    code = "NotAllowedError"


class TopicTerminated(PulsarLabError):
    """The topic was terminated: it takes no new producer and no new message."""

    code = "TopicTerminatedError"


class CumulativeAcknowledgementNotAllowed(NotAllowed):
    code = "CumulativeAcknowledgementNotAllowedError"


class InvalidArgument(PulsarLabError):
    """A command carried a value of the wrong type or out of range."""

    code = "InvalidConfiguration"


class ConsumerNotFound(PulsarLabError):
    code = "ConsumerNotFound"


class ProducerNotFound(PulsarLabError):
    code = "ProducerNotFound"


class StorageError(PulsarLabError):
    """The ledger could not persist or read an entry (disk full, read-only, I/O error)."""

    code = "PersistenceError"


class LedgerCorruption(StorageError):
    """An entry failed its length/CRC check somewhere other than the torn tail."""

    code = "PersistenceError"


class AuthenticationError(PulsarLabError):
    """No token, or a token the broker does not accept (the connection is then ignored)."""

    code = "AuthenticationError"


class AuthorizationError(PulsarLabError):
    """The connection's role lacks the permission the operation needs."""

    code = "AuthorizationError"


class ProducerBusy(PulsarLabError):
    """A producer limit is reached (here: producers per connection)."""

    code = "ProducerBusy"


class ProducerFenced(PulsarLabError):
    """An exclusive producer is refused, or replaced by a newer one (access modes)."""

    code = "ProducerFenced"


class TooManyConnections(PulsarLabError):
    """The broker serves ``max_connections`` connections already; the client sees ConnectError."""

    code = "ConnectError"


class ClusterNotFound(PulsarLabError):
    """Admin named a cluster other than this broker's (``standalone``)."""

    code = "ClusterNotFound"


class TenantNotFound(PulsarLabError):
    code = "TenantNotFound"


class TenantAlreadyExists(PulsarLabError):
    code = "TenantAlreadyExists"


class TenantNotEmpty(PulsarLabError):
    """A tenant that still has namespaces cannot be deleted."""

    code = "TenantNotEmpty"


class NamespaceNotFound(PulsarLabError):
    code = "NamespaceNotFound"


class NamespaceAlreadyExists(PulsarLabError):
    code = "NamespaceAlreadyExists"


class NamespaceNotEmpty(PulsarLabError):
    """A namespace that still has topics cannot be deleted (unless forced)."""

    code = "NamespaceNotEmpty"


class SubscriptionAlreadyExists(NotAllowed):
    """Admin created a subscription the topic already has."""


class TopicBusy(NotAllowed):
    """A topic (or subscription) with connected producers or consumers, deleted unforced."""


class PartitionsNotIncreased(NotAllowed):
    """A partitioned topic's partition count can only grow."""


class ServiceNotReady(PulsarLabError):
    """The broker cannot answer this now (Pulsar's ServiceNotReady), e.g. a lookup for a
    listener name it does not advertise."""

    code = "ServiceNotReady"
