"""Broker side of the admin API: ``ADMIN`` commands mapped onto the core.

Operation names mirror Java's ``PulsarAdmin`` in snake_case (``topics.get_stats``,
``namespaces.set_retention`` …); results are JSON-able, with Pulsar's field names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .entry import decode_entry
from .errors import InvalidArgument, NotAllowed
from .message_id import MessageId
from .schema_admin import SchemaAdmin
from .service import BrokerService
from .tenants import Tenants
from .topic_name import TopicName


def _message_id(value: Any) -> MessageId:
    if value in (None, "latest"):
        return MessageId.latest
    if value == "earliest":
        return MessageId.earliest
    if isinstance(value, list | tuple) and len(value) >= 2:
        ledger, entry = value[0], value[1]
        partition = value[2] if len(value) > 2 else -1
        return MessageId(partition, ledger, entry)
    raise InvalidArgument(
        f"message id must be 'earliest', 'latest' or [ledger, entry], not {value!r}"
    )


class AdminHandler:
    """Runs admin operations against a :class:`BrokerService` (on the broker thread)."""

    def __init__(self, service: BrokerService) -> None:
        self.service = service
        # The core's namespace permissions (granted here, checked by every face on every
        # open) and topic schemas.
        self.authorizer = service.authorizer
        self.tenants = Tenants(service, self.authorizer)
        tenants = self.tenants
        self.schemas = service.schemas
        schema_admin = SchemaAdmin(
            self.schemas, service.now_ms,
            lambda topic: service.namespace_policies(
                TopicName.get(topic).namespace
            ).schema_compatibility_strategy,
        )
        self._ops: dict[str, Callable[..., Any]] = {
            "clusters.get_clusters": tenants.get_clusters,
            "clusters.get_cluster": tenants.get_cluster,
            "tenants.get_tenants": tenants.get_tenants,
            "tenants.get_tenant_info": tenants.get_tenant_info,
            "tenants.create_tenant": tenants.create_tenant,
            "tenants.update_tenant": tenants.update_tenant,
            "tenants.delete_tenant": tenants.delete_tenant,
            "namespaces.get_namespaces": tenants.get_namespaces,
            "namespaces.create_namespace": tenants.create_namespace,
            "namespaces.delete_namespace": tenants.delete_namespace,
            "namespaces.get_topics": self.get_topics,
            "topics.update_partitioned_topic": self.update_partitioned_topic,
            "topics.get_partitioned_topic_list": self.get_partitioned_topic_list,
            "topics.get_last_message_id": self.get_last_message_id,
            "topics.skip_all_messages": self.skip_all_messages,
            "topics.examine_message": self.examine_message,
            "topics.create_partitioned_topic": self.create_partitioned_topic,
            "topics.create_non_partitioned_topic": self.create_non_partitioned_topic,
            "topics.get_partitioned_topic_metadata": self.get_partitioned_topic_metadata,
            "topics.get_list": self.get_list,
            "topics.delete": self.delete,
            "topics.get_subscriptions": self.get_subscriptions,
            "topics.create_subscription": self.create_subscription,
            "topics.delete_subscription": self.delete_subscription,
            "topics.reset_cursor": self.reset_cursor,
            "topics.skip_messages": self.skip_messages,
            "topics.peek_messages": self.peek_messages,
            "topics.expire_messages": self.expire_messages,
            "topics.expire_messages_all_subscriptions": self.expire_messages_all_subscriptions,
            "topics.grant_permission": self.authorizer.grant_topic_permission,
            "topics.revoke_permission": self.authorizer.revoke_topic_permission,
            "topics.get_permissions": self.authorizer.get_topic_permissions,
            "topics.unload": self.unload,
            "topics.terminate_topic": self.terminate_topic,
            "topics.terminate_partitioned_topic": self.terminate_partitioned_topic,
            "schemas.get_schema": schema_admin.get_schema,
            "schemas.get_all_versions": schema_admin.get_all_versions,
            "schemas.post_schema": schema_admin.post_schema,
            "schemas.delete_schema": schema_admin.delete_schema,
            "schemas.test_compatibility": schema_admin.test_compatibility,
            "topics.compact": self.compact,
            "topics.compaction_status": self.compaction_status,
            "topics.get_stats": self.get_stats,
            "topics.get_internal_stats": self.get_internal_stats,
            "topics.get_partitioned_stats": self.get_partitioned_stats,
            "namespaces.get_policies": self.get_policies,
            "namespaces.set_retention": self._policy_setter("retention_policies"),
            "namespaces.set_message_ttl": self._policy_setter("message_ttl_in_seconds"),
            "namespaces.set_deduplication_status": self._policy_setter("deduplication_enabled"),
            "namespaces.set_backlog_quota": self._policy_setter("backlog_quota"),
            "namespaces.set_compaction_threshold": self._policy_setter("compaction_threshold"),
            "namespaces.set_encryption_required": self._policy_setter("encryption_required"),
            "namespaces.set_schema_validation_enforced": self._policy_setter(
                "schema_validation_enforced"
            ),
            "namespaces.remove_schema_validation_enforced": self._policy_remover(
                "schema_validation_enforced"
            ),
            "namespaces.set_schema_compatibility_strategy": self._policy_setter(
                "schema_compatibility_strategy"
            ),
            "namespaces.remove_schema_compatibility_strategy": self._policy_remover(
                "schema_compatibility_strategy"
            ),
            "namespaces.remove_encryption_required": self._policy_remover(
                "encryption_required"
            ),
            "namespaces.remove_compaction_threshold": self._policy_remover(
                "compaction_threshold"
            ),
            "namespaces.remove_retention": self._policy_remover("retention_policies"),
            "namespaces.remove_message_ttl": self._policy_remover("message_ttl_in_seconds"),
            "namespaces.remove_deduplication_status": self._policy_remover(
                "deduplication_enabled"
            ),
            "namespaces.remove_backlog_quota": self._policy_remover("backlog_quota"),
            "namespaces.grant_permission": self.grant_permission,
            "namespaces.revoke_permission": self.authorizer.revoke_permission,
            "namespaces.get_permissions": self.authorizer.get_permissions,
        }

    def call(self, op: str, args: dict[str, Any]) -> Any:
        fn = self._ops.get(op)
        if fn is None:
            raise InvalidArgument(f"unknown admin operation {op!r}")
        try:
            return fn(**args)
        except TypeError as exc:
            raise InvalidArgument(f"{op}: {exc}") from None

    # -- topics ---------------------------------------------------------------------------

    def create_partitioned_topic(self, topic: str, partitions: int) -> None:
        self.service.create_partitioned_topic(topic, partitions)

    def create_non_partitioned_topic(self, topic: str) -> None:
        self.service.create_topic(topic)

    def get_partitioned_topic_metadata(self, topic: str) -> dict[str, int]:
        return {"partitions": self.service.get_partitioned_topic_metadata(topic)}

    def update_partitioned_topic(self, topic: str, partitions: int) -> None:
        self.service.update_partitioned_topic(topic, partitions)

    def get_list(self, namespace: str, include_system: bool = False) -> list[str]:
        return self.service.list_topics(namespace, include_system)

    def get_topics(self, namespace: str, include_system: bool = False) -> list[str]:
        """Every topic of an existing namespace, each partition by its own name (as
        Pulsar lists them), not the partitioned topics' parent names."""
        self.tenants.require_namespace(namespace)
        out = []
        for name in self.service.list_topics(namespace, include_system):
            partitions = self.service.get_partitioned_topic_metadata(name)
            if partitions:
                parsed = TopicName.get(name)
                out.extend(str(parsed.partition(i)) for i in range(partitions))
            else:
                out.append(name)
        return out

    def get_partitioned_topic_list(self, namespace: str) -> list[str]:
        """The partitioned topics of ``namespace`` (their parent names)."""
        return [
            name for name in self.service.list_topics(namespace)
            if self.service.get_partitioned_topic_metadata(name)
        ]

    def get_last_message_id(self, topic: str) -> dict[str, int]:
        """The id of the topic's last message, as Pulsar's ``lastMessageId`` JSON."""
        ledger_id, entry_id, batch_index = self.service.last_message_id_with_batch(topic)
        return {
            "ledgerId": ledger_id,
            "entryId": entry_id,
            "partitionIndex": TopicName.get(topic).partition_index,
            "batchIndex": batch_index,
            "batchSize": 0,  # Pulsar's MessageIdAdv.getBatchSize() default, as Jackson writes it
        }

    def delete(self, topic: str, force: bool = False) -> None:
        self.service.delete_topic(topic, force)

    def _partitions(self, topic: str) -> list[str]:
        name = TopicName.get(topic)
        n = self.service.get_partitioned_topic_metadata(str(name))
        return [str(name.partition(i)) for i in range(n)] if n else [str(name)]

    def get_subscriptions(self, topic: str) -> list[str]:
        names: set[str] = set()
        for part in self._partitions(topic):
            names.update(self.service.get_topic(part, create=False).subscriptions)
        return sorted(names)

    def create_subscription(self, topic: str, subscription: str, message_id: Any = None) -> None:
        for part in self._partitions(topic):
            self.service.create_subscription(part, subscription, _message_id(message_id))

    def delete_subscription(self, topic: str, subscription: str, force: bool = False) -> None:
        for part in self._partitions(topic):
            self.service.delete_subscription(part, subscription, force)

    def reset_cursor(
        self, topic: str, subscription: str, message_id: Any = None, timestamp: int | None = None
    ) -> None:
        for part in self._partitions(topic):
            if timestamp is not None:
                sub = self.service.subscription(part, subscription)
                sub.reset_cursor_by_publish_time(timestamp)
            else:
                self.service.reset_cursor(part, subscription, _message_id(message_id))

    def skip_messages(self, topic: str, subscription: str, count: int) -> None:
        for part in self._partitions(topic):
            self.service.skip_messages(part, subscription, count)

    def skip_all_messages(self, topic: str, subscription: str) -> None:
        for part in self._partitions(topic):
            self.service.skip_all_messages(part, subscription)

    def peek_messages(self, topic: str, subscription: str, count: int = 1) -> list[dict]:
        out = []
        for part in self._partitions(topic):
            for position, data in self.service.peek_messages(part, subscription, count):
                out.append(_message(part, position, data))
        return out[:count]

    def examine_message(
        self, topic: str, initial_position: str = "latest", message_position: int = 1
    ) -> dict[str, Any]:
        """The ``message_position``-th stored message (1 = first) counted from the earliest
        or back from the latest, as ``pulsar-admin topics examine-message``."""
        if initial_position not in ("earliest", "latest"):
            raise InvalidArgument(
                f"initial position must be 'earliest' or 'latest', not {initial_position!r}"
            )
        if not isinstance(message_position, int) or message_position < 1:
            raise InvalidArgument(f"message position must be >= 1, not {message_position!r}")
        t = self.service.get_topic(topic, create=False)
        ledger = t.ledger
        first, last = ledger.first_position(), ledger.last_confirmed
        if last < first:
            raise NotAllowed(f"topic {t.name} has no messages to examine")
        forward = initial_position == "earliest"
        position = first if forward else last
        for _ in range(message_position - 1):
            step = ledger.next_position(position) if forward else ledger.previous_position(position)
            if not first <= step <= last:
                break
            position = step
        data = ledger.read_entry(position)
        if data is None:
            raise NotAllowed(f"the entry at {position[0]}:{position[1]} of {t.name} is unreadable")
        return _message(t.name, position, data)

    def expire_messages(self, topic: str, subscription: str, expire_time_seconds: int) -> None:
        for part in self._partitions(topic):
            self.service.expire_messages(part, subscription, expire_time_seconds)

    def expire_messages_all_subscriptions(self, topic: str, expire_time_seconds: int) -> None:
        """Pulsar's ``all_subscription/expireMessages/{t}``: each subscription of each
        partition."""
        for part in self._partitions(topic):
            for sub in list(self.service.get_topic(part, create=False).subscriptions):
                self.service.expire_messages(part, sub, expire_time_seconds)

    def unload(self, topic: str) -> None:
        """Close the topic (each partition): its clients are disconnected and reconnect,
        unacked messages are delivered again, the topic reloads on next use."""
        for part in self._partitions(topic):
            self.service.get_topic(part, create=False)
            self.service.unload_topic(part, force=True)

    def terminate_topic(self, topic: str) -> dict[str, int]:
        """Terminate a non-partitioned topic (or one partition); Pulsar's ``MessageIdImpl``
        JSON of its last message (partition index -1, as Pulsar answers it)."""
        return _terminated_id(self.service.terminate_topic(topic))

    def terminate_partitioned_topic(self, topic: str) -> dict[str, dict[str, int]]:
        """Terminate every partition: partition index -> its last message id."""
        ends = self.service.terminate_partitioned_topic(topic)
        return {str(index): _terminated_id(position) for index, position in ends.items()}

    def compact(self, topic: str) -> None:
        """Compact the topic now (each partition of a partitioned topic)."""
        for part in self._partitions(topic):
            self.service.compact_topic(part)

    def compaction_status(self, topic: str) -> dict[str, str]:
        return self.service.compaction_status(topic)

    def get_stats(self, topic: str) -> dict[str, Any]:
        return self.service.topic_stats(topic)

    def get_internal_stats(self, topic: str) -> dict[str, Any]:
        return self.service.internal_stats(topic)

    def get_partitioned_stats(self, topic: str, per_partition: bool = True) -> dict[str, Any]:
        parts = self._partitions(topic)
        stats = {p: self.service.topic_stats(p) for p in parts}
        total: dict[str, Any] = {
            field: sum(s[field] for s in stats.values()) for field in _SUMMED_TOPIC_FIELDS
        }
        total["averageMsgSize"] = (
            total["msgThroughputIn"] / total["msgRateIn"] if total["msgRateIn"] else 0.0
        )
        total["metadata"] = {"partitions": len(parts) if len(parts) > 1 else 0}
        total["subscriptions"] = {}
        for s in stats.values():
            for name, sub in s["subscriptions"].items():
                agg = total["subscriptions"].setdefault(
                    name, {**dict.fromkeys(_SUMMED_SUBSCRIPTION_FIELDS, 0), "consumers": []}
                )
                for field in _SUMMED_SUBSCRIPTION_FIELDS:
                    agg[field] += sub[field]
                # Pulsar sums consumers by their numbers (ConsumerStatsImpl.add): the
                # connection's address, client version and metadata stay unset, left out
                agg["consumers"].extend(
                    {k: v for k, v in c.items() if k not in _PER_CONNECTION_FIELDS}
                    | {"avgMessagesPerEntry": 0}  # not added up by ConsumerStatsImpl.add
                    for c in sub["consumers"]
                )
                agg["type"] = sub["type"]
                _add_subscription_fields(agg, sub)
        total.update(_partitioned_topic_fields(list(stats.values())))
        total["metadata"]["deleted"] = False
        total["partitions"] = stats if per_partition else {}
        return total

    # -- namespaces -----------------------------------------------------------------------

    def get_policies(self, namespace: str) -> dict[str, Any]:
        return self.service.storage.metadata.get_policies(namespace) or {}

    def _policy_setter(self, key: str) -> Callable[..., None]:
        def setter(namespace: str, value: Any) -> None:
            self.service.set_namespace_policy(namespace, key, value)
            self.tenants.record_namespace(namespace)

        return setter

    def grant_permission(self, namespace: str, role: str, actions: Any) -> None:
        self.authorizer.grant_permission(namespace, role, actions)
        self.tenants.record_namespace(namespace)

    def _policy_remover(self, key: str) -> Callable[..., None]:
        def remover(namespace: str) -> None:
            self.tenants.require_namespace(namespace)
            self.service.remove_namespace_policy(namespace, key)

        return remover


