"""``Client``: the entry point, with the official ``pulsar.Client`` signature and defaults.

One client = one connection (one DEALER socket and one I/O thread, :mod:`.connection`) plus
one listener thread for user callbacks. It looks topics up (``PARTITIONED_METADATA``: a
partitioned topic gets one internal producer/consumer per partition), lists namespaces for
pattern subscriptions (``GET_TOPICS_OF_NAMESPACE``), validates arguments the way the official client
does (``ValueError("Argument X is expected to be of type ...")``), and closes everything it
created on :meth:`Client.close`. ``pulsar+ssl://`` URLs use the official TLS arguments
(:mod:`.tls`). Arguments of the official client that mean nothing here (stats interval,
lookup concurrency, crypto, ...) are accepted and ignored;
pulsarlab extensions are keyword-only and listed in each method's docstring.
"""

from __future__ import annotations

import logging
import re
import secrets
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..curve import load_public_key
from ..message_id import MessageId
from ..selectors.hashing import HashingScheme
from ..topic_name import TopicName
from .auth import Authentication, AuthenticationTLS
from .checks import check_type, check_type_or_none
from .connection import CallbackExecutor
from .consumer import Consumer
from .enums import (
    BatchingType,
    CompressionType,
    ConsumerCryptoFailureAction,
    ConsumerType,
    InitialPosition,
    PartitionsRoutingMode,
    ProducerAccessMode,
    RegexSubscriptionMode,
)
from .exceptions import AlreadyClosed, PulsarException
from .exceptions import InvalidTopicName as InvalidTopicNameError
from .message import Message
from .partition_producer import PartitionProducer, ProducerConfig
from .policies import (
    ConsumerBatchReceivePolicy,
    ConsumerDeadLetterPolicy,
    ConsumerKeySharedPolicy,
    validate_sticky_ranges,
)
from .producer import Producer
from .pulsar_connection import DEFAULT_KEEP_ALIVE_SECONDS, PulsarConnection
from .reader import Reader, reader_listener_adapter
from .redelivery import DLQ_SUFFIX, MAX_RECONSUMETIMES, RETRY_SUFFIX, unacked
from .redelivery.negative_acks import MIN_NACK_DELAY_MS
from .routing import make_router
from .tls import TlsOptions
from .topic_consumer import ConsumerConfig

__all__ = ["Client"]

log = logging.getLogger("pulsarlab.client")

_PATTERN_TYPE = type(re.compile("x"))


def _full_name(topic: str) -> str:
    try:
        return str(TopicName.get(topic))
    except Exception as exc:
        raise InvalidTopicNameError(str(exc)) from None


def _tls_options(authentication: Authentication | None, trust: str | None, insecure: bool,
                 validate_hostname: bool, cert: str | None, key: str | None) -> TlsOptions:
    """The TLS options; an ``AuthenticationTLS`` certificate wins over the ``tls_*`` files."""
    if isinstance(authentication, AuthenticationTLS):
        cert, key = authentication.certificate_path, authentication.private_key_path
    return TlsOptions(trust_certs_file_path=trust, allow_insecure_connection=insecure,
                      validate_hostname=validate_hostname, certificate_file_path=cert,
                      private_key_file_path=key)


