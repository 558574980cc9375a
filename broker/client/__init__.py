"""pulsarlab's client library: the official ``pulsar-client`` Python API over ZeroMQ.

Code written against ``import pulsar`` runs against a pulsarlab broker by importing these
names instead (``from pulsarlab import Client, ConsumerType, ...``) and pointing
``Client`` at the broker's ``zmq://host:port`` service URL. Class, method and argument
names and defaults follow the official package; pulsarlab extensions are keyword-only.

Pure pieces, usable on their own: :mod:`.batch`, :mod:`.compression`, :mod:`.chunking`,
:mod:`.routing`, :mod:`.ack_grouping`; the redelivery rules (negative acks, ack timeout,
dead letters, ``MultiplierRedeliveryBackoff``) are in :mod:`pulsarlab.broker.client.redelivery`.
"""

from ..message_id import MessageId
from .auth import Authentication, AuthenticationBasic, AuthenticationTLS, AuthenticationToken
from .client import Client
from .consumer import Consumer
from .enums import (
    BatchingType,
    CompressionType,
    ConsumerCryptoFailureAction,
    ConsumerType,
    HashingScheme,
    InitialPosition,
    KeySharedMode,
    LoggerLevel,
    PartitionsRoutingMode,
    ProducerAccessMode,
    RegexSubscriptionMode,
    Result,
)
from .exceptions import *  # noqa: F403  (the official package does the same)
from .exceptions import __all__ as _exception_names
from .message import Message
from .policies import ConsumerBatchReceivePolicy, ConsumerDeadLetterPolicy, ConsumerKeySharedPolicy
from .producer import Producer
from .reader import Reader
from .redelivery import MultiplierRedeliveryBackoff
from .schema import BytesSchema, Schema, StringSchema

__all__ = [
    "Authentication",
    "AuthenticationBasic",
    "AuthenticationTLS",
    "AuthenticationToken",
    "BatchingType",
    "BytesSchema",
    "Client",
    "CompressionType",
    "Consumer",
    "ConsumerBatchReceivePolicy",
    "ConsumerCryptoFailureAction",
    "ConsumerDeadLetterPolicy",
    "ConsumerKeySharedPolicy",
    "ConsumerType",
    "HashingScheme",
    "InitialPosition",
    "KeySharedMode",
    "LoggerLevel",
    "Message",
    "MessageId",
    "MultiplierRedeliveryBackoff",
    "PartitionsRoutingMode",
    "Producer",
    "ProducerAccessMode",
    "Reader",
    "RegexSubscriptionMode",
    "Result",
    "Schema",
    "StringSchema",
    *[n for n in _exception_names if n[0].isupper()],
]
