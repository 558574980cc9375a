"""Broker settings, named as broker.conf's keys in snake_case, with Pulsar 3.3's defaults."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, fields, replace
from typing import Any

from .errors import InvalidArgument
from .pulsar_version import DEFAULT_PULSAR_VERSION, PulsarVersion
from .storage.base import LedgerConfig


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    """Every tunable of the broker core. Unknown names are rejected, not ignored."""

    pulsar_version: str = DEFAULT_PULSAR_VERSION
    """The Pulsar release whose behaviour the broker reproduces where releases differ:
    ``"3.3"`` (the latest 3.3.x patch) or a patch such as ``"3.3.1"`` (the consistent-hashing
    ring before PR #23327, STICKY ranges before PR #24730). See
    :mod:`pulsarlab.broker.pulsar_version`."""
    max_message_size: int = 5 * 1024 * 1024
    broker_service_port: int = 0
    """Port of the pulsar:// listener for the official client (brokerServicePort); 0 picks
    a free port (``pulsarlab broker`` passes 6650, as ``pulsar standalone`` listens)."""
    # Pulsar's maxNumPartitionsPerPartitionedTopic is 0 (no limit) by default; a notebook
    # broker creates partitions inline, so it refuses absurd counts instead of wedging.
    max_num_partitions_per_partitioned_topic: int = 1000
    allow_auto_topic_creation: bool = True
    key_shared_use_consistent_hashing: bool = True
    subscription_key_shared_consistent_hashing_replica_points: int = 100
    acknowledgment_at_batch_index_level_enabled: bool = False
    active_consumer_failover_delay_ms: int = 1000
    dispatcher_max_read_batch_size: int = 100
    # Shared: at most this many messages go to one consumer per round-robin turn (Pulsar's
    # dispatcherMaxRoundRobinBatchSize), so one read is spread over the consumers.
    dispatcher_max_round_robin_batch_size: int = 20
    max_unacked_messages_per_consumer: int = 50_000
    max_unacked_messages_per_subscription: int = 200_000
    # Pulsar 4.0 Key_Shared (PIP-379): how far the dispatcher reads ahead of a blocked
    # replay queue (keySharedLookAheadMsgInReplayThresholdPer{Consumer,Subscription}; 0 =
    # that bound off) and the delay before reading again once a draining hash is released.
    key_shared_look_ahead_msg_in_replay_threshold_per_consumer: int = 2000
    key_shared_look_ahead_msg_in_replay_threshold_per_subscription: int = 20_000
    key_shared_unblocking_interval_ms: int = 10
    managed_ledger_max_entries_per_ledger: int = 50_000
    managed_ledger_max_size_per_ledger_mb: int = 2048
    managed_ledger_max_ledger_rollover_time_minutes: int = 240
    managed_ledger_min_ledger_rollover_time_minutes: int = 10
    # One entry cache shared by every managed ledger of the broker (Pulsar's
    # managedLedgerCacheSizeMB), charged with each entry's bytes plus its object overhead.
    managed_ledger_cache_size_mb: int = 16
    max_open_segment_files: int = 0
    """Segment files kept open at once for all topics (an LRU, like BookKeeper's
    openFileLimit); 0 = a quarter of the process's RLIMIT_NOFILE, at most 1024."""
    # Cursor positions are saved at most this often (Pulsar's mark-delete rate limit: 1/s).
    managed_ledger_cursor_persist_interval_ms: int = 1000
    journal_sync_data: bool = True
    default_retention_time_in_minutes: int = 0
    default_retention_size_in_mb: int = 0
    ttl_duration_default_in_seconds: int = 0
    message_expiry_check_interval_minutes: int = 5
    broker_deduplication_enabled: bool = False
    # Compact a topic whose backlog not yet compacted exceeds this many bytes (0 = never);
    # checked every brokerServiceCompactionMonitorIntervalInSeconds.
    # A new schema version must pass this check (Pulsar's schemaCompatibilityStrategy, FULL)
    # unless the namespace sets its own.
    schema_compatibility_strategy: str = "FULL"
    # Refuse producers without a schema on a topic that has one (isSchemaValidationEnforced).
    is_schema_validation_enforced: bool = False
    broker_service_compaction_threshold_in_bytes: int = 0
    broker_service_compaction_monitor_interval_in_seconds: int = 60
    backlog_quota_default_limit_bytes: int = -1
    backlog_quota_default_retention_policy: str = "producer_request_hold"
    backlog_quota_check_interval_seconds: int = 60
    delayed_delivery_enabled: bool = True
    delayed_delivery_tick_ms: int = 1000
    is_delayed_delivery_deliver_at_time_strict: bool = False
    retention_check_interval_ms: int = 120_000
    stats_update_frequency_in_secs: int = 60
    """Seconds between two rate calculations (statsUpdateFrequencyInSecs): ``msgRateIn``,
    ``msgRateOut``, ``msgThroughputIn/Out``, ``msgRateRedeliver``, ``msgRateExpired`` are
    what was counted in the last interval, per second, as a real broker reports them."""
    stats_update_initial_delay_in_secs: int = 60
    """Seconds before the first rate calculation (statsUpdateInitialDelayInSecs)."""
    expose_topic_level_metrics_in_prometheus: bool = True
    """``/metrics`` has one sample per topic (exposeTopicLevelMetricsInPrometheus); false:
    per namespace."""
    expose_consumer_level_metrics_in_prometheus: bool = True
    """``/metrics`` has the ``pulsar_consumer_*`` samples of every consumer
    (exposeConsumerLevelMetricsInPrometheus). Pulsar's default is false, for brokers with
    many consumers; a notebook broker's consumers are few and are what it teaches."""
    authenticate_metrics_endpoint: bool = False
    """With authentication on, ``/metrics`` asks for a token too
    (authenticateMetricsEndpoint, false by default as in Pulsar)."""
    broker_unload_inactive_topics_enabled: bool = True
    """Unload persistent topics with no producers or consumers after
    ``broker_unload_inactive_topics_max_inactive_duration_seconds``: cursors saved, files
    closed, reloaded on next use. Pulsar's brokerDeleteInactiveTopics* rules delete them;
    this broker never deletes."""
    broker_unload_inactive_topics_frequency_seconds: int = 60
    broker_unload_inactive_topics_max_inactive_duration_seconds: int = 600
    enable_broker_side_subscription_pattern_evaluation: bool = True
    """Filter GET_TOPICS_OF_NAMESPACE by its ``topics_pattern`` on the broker, with RE2
    (enableBrokerSideSubscriptionPatternEvaluation); off, the client filters."""
    subscription_pattern_max_length: int = 50
    """Longer patterns are not evaluated by the broker: the client gets the whole list
    (subscriptionPatternMaxLength)."""

    # -- security (see README "Security"; names follow broker.conf where Pulsar has one) --
    authentication_enabled: bool = False
    """Require a signed token (``pulsarlab.AuthenticationToken``) in every CONNECT
    (authenticationEnabled). Mandatory when the broker binds a non-loopback address."""
    token_secret_key: str = ""
    """The HS256 key tokens are checked with (tokenSecretKey): ``file:///path``, a path, or
    ``data:;base64,...``. Empty with authentication on: the broker makes a random one for
    this run (``Broker.create_token`` then issues tokens)."""
    authorization_enabled: bool = False
    """Check each role's namespace permissions (produce/consume) and keep admin operations
    to superusers (authorizationEnabled). Needs authentication_enabled."""
    super_user_roles: str = ""
    """Comma-separated roles allowed everything, admin included (superUserRoles)."""
    curve_secret_key_file: str = ""
    """Path of the broker's CURVE secret key file (mode 0600, ``pulsarlab curve
    create-keypair``); set, every client connection is CurveZMQ-encrypted."""
    max_connections: int = 4096
    """Client connections served at once (brokerMaxConnections; 0 = no limit); one more gets
    a ConnectError."""
    max_producers_per_connection: int = 10_000
    """Producers open on one connection (0 = no limit); one more gets ProducerBusy."""
    max_consumers_per_connection: int = 10_000
    """Consumers open on one connection (0 = no limit); one more gets ConsumerBusy."""
    max_topics: int = 0
    """Topics (each partition counts) the broker holds in all (0 = no limit); creating one
    more is refused with NotAllowedError."""
    max_topics_per_namespace: int = 0
    """Topics (each partition counts) per namespace (maxTopicsPerNamespace; 0 = no limit)."""
    max_http_server_connections: int = 0
    """Admin REST API connections open at once (maxHttpServerConnections); more are closed
    at once. 0 = 2048 or a quarter of RLIMIT_NOFILE, whichever is smaller."""
    web_service_idle_timeout_ms: int = 30_000
    """An HTTP connection must send each request's headers, and then its body, within this
    time, or it is closed (Jetty's 30 s idle timeout in Pulsar's web service)."""
    web_service_port: int = 0
    """Port of the admin REST API, http://host:PORT/admin/v2 (webServicePort; 0 = a free
    port; ``pulsarlab broker`` defaults to 8080 like ``pulsar standalone``)."""

    # -- TLS (broker/tls.py) and more authentication (broker/security.py) -----------------
    broker_service_port_tls: int = -1
    """Port of the pulsar+ssl:// listener (brokerServicePortTls): -1 = none, 0 = a free
    port. Needs tls_certificate_file_path and tls_key_file_path."""
    web_service_port_tls: int = -1
    """Port of the https:// admin REST API (webServicePortTls): -1 = none, 0 = a free port."""
    tls_certificate_file_path: str = ""
    """The broker's certificate, PEM (tlsCertificateFilePath)."""
    tls_key_file_path: str = ""
    """The broker's private key, PEM (tlsKeyFilePath)."""
    tls_trust_certs_file_path: str = ""
    """CA certificates client certificates are checked against, PEM (tlsTrustCertsFilePath);
    set, clients may present a certificate (AuthenticationTLS)."""
    tls_require_trusted_client_cert_on_connect: bool = False
    """Refuse a TLS handshake without a client certificate the trusted CAs signed
    (tlsRequireTrustedClientCertOnConnect)."""
    tls_protocols: str = ""
    """TLS versions the listeners accept, e.g. ``TLSv1.3,TLSv1.2`` (tlsProtocols); empty:
    what Python's ssl allows (TLS 1.2 and 1.3)."""
    tls_allow_insecure_connection: bool = False
    """Accept clients' certificates without checking them (tlsAllowInsecureConnection);
    Python's TLS cannot keep an unchecked certificate, so TLS authentication is off then."""
    authentication_providers: str = ""
    """Comma-separated providers (authenticationProviders): ``token``, ``tls``, ``basic``
    or Pulsar's class names (``org.apache.pulsar.broker.authentication.
    AuthenticationProviderToken`` …). Empty with authentication on: ``token``."""
    anonymous_user_role: str = ""
    """The role of a client that names no configured provider (anonymousUserRole); empty:
    such a client is refused."""
    basic_auth_conf: str = ""
    """The users of ``basic`` authentication (basicAuthConf, or the JVM option
    ``-Dpulsar.auth.basic.conf``): a path, ``file:///path``, ``data:;base64,...`` or base64
    of ``user:hash`` lines, hashes from ``htpasswd -d`` (crypt) or ``htpasswd -m`` (apr1)."""
    token_public_key: str = ""
    """The public key tokens signed with a private key are checked with (tokenPublicKey):
    ``file:///path`` or ``data:;base64,...``, DER (``pulsar tokens create-key-pair``) or
    PEM; used when token_secret_key is empty."""
    token_public_alg: str = "RS256"
    """The signature algorithm of those tokens (tokenPublicAlg): RS256/384/512,
    PS256/384/512 or ES256/384/512."""
    authentication_refresh_check_seconds: int = 60
    """How often each connection's credentials are checked for expiry
    (authenticationRefreshCheckSeconds); an expired token gets an AUTH_CHALLENGE."""
    advertised_address: str = ""
    """The host name lookups answer in broker URLs (advertisedAddress); empty: the address
    the broker binds."""
    advertised_listeners: str = ""
    """Named listeners, ``name:pulsar://host:port,name:pulsar+ssl://host:port``
    (advertisedListeners); a client's ``listener_name`` picks one in LOOKUP."""
    internal_listener_name: str = ""
    """The listener lookups without a name answer (internalListenerName); empty: the first
    of advertised_listeners."""

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> BrokerSettings:
        """Build settings from keyword arguments; a wrong name or type is a clear error."""
        known = {f.name: f for f in fields(cls)}
        for name, value in kwargs.items():
            if name not in known:
                raise InvalidArgument(f"unknown broker setting {name!r}")
            expected = type(getattr(cls(), name))
            if expected is int and (not isinstance(value, int) or isinstance(value, bool)):
                raise InvalidArgument(f"broker setting {name} must be an int, not {value!r}")
            if expected is bool and not isinstance(value, bool):
                raise InvalidArgument(f"broker setting {name} must be a bool, not {value!r}")
            if expected is str and not isinstance(value, str):
                raise InvalidArgument(f"broker setting {name} must be a string, not {value!r}")
        settings = replace(cls(), **kwargs)
        PulsarVersion.parse(settings.pulsar_version)
        if settings.max_message_size <= 0:
            raise InvalidArgument("broker setting max_message_size must be > 0")
        if settings.dispatcher_max_read_batch_size <= 0:
            raise InvalidArgument("broker setting dispatcher_max_read_batch_size must be > 0")
        if settings.dispatcher_max_round_robin_batch_size <= 0:
            raise InvalidArgument(
                "broker setting dispatcher_max_round_robin_batch_size must be > 0"
            )
        if not 0 <= settings.broker_service_port <= 65535:
            raise InvalidArgument("broker setting broker_service_port must be 0..65535")
        for name in ("max_connections", "max_producers_per_connection",
                     "max_consumers_per_connection", "max_topics", "max_topics_per_namespace"):
            if getattr(settings, name) < 0:
                raise InvalidArgument(f"broker setting {name} must be >= 0 (0 = no limit)")
        for name in ("stats_update_frequency_in_secs", "stats_update_initial_delay_in_secs",
                     "web_service_idle_timeout_ms",
                     "broker_unload_inactive_topics_frequency_seconds"):
            if getattr(settings, name) <= 0:
                raise InvalidArgument(f"broker setting {name} must be > 0")
        for name in ("max_open_segment_files", "subscription_pattern_max_length",
                     "max_http_server_connections",
                     "broker_unload_inactive_topics_max_inactive_duration_seconds"):
            if getattr(settings, name) < 0:
                raise InvalidArgument(f"broker setting {name} must be >= 0")
        if not 0 <= settings.web_service_port <= 65535:
            raise InvalidArgument("broker setting web_service_port must be 0..65535 (0 = free)")
        for name in ("broker_service_port_tls", "web_service_port_tls"):
            if not -1 <= getattr(settings, name) <= 65535:
                raise InvalidArgument(f"broker setting {name} must be 0..65535 (-1 = off)")
        if settings.authentication_refresh_check_seconds <= 0:
            raise InvalidArgument(
                "broker setting authentication_refresh_check_seconds must be > 0"
            )
        if settings.authorization_enabled and not settings.authentication_enabled:
            raise InvalidArgument(
                "authorization_enabled needs authentication_enabled: roles come from "
                "authentication"
            )
        return settings

    def version(self) -> PulsarVersion:
        """:attr:`pulsar_version` parsed: ask it which rules apply."""
        return PulsarVersion.parse(self.pulsar_version)

    def ledger_config(self) -> LedgerConfig:
        return LedgerConfig(
            max_entries_per_ledger=self.managed_ledger_max_entries_per_ledger,
            max_size_per_ledger_bytes=self.managed_ledger_max_size_per_ledger_mb * 1024 * 1024,
            max_ledger_rollover_time_ms=self.managed_ledger_max_ledger_rollover_time_minutes
            * 60_000,
            min_ledger_rollover_time_ms=self.managed_ledger_min_ledger_rollover_time_minutes
            * 60_000,
            journal_sync_data=self.journal_sync_data,
            cache_size_bytes=self.managed_ledger_cache_size_mb * 1024 * 1024,
            max_open_files=self.max_open_segment_files,
        )


def parse_setting(text: str) -> tuple[str, bool | int | str]:
    """``name=value`` → ``(name, value)``, as ``pulsarlab broker --set`` and ``%pulsar``
    read a setting.

    ``true``/``false`` become booleans, integers become ``int``, anything else stays a
    string; dashes in the name become underscores (``broker.conf`` names are snake_case).
    A text without a name and ``=`` is an :class:`InvalidArgument`.
    """
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise InvalidArgument(f"settings are NAME=VALUE, not {text!r}")
    value: bool | int | str = raw
    if raw.lower() in ("true", "false"):
        value = raw.lower() == "true"
    else:
        with contextlib.suppress(ValueError):
            value = int(raw)
    return name.replace("-", "_"), value