# What PartitionedTopicStatsImpl adds up over the partitions (TopicStatsImpl.add).
_SUMMED_TOPIC_FIELDS = (
    "msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut", "bytesInCounter",
    "msgInCounter", "bytesOutCounter", "msgOutCounter", "storageSize", "backlogSize",
)
_PER_CONNECTION_FIELDS = frozenset({"address", "clientVersion", "metadata"})
_SUMMED_SUBSCRIPTION_FIELDS = (
    "msgRateOut", "msgThroughputOut", "bytesOutCounter", "msgOutCounter", "msgRateRedeliver",
    "messageAckRate", "msgBacklog", "backlogSize", "unackedMessages", "msgRateExpired",
    "totalMsgExpired",
)


# What PartitionedTopicStatsImpl.add / SubscriptionStatsImpl.add do with the fields the
# sums above leave out: counters add up, flags and settings come from a partition, the
# timestamps are not carried over (0).
_ADDED_TOPIC_FIELDS = (
    "systemTopicBytesInCounter", "bytesOutInternalCounter", "publishRateLimitedTimes",
    "offloadedStorageSize", "ongoingTxnCount", "abortedTxnCount", "committedTxnCount",
    "waitingPublishers", "nonContiguousDeletedMessagesRanges",
)
_ADDED_SUBSCRIPTION_FIELDS = (
    "msgBacklogNoDelayed", "msgDelayed", "msgInReplay", "nonContiguousDeletedMessagesRanges",
    "filterProcessedMsgCount", "filterAcceptedMsgCount", "filterRejectedMsgCount",
    "filterRescheduledMsgCount", "dispatchThrottledMsgEventsBySubscriptionLimit",
    "dispatchThrottledBytesEventsBySubscriptionLimit", "dispatchThrottledMsgEventsByTopicLimit",
    "dispatchThrottledBytesEventsByTopicLimit", "dispatchThrottledMsgEventsByBrokerLimit",
    "dispatchThrottledBytesEventsByBrokerLimit", "drainingHashesCount",
    "drainingHashesClearedTotal", "drainingHashesUnackedMessages",
)
_ZEROED_SUBSCRIPTION_FIELDS = (
    "earliestMsgPublishTimeInBacklog", "lastExpireTimestamp", "lastConsumedFlowTimestamp",
    "lastConsumedTimestamp", "lastAckedTimestamp", "lastMarkDeleteAdvancedTimestamp",
)


