"""Broker side of the admin API: ``ADMIN`` commands mapped onto the core.

Operation names mirror Java's ``PulsarAdmin`` in snake_case (``topics.get_stats``,
``namespaces.set_retention`` …); results are JSON-able, with Pulsar's field names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .authorization import Authorizer
from .entry import decode_entry
from .errors import InvalidArgument
from .message_id import MessageId
from .service import BrokerService
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
        # Namespace permissions (granted here, checked by the server on every open).
        self.authorizer = Authorizer(service.settings, service.storage.metadata)
        self._ops: dict[str, Callable[..., Any]] = {
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
            "topics.unload": self.unload,
            "topics.get_stats": self.get_stats,
            "topics.get_internal_stats": self.get_internal_stats,
            "topics.get_partitioned_stats": self.get_partitioned_stats,
            "namespaces.get_policies": self.get_policies,
            "namespaces.set_retention": self._policy_setter("retention_policies"),
            "namespaces.set_message_ttl": self._policy_setter("message_ttl_in_seconds"),
            "namespaces.set_deduplication_status": self._policy_setter("deduplication_enabled"),
            "namespaces.set_backlog_quota": self._policy_setter("backlog_quota"),
            "namespaces.grant_permission": self.authorizer.grant_permission,
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

    def get_list(self, namespace: str, include_system: bool = False) -> list[str]:
        return self.service.list_topics(namespace, include_system)

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
                sub.reset_cursor(self.service.position_for_publish_time(sub.topic, timestamp))
            else:
                self.service.reset_cursor(part, subscription, _message_id(message_id))

    def skip_messages(self, topic: str, subscription: str, count: int) -> None:
        for part in self._partitions(topic):
            self.service.skip_messages(part, subscription, count)

    def peek_messages(self, topic: str, subscription: str, count: int = 1) -> list[dict]:
        out = []
        for part in self._partitions(topic):
            partition = TopicName.get(part).partition_index
            for position, data in self.service.peek_messages(part, subscription, count):
                metadata, payload = decode_entry(data)
                out.append(
                    {
                        "messageId": f"{position[0]}:{position[1]}:{partition}",
                        "topic": part,
                        "metadata": metadata.to_dict(),
                        "payload": payload,
                    }
                )
        return out[:count]

    def expire_messages(self, topic: str, subscription: str, expire_time_seconds: int) -> None:
        for part in self._partitions(topic):
            self.service.expire_messages(part, subscription, expire_time_seconds)

    def unload(self, topic: str) -> None:
        """Accepted for compatibility: one broker owns every topic, nothing moves."""
        for part in self._partitions(topic):
            self.service.get_topic(part, create=False)

    def get_stats(self, topic: str) -> dict[str, Any]:
        return self.service.topic_stats(topic)

    def get_internal_stats(self, topic: str) -> dict[str, Any]:
        return self.service.internal_stats(topic)

    def get_partitioned_stats(self, topic: str, per_partition: bool = True) -> dict[str, Any]:
        parts = self._partitions(topic)
        stats = {p: self.service.topic_stats(p) for p in parts}
        total: dict[str, Any] = {
            "msgInCounter": sum(s["msgInCounter"] for s in stats.values()),
            "msgOutCounter": sum(s["msgOutCounter"] for s in stats.values()),
            "storageSize": sum(s["storageSize"] for s in stats.values()),
            "metadata": {"partitions": len(parts) if len(parts) > 1 else 0},
            "subscriptions": {},
        }
        for s in stats.values():
            for name, sub in s["subscriptions"].items():
                agg = total["subscriptions"].setdefault(
                    name, {"msgBacklog": 0, "unackedMessages": 0, "consumers": []}
                )
                agg["msgBacklog"] += sub["msgBacklog"]
                agg["unackedMessages"] += sub["unackedMessages"]
                agg["consumers"].extend(sub["consumers"])
                agg["type"] = sub["type"]
        if per_partition:
            total["partitions"] = stats
        return total

    # -- namespaces -----------------------------------------------------------------------

    def get_policies(self, namespace: str) -> dict[str, Any]:
        return self.service.storage.metadata.get_policies(namespace) or {}

    def _policy_setter(self, key: str) -> Callable[..., None]:
        def setter(namespace: str, value: Any) -> None:
            self.service.set_namespace_policy(namespace, key, value)

        return setter
