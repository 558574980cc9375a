"""Namespace policies resolved against the broker's defaults.

Admin sets policies per namespace (``namespaces.set_retention`` …); each key left unset
falls back to the broker setting of the same meaning, as in Pulsar.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import InvalidArgument
from .settings import BrokerSettings

SCHEMA_COMPATIBILITY_STRATEGIES = (
    "ALWAYS_COMPATIBLE", "ALWAYS_INCOMPATIBLE", "BACKWARD", "FORWARD", "FULL",
    "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE",
)
BACKLOG_QUOTA_POLICIES = (
    "producer_request_hold",
    "producer_exception",
    "consumer_backlog_eviction",
)

# The namespace policies admin may set (stored under these keys, Pulsar's field names).
POLICY_KEYS = (
    "retention_policies",
    "message_ttl_in_seconds",
    "deduplication_enabled",
    "backlog_quota",
    "compaction_threshold",
    "encryption_required",
    "schema_compatibility_strategy",
    "schema_validation_enforced",
)


@dataclass(frozen=True, slots=True)
class Policies:
    """The policies in force for one topic."""

    retention_time_minutes: int = 0  # -1 = forever
    retention_size_mb: int = 0  # -1 = unlimited
    message_ttl_seconds: int = 0  # 0 = no TTL
    deduplication_enabled: bool = False
    backlog_quota_limit_bytes: int = -1  # -1 = no quota
    backlog_quota_policy: str = "producer_request_hold"
    compaction_threshold: int = 0  # bytes; 0 = no automatic compaction
    encryption_required: bool = False  # producers and messages must be encrypted
    schema_compatibility_strategy: str = "FULL"
    schema_validation_enforced: bool = False

    @classmethod
    def resolve(cls, settings: BrokerSettings, namespace: dict[str, Any] | None) -> Policies:
        ns = namespace or {}
        retention = ns.get("retention_policies") or {}
        quota = ns.get("backlog_quota") or {}
        return cls(
            retention_time_minutes=int(
                retention.get("retentionTimeInMinutes", settings.default_retention_time_in_minutes)
            ),
            retention_size_mb=int(
                retention.get("retentionSizeInMB", settings.default_retention_size_in_mb)
            ),
            message_ttl_seconds=int(
                ns.get("message_ttl_in_seconds", settings.ttl_duration_default_in_seconds)
            ),
            deduplication_enabled=bool(
                ns.get("deduplication_enabled", settings.broker_deduplication_enabled)
            ),
            backlog_quota_limit_bytes=int(
                quota.get("limitSize", settings.backlog_quota_default_limit_bytes)
            ),
            backlog_quota_policy=str(
                quota.get("policy", settings.backlog_quota_default_retention_policy)
            ),
            encryption_required=bool(ns.get("encryption_required", False)),
            schema_validation_enforced=bool(
                ns.get("schema_validation_enforced", settings.is_schema_validation_enforced)
            ),
            schema_compatibility_strategy=str(
                (ns.get("schema_compatibility_strategy", "UNDEFINED") != "UNDEFINED"
                and ns["schema_compatibility_strategy"])
                or settings.schema_compatibility_strategy
            ),
            compaction_threshold=int(
                ns.get(
                    "compaction_threshold", settings.broker_service_compaction_threshold_in_bytes
                )
            ),
        )


def validate_policy(key: str, value: Any) -> Any:
    """Check one namespace policy value; a bad one is a clear error."""
    if key == "retention_policies":
        if not isinstance(value, dict):
            raise InvalidArgument("retention must be a dict")
        for field in ("retentionTimeInMinutes", "retentionSizeInMB"):
            v = value.get(field)
            if not isinstance(v, int) or isinstance(v, bool) or v < -1:
                raise InvalidArgument(f"retention {field} must be an int >= -1, not {v!r}")
    elif key == "message_ttl_in_seconds":
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidArgument(f"message TTL must be an int >= 0 seconds, not {value!r}")
    elif key == "deduplication_enabled":
        if not isinstance(value, bool):
            raise InvalidArgument(f"deduplication status must be a bool, not {value!r}")
    elif key == "schema_compatibility_strategy":
        if value != "UNDEFINED" and value not in SCHEMA_COMPATIBILITY_STRATEGIES:
            raise InvalidArgument(
                f"schema compatibility strategy must be one of "
                f"{', '.join(SCHEMA_COMPATIBILITY_STRATEGIES)}, not {value!r}"
            )
    elif key in ("encryption_required", "schema_validation_enforced"):
        if not isinstance(value, bool):
            raise InvalidArgument(f"{key} must be a bool, not {value!r}")
    elif key == "compaction_threshold":
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidArgument(f"compaction threshold must be an int >= 0 bytes, not {value!r}")
    elif key == "backlog_quota":
        limit = value.get("limitSize") if isinstance(value, dict) else None
        policy = value.get("policy") if isinstance(value, dict) else None
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < -1:
            raise InvalidArgument(f"backlog quota limitSize must be an int >= -1, not {limit!r}")
        if policy not in BACKLOG_QUOTA_POLICIES:
            raise InvalidArgument(
                f"backlog quota policy must be one of {', '.join(BACKLOG_QUOTA_POLICIES)}"
            )
    else:
        raise InvalidArgument(f"unknown namespace policy {key!r}")
    return value
