"""Exceptions with the official ``pulsar-client`` names, and the broker-code mapping.

As in ``pulsar.exceptions``, there is one class per ``Result`` value (``Timeout``,
``ConsumerBusy``, ``CumulativeAcknowledgementNotAllowedError``, ...), all subclasses of
:class:`PulsarException`. :func:`exception_for` turns an ``ERROR``/``SEND_ERROR`` code sent by
the broker (the ``code`` of a :mod:`pulsarlab.broker.errors` class) into the matching one.
"""

from __future__ import annotations

from .enums import Result

__all__ = [
    "AlreadyClosed",
    "AuthenticationError",
    "AuthorizationError",
    "BrokerMetadataError",
    "BrokerPersistenceError",
    "ChecksumError",
    "ConnectError",
    "ConsumerAssignError",
    "ConsumerBusy",
    "ConsumerNotFound",
    "ConsumerNotInitialized",
    "CryptoError",
    "CumulativeAcknowledgementNotAllowedError",
    "ErrorGettingAuthenticationData",
    "IncompatibleSchema",
    "Interrupted",
    "InvalidConfiguration",
    "InvalidMessage",
    "InvalidTopicName",
    "InvalidTxnStatusError",
    "InvalidUrl",
    "LookupError",
    "MemoryBufferIsFull",
    "MessageTooBig",
    "NotAllowedError",
    "NotConnected",
    "OperationNotSupported",
    "ProducerBlockedQuotaExceededError",
    "ProducerBlockedQuotaExceededException",
    "ProducerBusy",
    "ProducerFenced",
    "ProducerNotInitialized",
    "ProducerQueueIsFull",
    "PulsarException",
    "ReadError",
    "ServiceUnitNotReady",
    "SubscriptionNotFound",
    "Timeout",
    "TooManyLookupRequestException",
    "TopicNotFound",
    "TopicTerminated",
    "TransactionConflict",
    "TransactionCoordinatorNotFoundError",
    "TransactionNotFound",
    "UnknownError",
    "UnsupportedVersionError",
    "exception_for",
    "exception_for_result",
    "result_of",
]


class PulsarException(Exception):
    """Base class of every client error; ``result`` is the matching :class:`Result`."""

    result: Result = Result.UnknownError


class UnknownError(PulsarException):
    result = Result.UnknownError


class InvalidConfiguration(PulsarException):
    result = Result.InvalidConfiguration


class Timeout(PulsarException):
    result = Result.Timeout


class LookupError(PulsarException):
    result = Result.LookupError


class ConnectError(PulsarException):
    result = Result.ConnectError


class ReadError(PulsarException):
    result = Result.ReadError


class AuthenticationError(PulsarException):
    result = Result.AuthenticationError


class AuthorizationError(PulsarException):
    result = Result.AuthorizationError


class ErrorGettingAuthenticationData(PulsarException):
    result = Result.ErrorGettingAuthenticationData


class BrokerMetadataError(PulsarException):
    result = Result.BrokerMetadataError


class BrokerPersistenceError(PulsarException):
    result = Result.BrokerPersistenceError


class ChecksumError(PulsarException):
    result = Result.ChecksumError


class ConsumerBusy(PulsarException):
    result = Result.ConsumerBusy


class NotConnected(PulsarException):
    result = Result.NotConnected


class AlreadyClosed(PulsarException):
    result = Result.AlreadyClosed


class InvalidMessage(PulsarException):
    result = Result.InvalidMessage


class ConsumerNotInitialized(PulsarException):
    result = Result.ConsumerNotInitialized


class ProducerNotInitialized(PulsarException):
    result = Result.ProducerNotInitialized


class ProducerBusy(PulsarException):
    result = Result.ProducerBusy


class TooManyLookupRequestException(PulsarException):
    result = Result.TooManyLookupRequestException


class InvalidTopicName(PulsarException):
    result = Result.InvalidTopicName


class InvalidUrl(PulsarException):
    result = Result.InvalidUrl


class ServiceUnitNotReady(PulsarException):
    result = Result.ServiceUnitNotReady


class OperationNotSupported(PulsarException):
    result = Result.OperationNotSupported


class ProducerBlockedQuotaExceededError(PulsarException):
    result = Result.ProducerBlockedQuotaExceededError


class ProducerBlockedQuotaExceededException(PulsarException):
    result = Result.ProducerBlockedQuotaExceededException


class ProducerQueueIsFull(PulsarException):
    result = Result.ProducerQueueIsFull


class MessageTooBig(PulsarException):
    result = Result.MessageTooBig


class TopicNotFound(PulsarException):
    result = Result.TopicNotFound


class SubscriptionNotFound(PulsarException):
    result = Result.SubscriptionNotFound


class ConsumerNotFound(PulsarException):
    result = Result.ConsumerNotFound


class UnsupportedVersionError(PulsarException):
    result = Result.UnsupportedVersionError


class TopicTerminated(PulsarException):
    result = Result.TopicTerminated


class CryptoError(PulsarException):
    result = Result.CryptoError


class IncompatibleSchema(PulsarException):
    result = Result.IncompatibleSchema


class ConsumerAssignError(PulsarException):
    result = Result.ConsumerAssignError


class CumulativeAcknowledgementNotAllowedError(PulsarException):
    result = Result.CumulativeAcknowledgementNotAllowedError


class TransactionCoordinatorNotFoundError(PulsarException):
    result = Result.TransactionCoordinatorNotFoundError


class InvalidTxnStatusError(PulsarException):
    result = Result.InvalidTxnStatusError


class NotAllowedError(PulsarException):
    result = Result.NotAllowedError


class TransactionConflict(PulsarException):
    result = Result.TransactionConflict


class TransactionNotFound(PulsarException):
    result = Result.TransactionNotFound


class ProducerFenced(PulsarException):
    result = Result.ProducerFenced


class MemoryBufferIsFull(PulsarException):
    result = Result.MemoryBufferIsFull


class Interrupted(PulsarException):
    result = Result.Interrupted


_BY_RESULT: dict[Result, type[PulsarException]] = {
    cls.result: cls for cls in PulsarException.__subclasses__()
}

# Broker codes that are not themselves ``Result`` names.
_ALIASES = {
    "PersistenceError": Result.BrokerPersistenceError,
    "MetadataError": Result.BrokerMetadataError,
    "ServiceNotReady": Result.ServiceUnitNotReady,
    "ProducerNotFound": Result.ProducerNotInitialized,
    "TopicAlreadyExists": Result.NotAllowedError,
    "UnsupportedVersion": Result.UnsupportedVersionError,
    "AuthorizationError": Result.AuthorizationError,
    "AuthenticationError": Result.AuthenticationError,
    "TopicTerminatedError": Result.TopicTerminated,
}


def exception_for_result(result: Result, message: str = "") -> PulsarException:
    """An instance of the exception class named after ``result``."""
    cls = _BY_RESULT.get(result, PulsarException)
    return cls(message or result.name)


def exception_for(code: str, message: str = "") -> PulsarException:
    """The exception for a broker error ``code`` (unknown codes give :class:`UnknownError`)."""
    result = _ALIASES.get(code)
    if result is None:
        result = Result.__members__.get(code, Result.UnknownError)
    if result is Result.Ok:
        result = Result.UnknownError
    return exception_for_result(result, message or code)


def result_of(exc: BaseException) -> Result:
    """The :class:`Result` to report for ``exc`` (``UnknownError`` for foreign exceptions)."""
    if isinstance(exc, PulsarException):
        return exc.result
    return Result.UnknownError