class Client:
    """A pulsarlab client; the arguments are those of ``pulsar.Client``."""

    def __init__(
        self,
        service_url: str,
        authentication: Authentication | None = None,
        operation_timeout_seconds: int = 30,
        io_threads: int = 1,
        message_listener_threads: int = 1,
        concurrent_lookup_requests: int = 50000,
        log_conf_file_path: str | None = None,
        stats_interval_in_seconds: int = 600,
        use_tls: bool = False,
        tls_trust_certs_file_path: str | None = None,
        tls_allow_insecure_connection: bool = False,
        tls_validate_hostname: bool = False,
        logger: logging.Logger | None = None,
        connection_timeout_ms: int = 10000,
        listener_name: str | None = None,
        tls_private_key_file_path: str | None = None,
        tls_certificate_file_path: str | None = None,
        *,
        curve_server_key: str | bytes | None = None,
        keep_alive_interval_seconds: int | float = DEFAULT_KEEP_ALIVE_SECONDS,
    ) -> None:
        """Connect lazily to ``service_url`` (``pulsar://host:port``,
        ``pulsar+ssl://host:port`` or ``zmq://host:port``).

        ``authentication=AuthenticationToken(token)`` (a string or a callable supplying one
        at each connect) is required by brokers with authentication enabled;
        ``AuthenticationTLS(cert, key)`` presents a client certificate over
        ``pulsar+ssl://``. Extensions: ``curve_server_key`` is the broker's CurveZMQ public
        key (40 Z85 characters or the path of its ``.pub`` file) when the broker encrypts
        with CURVE; ``keep_alive_interval_seconds`` (the C++ and Java clients' keep-alive
        interval, 30 s) is how often an idle connection is PINGed; one silent for a whole
        interval after a PING is closed and its producers and consumers reconnect.
        """
        check_type(str, service_url, "service_url")
        check_type_or_none(Authentication, authentication, "authentication")
        check_type(int, operation_timeout_seconds, "operation_timeout_seconds")
        check_type(int, connection_timeout_ms, "connection_timeout_ms")
        check_type(int, io_threads, "io_threads")
        check_type(int, message_listener_threads, "message_listener_threads")
        check_type(int, concurrent_lookup_requests, "concurrent_lookup_requests")
        check_type_or_none(str, log_conf_file_path, "log_conf_file_path")
        check_type(int, stats_interval_in_seconds, "stats_interval_in_seconds")
        check_type(bool, use_tls, "use_tls")
        check_type_or_none(str, tls_trust_certs_file_path, "tls_trust_certs_file_path")
        check_type(bool, tls_allow_insecure_connection, "tls_allow_insecure_connection")
        check_type(bool, tls_validate_hostname, "tls_validate_hostname")
        check_type_or_none(str, listener_name, "listener_name")
        check_type_or_none(str, tls_private_key_file_path, "tls_private_key_file_path")
        check_type_or_none(str, tls_certificate_file_path, "tls_certificate_file_path")
        check_type((int, float), keep_alive_interval_seconds, "keep_alive_interval_seconds")
        if keep_alive_interval_seconds <= 0:
            raise ValueError("Argument keep_alive_interval_seconds must be positive")
        if logger is not None and not isinstance(logger, logging.Logger):
            raise ValueError("Logger is expected to be either None or a logging.Logger")
        self._service_url = service_url
        # Pulsar's binary protocol: over TCP for pulsar://, over a DEALER for zmq:// (and
        # tcp://, ipc://), one Pulsar frame per ZeroMQ message.
        self._conn = PulsarConnection(
            service_url,
            auth_token=authentication.token if authentication is not None else None,
            auth_method=authentication.method_and_data() if authentication is not None
            else None,
            operation_timeout_seconds=operation_timeout_seconds,
            connection_timeout_ms=connection_timeout_ms,
            curve_server_key=None if curve_server_key is None
            else load_public_key(curve_server_key),
            tls=_tls_options(authentication, tls_trust_certs_file_path,
                             tls_allow_insecure_connection, tls_validate_hostname,
                             tls_certificate_file_path, tls_private_key_file_path),
            keep_alive_interval_seconds=keep_alive_interval_seconds,
        )
        self._executor = CallbackExecutor()
        self._handles: list[Any] = []
        self._handles_lock = threading.Lock()
        self._closed = False

    # -- producers ------------------------------------------------------------------------

    def create_producer(
        self,
        topic: str,
        producer_name: str | None = None,
        schema: Any = None,
        initial_sequence_id: int | None = None,
        send_timeout_millis: int = 30000,
        compression_type: CompressionType = CompressionType.NONE,
        max_pending_messages: int = 1000,
        max_pending_messages_across_partitions: int = 50000,
        block_if_queue_full: bool = False,
        batching_enabled: bool = False,
        batching_max_messages: int = 1000,
        batching_max_allowed_size_in_bytes: int = 128 * 1024,
        batching_max_publish_delay_ms: int = 10,
        chunking_enabled: bool = False,
        message_routing_mode: PartitionsRoutingMode = PartitionsRoutingMode.RoundRobinDistribution,
        lazy_start_partitioned_producers: bool = False,
        properties: dict[str, str] | None = None,
        batching_type: BatchingType = BatchingType.Default,
        encryption_key: str | None = None,
        crypto_key_reader: Any = None,
        access_mode: ProducerAccessMode = ProducerAccessMode.Shared,
        message_router: Callable[[Message, int], int] | None = None,
        *,
        hashing_scheme: HashingScheme = HashingScheme.JavaStringHash,
        chunk_max_message_size: int | None = None,
        _initial_subscription_name: str | None = None,
    ) -> Producer:
        """Create a producer (official arguments and defaults).

        Extensions: ``hashing_scheme`` (``HashingScheme.JavaStringHash``, the Java default,
        or ``Murmur3_32Hash``) picks the partition of keyed messages;
        ``chunk_max_message_size`` caps chunk payloads below the broker's max message size.
        """
        self._check_open()
        check_type(str, topic, "topic")
        check_type_or_none(str, producer_name, "producer_name")
        check_type_or_none(int, initial_sequence_id, "initial_sequence_id")
        check_type(int, send_timeout_millis, "send_timeout_millis")
        check_type(CompressionType, compression_type, "compression_type")
        check_type(int, max_pending_messages, "max_pending_messages")
        check_type(int, max_pending_messages_across_partitions,
                   "max_pending_messages_across_partitions")
        check_type(bool, block_if_queue_full, "block_if_queue_full")
        check_type(bool, batching_enabled, "batching_enabled")
        check_type(int, batching_max_messages, "batching_max_messages")
        check_type(int, batching_max_allowed_size_in_bytes, "batching_max_allowed_size_in_bytes")
        check_type(int, batching_max_publish_delay_ms, "batching_max_publish_delay_ms")
        check_type(bool, chunking_enabled, "chunking_enabled")
        check_type(PartitionsRoutingMode, message_routing_mode, "message_routing_mode")
        check_type(bool, lazy_start_partitioned_producers, "lazy_start_partitioned_producers")
        check_type_or_none(dict, properties, "properties")
        check_type(BatchingType, batching_type, "batching_type")
        check_type_or_none(str, encryption_key, "encryption_key")
        check_type(ProducerAccessMode, access_mode, "access_mode")
        check_type(HashingScheme, hashing_scheme, "hashing_scheme")
        check_type_or_none(int, chunk_max_message_size, "chunk_max_message_size")
        if batching_enabled and chunking_enabled:
            raise ValueError("Batching and chunking of messages can't be enabled together.")
        if message_router is not None and not callable(message_router):
            raise ValueError("Argument message_router is expected to be a callable")
        name = _full_name(topic)
        config = ProducerConfig(
            producer_name=producer_name or None,
            initial_sequence_id=initial_sequence_id or None,
            send_timeout_millis=send_timeout_millis,
            compression_type=compression_type,
            max_pending_messages=max_pending_messages,
            block_if_queue_full=block_if_queue_full,
            batching_enabled=batching_enabled,
            batching_max_messages=batching_max_messages,
            batching_max_allowed_size_in_bytes=batching_max_allowed_size_in_bytes,
            batching_max_publish_delay_ms=batching_max_publish_delay_ms,
            key_based_batching=batching_type is BatchingType.KeyBased,
            chunking_enabled=chunking_enabled,
            chunk_max_message_size=chunk_max_message_size,
            properties=dict(properties or {}),
            access_mode=access_mode.name,
            initial_subscription_name=_initial_subscription_name,
        )
        partitions = self._partitions_of(name)
        names = [name] if partitions == 0 else [
            str(TopicName.get(name).partition(i)) for i in range(partitions)
        ]
        opened: list[PartitionProducer] = []
        try:
            for i, n in enumerate(names):
                p = PartitionProducer(self, n, i if partitions else -1, config)
                p.open()
                opened.append(p)
                if i == 0 and config.producer_name is None and partitions:
                    # Every partition producer shares the first one's (broker-given) name.
                    config = _with_name(config, p.name)
        except BaseException:
            for p in opened:
                try:
                    p.close()
                except PulsarException:
                    log.debug("closing a partially created producer failed", exc_info=True)
            raise
        router = make_router(
            message_routing_mode,
            max(1, partitions),
            hashing_scheme=hashing_scheme,
            message_router=message_router,
            batching_enabled=batching_enabled,
            batching_max_publish_delay_ms=batching_max_publish_delay_ms,
        )
        producer = Producer(self, name, opened, router, schema, partitioned=partitions > 0)
        self._remember(producer)
        return producer

    # -- consumers ------------------------------------------------------------------------

    def subscribe(
        self,
        topic: str | list[str] | re.Pattern,
        subscription_name: str,
        consumer_type: ConsumerType = ConsumerType.Exclusive,
        schema: Any = None,
        message_listener: Callable[[Consumer, Message], None] | None = None,
        receiver_queue_size: int = 1000,
        max_total_receiver_queue_size_across_partitions: int = 50000,
        consumer_name: str | None = None,
        unacked_messages_timeout_ms: int | None = None,
        broker_consumer_stats_cache_time_ms: int = 30000,
        negative_ack_redelivery_delay_ms: int = 60000,
        is_read_compacted: bool = False,
        properties: dict[str, str] | None = None,
        pattern_auto_discovery_period: int = 60,
        initial_position: InitialPosition = InitialPosition.Latest,
        crypto_key_reader: Any = None,
        replicate_subscription_state_enabled: bool = False,
        max_pending_chunked_message: int = 10,
        auto_ack_oldest_chunked_message_on_queue_full: bool = False,
        start_message_id_inclusive: bool = False,
        batch_receive_policy: ConsumerBatchReceivePolicy | None = None,
        key_shared_policy: ConsumerKeySharedPolicy | None = None,
        batch_index_ack_enabled: bool = False,
        regex_subscription_mode: RegexSubscriptionMode = RegexSubscriptionMode.PersistentOnly,
        dead_letter_policy: ConsumerDeadLetterPolicy | None = None,
        crypto_failure_action: ConsumerCryptoFailureAction = ConsumerCryptoFailureAction.FAIL,
        *,
        priority_level: int = 0,
        key_hash_ranges: list[tuple[int, int]] | None = None,
        acknowledgements_group_time_ms: int = 100,
        expire_time_of_incomplete_chunked_message_ms: int = 60000,
        tick_duration_ms: int = 1000,
        negative_ack_redelivery_backoff: Any = None,
        ack_timeout_redelivery_backoff: Any = None,
        retry_enable: bool = False,
    ) -> Consumer:
        """Subscribe to a topic, a list of topics or a ``re.compile`` pattern.

        Extensions: ``priority_level`` (Failover; lower = higher priority),
        ``key_hash_ranges`` (Exclusive/Failover: only keys whose hash slot is in these
        inclusive ranges), ``acknowledgements_group_time_ms`` (0 = send each ack at once),
        ``expire_time_of_incomplete_chunked_message_ms``, and from Java's consumer builder:
        ``tick_duration_ms`` (ack-timeout tick, >= 100), ``negative_ack_redelivery_backoff``
        and ``ack_timeout_redelivery_backoff`` (a ``MultiplierRedeliveryBackoff``; for ack
        timeouts it adds to the timeout), ``retry_enable`` (``enableRetry``: subscribe the
        retry-letter topic too and allow :meth:`Consumer.reconsume_later`; without a
        ``dead_letter_policy`` the max is 16 attempts; topics default to
        ``<first topic>-<subscription>-RETRY`` / ``-DLQ``).
        """
        self._check_open()
        check_type(str, subscription_name, "subscription_name")
        check_type(ConsumerType, consumer_type, "consumer_type")
        check_type(int, receiver_queue_size, "receiver_queue_size")
        check_type(int, max_total_receiver_queue_size_across_partitions,
                   "max_total_receiver_queue_size_across_partitions")
        check_type_or_none(str, consumer_name, "consumer_name")
        check_type_or_none(int, unacked_messages_timeout_ms, "unacked_messages_timeout_ms")
        check_type(int, broker_consumer_stats_cache_time_ms, "broker_consumer_stats_cache_time_ms")
        check_type(int, negative_ack_redelivery_delay_ms, "negative_ack_redelivery_delay_ms")
        check_type(int, pattern_auto_discovery_period, "pattern_auto_discovery_period")
        check_type(bool, is_read_compacted, "is_read_compacted")
        check_type_or_none(dict, properties, "properties")
        check_type(InitialPosition, initial_position, "initial_position")
        check_type(int, max_pending_chunked_message, "max_pending_chunked_message")
        check_type(bool, auto_ack_oldest_chunked_message_on_queue_full,
                   "auto_ack_oldest_chunked_message_on_queue_full")
        check_type(bool, start_message_id_inclusive, "start_message_id_inclusive")
        check_type_or_none(ConsumerBatchReceivePolicy, batch_receive_policy,
                           "batch_receive_policy")
        check_type_or_none(ConsumerKeySharedPolicy, key_shared_policy, "key_shared_policy")
        check_type(bool, batch_index_ack_enabled, "batch_index_ack_enabled")
        check_type(RegexSubscriptionMode, regex_subscription_mode, "regex_subscription_mode")
        check_type_or_none(ConsumerDeadLetterPolicy, dead_letter_policy, "dead_letter_policy")
        check_type(ConsumerCryptoFailureAction, crypto_failure_action, "crypto_failure_action")
        check_type(int, priority_level, "priority_level")
        check_type(int, acknowledgements_group_time_ms, "acknowledgements_group_time_ms")
        check_type(int, expire_time_of_incomplete_chunked_message_ms,
                   "expire_time_of_incomplete_chunked_message_ms")
        check_type(int, tick_duration_ms, "tick_duration_ms")
        check_type(bool, retry_enable, "retry_enable")
        _check_backoff(negative_ack_redelivery_backoff, "negative_ack_redelivery_backoff")
        _check_backoff(ack_timeout_redelivery_backoff, "ack_timeout_redelivery_backoff")
        min_ack_timeout = unacked.MIN_ACK_TIMEOUT_MS
        if unacked_messages_timeout_ms and unacked_messages_timeout_ms < min_ack_timeout:
            raise ValueError("Consumer Config Exception: Unacknowledged message timeout "
                             f"should be greater than {min_ack_timeout / 1000:g} seconds.")
        if tick_duration_ms < unacked.MIN_TICK_MS:
            raise ValueError(
                f"Ack timeout tick time should be greater than {unacked.MIN_TICK_MS} ms"
            )
        if negative_ack_redelivery_delay_ms < 0:
            raise ValueError("negative_ack_redelivery_delay_ms must be >= 0 (delays below "
                             f"{MIN_NACK_DELAY_MS} ms count as {MIN_NACK_DELAY_MS} ms)")
        if priority_level < 0:
            raise ValueError("priority_level must be >= 0")
        if dead_letter_policy is not None and not retry_enable and consumer_type not in (
            ConsumerType.Shared, ConsumerType.KeyShared
        ):
            raise ValueError(
                "dead_letter_policy works on Shared and KeyShared subscriptions only (as in "
                "Pulsar, Exclusive and Failover redeliver everything and never dead-letter)"
            )
        retry_topic: str | None = None
        if retry_enable:
            dead_letter_policy, retry_topic = _retry_policy(topic, subscription_name,
                                                            dead_letter_policy)
        if key_shared_policy is not None and consumer_type is not ConsumerType.KeyShared:
            raise ValueError("key_shared_policy needs consumer_type=ConsumerType.KeyShared")
        if key_hash_ranges is not None:
            key_hash_ranges = validate_sticky_ranges(key_hash_ranges)
        config = ConsumerConfig(
            subscription=subscription_name,
            consumer_type=consumer_type,
            schema=schema,
            receiver_queue_size=receiver_queue_size,
            consumer_name=consumer_name or None,
            unacked_messages_timeout_ms=unacked_messages_timeout_ms or None,
            negative_ack_redelivery_delay_ms=negative_ack_redelivery_delay_ms,
            initial_position=initial_position,
            start_message_id_inclusive=start_message_id_inclusive,
            key_shared_policy=key_shared_policy,
            key_hash_ranges=key_hash_ranges,
            batch_index_ack_enabled=batch_index_ack_enabled,
            read_compacted=is_read_compacted,
            priority_level=priority_level,
            max_pending_chunked_message=max_pending_chunked_message,
            auto_ack_oldest_chunked_message_on_queue_full=(
                auto_ack_oldest_chunked_message_on_queue_full
            ),
            expire_time_of_incomplete_chunked_message_ms=(
                expire_time_of_incomplete_chunked_message_ms
            ),
            acknowledgements_group_time_ms=acknowledgements_group_time_ms,
            tick_duration_ms=tick_duration_ms,
            negative_ack_redelivery_backoff=negative_ack_redelivery_backoff,
            ack_timeout_redelivery_backoff=ack_timeout_redelivery_backoff,
            dead_letter_policy=dead_letter_policy,
            retry_enable=retry_enable,
        )
        self._conn.ensure_connected()
        extra = [retry_topic] if retry_topic is not None else []
        if isinstance(topic, str):
            label = _full_name(topic)
            consumer = Consumer(self, config, label, message_listener, batch_receive_policy)
            self._open(consumer, list(dict.fromkeys([label, *extra])))
        elif isinstance(topic, list):
            if not topic or not all(isinstance(t, str) for t in topic):
                raise ValueError("Argument 'topic' as a list must hold topic names (str)")
            names = list(dict.fromkeys(_full_name(t) for t in topic))
            consumer = Consumer(self, config, ",".join(names), message_listener,
                                batch_receive_policy)
            self._open(consumer, list(dict.fromkeys([*names, *extra])))
        elif isinstance(topic, _PATTERN_TYPE):
            regex, namespace = _namespace_pattern(topic)
            consumer = Consumer(self, config, regex.pattern, message_listener,
                                batch_receive_policy)
            self._open(consumer, sorted(self._matching_topics(regex, namespace,
                                                              regex_subscription_mode)))
            consumer._watch_pattern(regex, namespace, max(0.05, pattern_auto_discovery_period),
                                    regex_subscription_mode)
        else:
            raise ValueError(
                "Argument 'topic' is expected to be of a type between (str, list, re.pattern)"
            )
        return consumer

    def _open(self, consumer: Consumer, topics: list[str]) -> None:
        try:
            for t in topics:
                consumer._add_topic(t)
        except BaseException:
            consumer.close()
            raise
        self._remember(consumer)

    # -- readers --------------------------------------------------------------------------

    def create_reader(
        self,
        topic: str,
        start_message_id: MessageId,
        schema: Any = None,
        reader_listener: Callable[[Reader, Message], None] | None = None,
        receiver_queue_size: int = 1000,
        reader_name: str | None = None,
        subscription_role_prefix: str | None = None,
        is_read_compacted: bool = False,
        crypto_key_reader: Any = None,
        start_message_id_inclusive: bool = False,
        crypto_failure_action: ConsumerCryptoFailureAction = ConsumerCryptoFailureAction.FAIL,
        *,
        key_hash_ranges: list[tuple[int, int]] | None = None,
        deliver_entries: bool = False,
    ) -> Reader:
        """Create a reader positioned at ``start_message_id`` (official arguments).

        Extensions: ``key_hash_ranges`` — read only keys whose hash slot (murmur3 % 65536)
        falls in these inclusive ranges (Pulsar's ``keyHashRange`` on the Java reader);
        ``deliver_entries`` — :meth:`Reader.read_entry` hands out whole entries
        (:class:`EntryBatch`), for bulk readers that build columns per entry.
        """
        self._check_open()
        check_type(str, topic, "topic")
        check_type(MessageId, start_message_id, "start_message_id")
        check_type(int, receiver_queue_size, "receiver_queue_size")
        check_type_or_none(str, reader_name, "reader_name")
        check_type_or_none(str, subscription_role_prefix, "subscription_role_prefix")
        check_type(bool, is_read_compacted, "is_read_compacted")
        check_type(bool, start_message_id_inclusive, "start_message_id_inclusive")
        check_type(ConsumerCryptoFailureAction, crypto_failure_action, "crypto_failure_action")
        check_type(bool, deliver_entries, "deliver_entries")
        if deliver_entries and reader_listener is not None:
            raise ValueError("a reader with deliver_entries=True takes no reader_listener")
        if key_hash_ranges is not None:
            key_hash_ranges = validate_sticky_ranges(key_hash_ranges)
        name = _full_name(topic)
        suffix = secrets.token_hex(5)
        subscription = (
            f"{subscription_role_prefix}-reader-{suffix}" if subscription_role_prefix
            else f"reader-{suffix}"
        )
        config = ConsumerConfig(
            subscription=subscription,
            consumer_type=ConsumerType.Exclusive,
            schema=schema,
            receiver_queue_size=receiver_queue_size,
            consumer_name=reader_name or None,
            durable=False,
            is_reader=True,
            start_message_id=start_message_id,
            start_message_id_inclusive=start_message_id_inclusive,
            key_hash_ranges=key_hash_ranges,
            deliver_entries=deliver_entries,
            read_compacted=is_read_compacted,
        )
        self._conn.ensure_connected()
        listener = reader_listener_adapter(reader_listener) if reader_listener else None
        consumer = Consumer(self, config, name, listener)
        reader = Reader(consumer, name)
        consumer._listener_target = reader
        partitions = self._partitions_of(name)
        if partitions and start_message_id not in (MessageId.earliest, MessageId.latest):
            raise ValueError(
                "a reader of a partitioned topic starts at MessageId.earliest or "
                "MessageId.latest; read one partition ('<topic>-partition-<i>') to start at an id"
            )
        self._open(consumer, [name])
        if start_message_id == MessageId.latest and not start_message_id_inclusive:
            reader._remember_latest()
        return reader

    # -- topics ---------------------------------------------------------------------------

    def get_topic_partitions(self, topic: str) -> list[str]:
        """The partition topics of ``topic`` (just ``[topic]`` if it is not partitioned)."""
        self._check_open()
        check_type(str, topic, "topic")
        name = _full_name(topic)
        n = self._partitions_of(name)
        if n == 0:
            return [name]
        return [str(TopicName.get(name).partition(i)) for i in range(n)]

    def _partitions_of(self, name: str) -> int:
        if TopicName.get(name).partition_index >= 0:
            # a partition (``-partition-<i>``) has none; Pulsar answers 0, pulsar-lite with
            # default partitions would make it a partitioned topic of its own
            return 0
        self._conn.ensure_connected()
        reply = self._conn.wait(self._conn.request("PARTITIONED_METADATA", topic=name))
        return int(reply.get("result") or 0)

    def get_topics_of_namespace(self, namespace: str) -> list[str]:
        """Extension (Pulsar's ``GET_TOPICS_OF_NAMESPACE``, what pattern subscriptions list):
        the topics of ``namespace`` (``tenant/ns``) as the broker lists them (Pulsar lists a
        partitioned topic's partitions by their own names)."""
        self._check_open()
        check_type(str, namespace, "namespace")
        return self._topics_of(namespace)

    def _topics_of(self, namespace: str) -> list[str]:
        self._conn.ensure_connected()
        reply = self._conn.wait(self._conn.request("GET_TOPICS", namespace=namespace))
        return list(reply.get("result") or [])

    def _matching_topics(self, regex: re.Pattern, namespace: str,
                         mode: RegexSubscriptionMode) -> set[str]:
        found = set()
        for name in self._topics_of(namespace):
            parsed = TopicName.get(name).partitioned_topic_name
            if mode is RegexSubscriptionMode.PersistentOnly and not parsed.persistent:
                continue
            if mode is RegexSubscriptionMode.NonPersistentOnly and parsed.persistent:
                continue
            if regex.fullmatch(str(parsed)):
                found.add(str(parsed))
        return found

    # -- lifecycle ------------------------------------------------------------------------

    def _remember(self, handle: Any) -> None:
        with self._handles_lock:
            self._handles.append(handle)

    def _forget(self, handle: Any) -> None:
        with self._handles_lock:
            if handle in self._handles:
                self._handles.remove(handle)

    def _check_open(self) -> None:
        if self._closed:
            raise AlreadyClosed("the client is closed")

    def close(self) -> None:
        """Close every producer (flushing), consumer and reader, then the connection."""
        if self._closed:
            return
        with self._handles_lock:
            handles = list(self._handles)
        producers = [h for h in handles if isinstance(h, Producer)]
        others = [h for h in handles if not isinstance(h, Producer)]
        for handle in producers + others:
            try:
                handle.close()
            except PulsarException as exc:
                log.warning("while closing the client: %s", exc)
        self._closed = True
        self._conn.close()
        self._executor.close()

    def shutdown(self) -> None:
        """Stop at once: nothing is flushed, pending sends fail with ``AlreadyClosed``."""
        if self._closed:
            return
        self._closed = True
        self._conn.close()
        self._executor.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self._service_url!r})"