def _partitioned_topic_fields(parts: list[dict[str, Any]]) -> dict[str, Any]:
    first = parts[0]
    out: dict[str, Any] = {f: sum(p[f] for p in parts) for f in _ADDED_TOPIC_FIELDS}
    out.update({
        "msgChunkPublished": any(p["msgChunkPublished"] for p in parts),
        "backlogQuotaLimitSize": first["backlogQuotaLimitSize"],
        "backlogQuotaLimitTime": first["backlogQuotaLimitTime"],
        "oldestBacklogMessageAgeSeconds": 0,
        "earliestMsgPublishTimeInBacklogs": 0,
        "lastOffloadLedgerId": 0, "lastOffloadSuccessTimeStamp": 0,
        "lastOffloadFailureTimeStamp": 0,
        "replication": {},
    })
    # publishers are added up by their index in each partition's list (PublisherStatsImpl
    # .add: the rates only; names and connections stay unset)
    publishers: list[dict[str, Any]] = []
    for part in parts:
        for i, pub in enumerate(part["publishers"]):
            if i == len(publishers):
                publishers.append({"msgRateIn": 0.0, "msgThroughputIn": 0.0,
                                   "chunkedMessageRate": 0.0, "producerId": 0,
                                   "supportsPartialProducer": False})
            for f in ("msgRateIn", "msgThroughputIn", "chunkedMessageRate"):
                publishers[i][f] += pub[f]
    for pub in publishers:
        pub["averageMsgSize"] = (pub["msgThroughputIn"] / pub["msgRateIn"]
                                 if pub["msgRateIn"] else 0.0)
    out["publishers"] = publishers
    return out