def _check_backoff(backoff: Any, name: str) -> None:
    if backoff is not None and not callable(getattr(backoff, "next", None)):
        raise ValueError(
            f"Argument {name} is expected to be either None or a MultiplierRedeliveryBackoff "
            "(an object with next(redelivery_count) -> delay in ms)"
        )


def _retry_policy(
    topic: Any, subscription: str, policy: ConsumerDeadLetterPolicy | None
) -> tuple[ConsumerDeadLetterPolicy, str]:
    """Java's ``enableRetry``: the policy with both topic names filled in, and the retry
    topic to subscribe too. Default names come from the first topic as given."""
    if isinstance(topic, str):
        first = topic
    elif isinstance(topic, list) and topic and isinstance(topic[0], str):
        first = topic[0]
    else:
        raise ValueError(
            "retry_enable needs a topic name or a list of topic names (the retry and "
            "dead-letter topics are named after the first one), not a pattern"
        )
    prefix = f"{first}-{subscription}"
    retry_topic = _full_name((policy and policy.retry_letter_topic) or prefix + RETRY_SUFFIX)
    dead_topic = _full_name((policy and policy.dead_letter_topic) or prefix + DLQ_SUFFIX)
    resolved = ConsumerDeadLetterPolicy(
        policy.max_redeliver_count if policy is not None else MAX_RECONSUMETIMES,
        dead_topic,
        policy.initial_subscription_name if policy is not None else None,
        retry_letter_topic=retry_topic,
    )
    return resolved, retry_topic


def _with_name(config: ProducerConfig, name: str) -> ProducerConfig:
    return replace(config, producer_name=name)


def _namespace_pattern(pattern: re.Pattern) -> tuple[re.Pattern, str]:
    """A pattern over full topic names and the namespace it lists (Java's rules)."""
    text = pattern.pattern
    if "://" in text:
        rest = text.partition("://")[2]
        parts = rest.split("/", 2)
        if len(parts) < 3:
            raise ValueError(f"topic pattern {text!r} must be domain://tenant/namespace/regex")
        return re.compile(text, pattern.flags), f"{parts[0]}/{parts[1]}"
    parts = text.split("/", 2)
    if len(parts) == 3:
        return re.compile("persistent://" + text, pattern.flags), f"{parts[0]}/{parts[1]}"
    prefix = re.escape("persistent://public/default/")
    return re.compile(prefix + text, pattern.flags), "public/default"