def _add_subscription_fields(agg: dict[str, Any], sub: dict[str, Any]) -> None:
    for f in _ADDED_SUBSCRIPTION_FIELDS:
        if f in sub:
            agg[f] = agg.get(f, 0) + sub[f]
    for f in _ZEROED_SUBSCRIPTION_FIELDS:
        agg[f] = 0
    agg["chunkedMessageRate"] = agg.get("chunkedMessageRate", 0.0) + sub["chunkedMessageRate"]
    agg["blockedSubscriptionOnUnackedMsgs"] = (agg.get("blockedSubscriptionOnUnackedMsgs",
                                                       False)
                                               or sub["blockedSubscriptionOnUnackedMsgs"])
    for f in ("isDurable", "durable", "isReplicated", "replicated", "allowOutOfOrderDelivery"):
        agg[f] = sub[f]
    for f in ("consumersAfterMarkDeletePosition", "subscriptionProperties"):
        agg[f] = {**agg.get(f, {}), **sub[f]}


def _terminated_id(position: tuple[int, int]) -> dict[str, int]:
    # Pulsar answers a MessageIdImpl as Jackson writes it: MessageIdAdv's getBatchIndex()
    # and getBatchSize() defaults (-1, 0) included.
    return {"ledgerId": position[0], "entryId": position[1], "partitionIndex": -1,
            "batchIndex": -1, "batchSize": 0}


def _message(topic: str, position: tuple[int, int], data: bytes) -> dict[str, Any]:
    """One stored entry as admin shows it: id, metadata (Pulsar's field names), payload."""
    metadata, payload = decode_entry(data)
    partition = TopicName.get(topic).partition_index
    return {
        "messageId": f"{position[0]}:{position[1]}:{partition}",
        "topic": topic,
        "metadata": metadata.to_dict(),
        "payload": payload,
    }
