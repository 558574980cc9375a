"""``Admin``: the admin client, mirroring Java's ``PulsarAdmin`` in snake_case.

``Admin(service_url).topics.get_stats("t")`` returns the same dict ``pulsar-admin topics
stats`` prints (Pulsar's field names). Each call is one ``ADMIN`` request over its own
DEALER socket; the object is thread-safe.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

import zmq

from . import wire
from .curve import apply_client, load_public_key
from .errors import PulsarLabError

_ERRORS: dict[str, type[PulsarLabError]] = {}


def _error_for(code: str, message: str) -> PulsarLabError:
    if not _ERRORS:
        from . import errors

        for obj in vars(errors).values():
            if isinstance(obj, type) and issubclass(obj, PulsarLabError):
                _ERRORS.setdefault(obj.code, obj)
        # Auth refusals are also the client's exceptions, so ``except
        # pulsarlab.AuthenticationError`` catches them from Client and Admin alike.
        from .client import exceptions as client_errors

        for name in ("AuthenticationError", "AuthorizationError"):
            broker_cls = getattr(errors, name)
            _ERRORS[broker_cls.code] = type(
                name, (broker_cls, getattr(client_errors, name)), {"__module__": __name__}
            )
    cls = _ERRORS.get(code, PulsarLabError)
    return cls(message)


def tcp_address(service_url: str) -> str:
    """``zmq://host:port`` (or ``tcp://``) → the ZeroMQ endpoint."""
    for prefix in ("zmq://", "tcp://", "pulsarlab://"):
        if service_url.startswith(prefix):
            return "tcp://" + service_url[len(prefix):].rstrip("/")
    raise ValueError(f"service URL must look like zmq://host:port, not {service_url!r}")


class Admin:
    """Admin operations on a pulsarlab broker."""

    def __init__(
        self,
        service_url: str,
        timeout_seconds: float = 30.0,
        *,
        authentication: Any = None,
        curve_server_key: str | bytes | None = None,
    ) -> None:
        """``authentication``: a ``pulsarlab.AuthenticationToken`` (brokers with
        authentication on); ``curve_server_key``: the broker's CURVE public key (Z85 or the
        path of its ``.pub`` file) when it encrypts with CURVE."""
        self._endpoint = tcp_address(service_url)
        self._authentication = authentication
        self._curve_server_key = (
            None if curve_server_key is None else load_public_key(curve_server_key)
        )
        self._timeout_ms = int(timeout_seconds * 1000)
        self._ctx = zmq.Context.instance()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._socket: zmq.Socket | None = None
        self.topics = Topics(self)
        self.namespaces = Namespaces(self)
        self.tenants = Tenants(self)
        self.clusters = Clusters(self)
        self.schemas = Schemas(self)

    def _connect(self) -> zmq.Socket:
        sock = self._ctx.socket(zmq.DEALER)
        sock.linger = 0
        if self._curve_server_key is not None:
            apply_client(sock, self._curve_server_key)
        sock.connect(self._endpoint)
        self._socket = sock
        fields: dict[str, Any] = {"client_version": "pulsarlab-admin"}
        auth = self._authentication
        token = auth.token() if auth is not None else None
        if token is not None:
            fields["auth_token"] = token
        method = auth.method_and_data() if auth is not None else None
        if method is not None:
            fields["auth_method_name"], fields["auth_data"] = method
        try:
            self._request(sock, "CONNECT", **fields)
        except PulsarLabError:  # refused (bad token, too many connections): start afresh
            sock.close(linger=0)
            self._socket = None
            raise
        return sock

    def _request(self, sock: zmq.Socket, name: str, **fields: Any) -> wire.Command:
        request_id = next(self._ids)
        sock.send_multipart(wire.encode(name, request_id, **fields))
        while True:
            if not sock.poll(self._timeout_ms):
                sock.close(linger=0)
                self._socket = None
                raise TimeoutError(f"the broker at {self._endpoint} did not answer {name}")
            reply = wire.decode(sock.recv_multipart(), wire.BROKER_COMMANDS)
            if reply.name == "PING":
                sock.send_multipart(wire.encode("PONG"))
                continue
            if reply.request_id != request_id:
                continue
            if reply.name == "ERROR":
                raise _error_for(reply["code"], reply["message"])
            return reply

    def call(self, op: str, **args: Any) -> Any:
        """Run one admin operation by name (``"topics.get_stats"`` …)."""
        with self._lock:
            sock = self._socket or self._connect()
            return self._request(sock, "ADMIN", op=op, args=args).get("result")

    def close(self) -> None:
        with self._lock:
            if self._socket is not None:
                self._socket.close(linger=0)
                self._socket = None

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Topics:
    """``admin.topics``: topics, subscriptions, cursors and stats."""

    def __init__(self, admin: Admin) -> None:
        self._admin = admin

    def create_partitioned_topic(self, topic: str, partitions: int) -> None:
        self._admin.call("topics.create_partitioned_topic", topic=topic, partitions=partitions)

    def create_non_partitioned_topic(self, topic: str) -> None:
        self._admin.call("topics.create_non_partitioned_topic", topic=topic)

    def update_partitioned_topic(self, topic: str, partitions: int) -> None:
        """Grow a partitioned topic (partition counts never shrink)."""
        self._admin.call("topics.update_partitioned_topic", topic=topic, partitions=partitions)

    def get_partitioned_topic_metadata(self, topic: str) -> dict[str, int]:
        return self._admin.call("topics.get_partitioned_topic_metadata", topic=topic)

    def get_partitioned_topic_list(self, namespace: str = "public/default") -> list[str]:
        return self._admin.call("topics.get_partitioned_topic_list", namespace=namespace)

    def get_last_message_id(self, topic: str) -> dict[str, int]:
        """``{"ledgerId", "entryId", "partitionIndex", "batchIndex"}`` of the last message."""
        return self._admin.call("topics.get_last_message_id", topic=topic)

    def get_list(self, namespace: str = "public/default", include_system: bool = False) -> list:
        return self._admin.call(
            "topics.get_list", namespace=namespace, include_system=include_system
        )

    def delete(self, topic: str, force: bool = False) -> None:
        self._admin.call("topics.delete", topic=topic, force=force)

    def get_subscriptions(self, topic: str) -> list[str]:
        return self._admin.call("topics.get_subscriptions", topic=topic)

    def create_subscription(self, topic: str, subscription: str, message_id: Any = None) -> None:
        self._admin.call(
            "topics.create_subscription", topic=topic, subscription=subscription,
            message_id=_id_arg(message_id),
        )

    def delete_subscription(self, topic: str, subscription: str, force: bool = False) -> None:
        self._admin.call(
            "topics.delete_subscription", topic=topic, subscription=subscription, force=force
        )

    def reset_cursor(
        self, topic: str, subscription: str, message_id: Any = None, timestamp: int | None = None
    ) -> None:
        self._admin.call(
            "topics.reset_cursor", topic=topic, subscription=subscription,
            message_id=_id_arg(message_id), timestamp=timestamp,
        )

    def skip_messages(self, topic: str, subscription: str, count: int) -> None:
        self._admin.call("topics.skip_messages", topic=topic, subscription=subscription,
                         count=count)

    def skip_all_messages(self, topic: str, subscription: str) -> None:
        """Acknowledge the subscription's whole backlog (``pulsar-admin topics skip-all``)."""
        self._admin.call("topics.skip_all_messages", topic=topic, subscription=subscription)

    def examine_message(self, topic: str, initial_position: str = "latest",
                        message_position: int = 1) -> dict:
        """The n-th stored message from the earliest or back from the latest."""
        return self._admin.call("topics.examine_message", topic=topic,
                                initial_position=initial_position,
                                message_position=message_position)

    def peek_messages(self, topic: str, subscription: str, count: int = 1) -> list[dict]:
        return self._admin.call(
            "topics.peek_messages", topic=topic, subscription=subscription, count=count
        )

    def expire_messages(self, topic: str, subscription: str, expire_time_seconds: int) -> None:
        self._admin.call(
            "topics.expire_messages", topic=topic, subscription=subscription,
            expire_time_seconds=expire_time_seconds,
        )

    def unload(self, topic: str) -> None:
        self._admin.call("topics.unload", topic=topic)

    def terminate_topic(self, topic: str) -> dict[str, int]:
        """Terminate a non-partitioned topic: no more messages, consumers drain what is left.

        Returns the last message id, ``{"ledgerId", "entryId", "partitionIndex"}``.
        """
        return self._admin.call("topics.terminate_topic", topic=topic)

    def compact(self, topic: str) -> None:
        """Compact ``topic`` now (``pulsar-admin topics compact``)."""
        self._admin.call("topics.compact", topic=topic)

    def compaction_status(self, topic: str) -> dict[str, str]:
        """``{"status": "NOT_RUN|RUNNING|SUCCESS|ERROR", "lastError": ...}``."""
        return self._admin.call("topics.compaction_status", topic=topic)

    def terminate_partitioned_topic(self, topic: str) -> dict[str, dict[str, int]]:
        """Terminate every partition; partition index (a string) -> its last message id."""
        return self._admin.call("topics.terminate_partitioned_topic", topic=topic)

    def get_stats(self, topic: str) -> dict[str, Any]:
        return self._admin.call("topics.get_stats", topic=topic)

    def get_internal_stats(self, topic: str) -> dict[str, Any]:
        return self._admin.call("topics.get_internal_stats", topic=topic)

    def get_partitioned_stats(self, topic: str, per_partition: bool = True) -> dict[str, Any]:
        return self._admin.call(
            "topics.get_partitioned_stats", topic=topic, per_partition=per_partition
        )


class Namespaces:
    """``admin.namespaces``: namespace policies (their effects land with retention/TTL)."""

    def __init__(self, admin: Admin) -> None:
        self._admin = admin

    def get_namespaces(self, tenant: str) -> list[str]:
        return self._admin.call("namespaces.get_namespaces", tenant=tenant)

    def create_namespace(self, namespace: str) -> None:
        self._admin.call("namespaces.create_namespace", namespace=namespace)

    def delete_namespace(self, namespace: str, force: bool = False) -> None:
        """Delete an empty namespace (``force``: its topics too) with its policies."""
        self._admin.call("namespaces.delete_namespace", namespace=namespace, force=force)

    def get_topics(self, namespace: str) -> list[str]:
        """Every topic of ``namespace``, partitions by their own names."""
        return self._admin.call("namespaces.get_topics", namespace=namespace)

    def get_policies(self, namespace: str) -> dict[str, Any]:
        return self._admin.call("namespaces.get_policies", namespace=namespace)

    def remove_retention(self, namespace: str) -> None:
        self._admin.call("namespaces.remove_retention", namespace=namespace)

    def remove_message_ttl(self, namespace: str) -> None:
        self._admin.call("namespaces.remove_message_ttl", namespace=namespace)

    def remove_deduplication_status(self, namespace: str) -> None:
        self._admin.call("namespaces.remove_deduplication_status", namespace=namespace)

    def remove_backlog_quota(self, namespace: str) -> None:
        self._admin.call("namespaces.remove_backlog_quota", namespace=namespace)

    def set_retention(self, namespace: str, retention_time_in_minutes: int,
                      retention_size_in_mb: int) -> None:
        self._admin.call(
            "namespaces.set_retention", namespace=namespace,
            value={"retentionTimeInMinutes": retention_time_in_minutes,
                   "retentionSizeInMB": retention_size_in_mb},
        )

    def set_message_ttl(self, namespace: str, ttl_seconds: int) -> None:
        self._admin.call("namespaces.set_message_ttl", namespace=namespace, value=ttl_seconds)

    def set_deduplication_status(self, namespace: str, enabled: bool) -> None:
        self._admin.call("namespaces.set_deduplication_status", namespace=namespace,
                         value=enabled)

    def set_compaction_threshold(self, namespace: str, threshold_bytes: int) -> None:
        self._admin.call("namespaces.set_compaction_threshold", namespace=namespace,
                         value=threshold_bytes)

    def set_encryption_required(self, namespace: str, required: bool) -> None:
        """Refuse unencrypted producers and messages in ``namespace``."""
        self._admin.call("namespaces.set_encryption_required", namespace=namespace,
                         value=required)

    def remove_compaction_threshold(self, namespace: str) -> None:
        self._admin.call("namespaces.remove_compaction_threshold", namespace=namespace)

    def set_backlog_quota(self, namespace: str, limit_size: int,
                          policy: str = "producer_request_hold") -> None:
        self._admin.call(
            "namespaces.set_backlog_quota", namespace=namespace,
            value={"limitSize": limit_size, "policy": policy},
        )

    def grant_permission(self, namespace: str, role: str, actions: Any) -> None:
        """Let ``role`` do ``actions`` (``"produce"``, ``"consume"``) on ``namespace``."""
        self._admin.call("namespaces.grant_permission", namespace=namespace, role=role,
                         actions=sorted(actions) if isinstance(actions, set | frozenset)
                         else actions)

    def revoke_permission(self, namespace: str, role: str) -> None:
        """Take every permission on ``namespace`` away from ``role``."""
        self._admin.call("namespaces.revoke_permission", namespace=namespace, role=role)

    def get_permissions(self, namespace: str) -> dict[str, list[str]]:
        """``{role: [actions]}`` on ``namespace``."""
        return self._admin.call("namespaces.get_permissions", namespace=namespace)


class Tenants:
    """``admin.tenants``: tenants and their ``TenantInfo`` (adminRoles, allowedClusters)."""

    def __init__(self, admin: Admin) -> None:
        self._admin = admin

    def get_tenants(self) -> list[str]:
        return self._admin.call("tenants.get_tenants")

    def get_tenant_info(self, tenant: str) -> dict[str, Any]:
        return self._admin.call("tenants.get_tenant_info", tenant=tenant)

    def create_tenant(self, tenant: str, config: dict[str, Any] | None = None) -> None:
        self._admin.call("tenants.create_tenant", tenant=tenant, config=config)

    def update_tenant(self, tenant: str, config: dict[str, Any]) -> None:
        self._admin.call("tenants.update_tenant", tenant=tenant, config=config)

    def delete_tenant(self, tenant: str, force: bool = False) -> None:
        self._admin.call("tenants.delete_tenant", tenant=tenant, force=force)


class Schemas:
    """``pulsar-admin schemas``: a topic's schema (``GetSchemaResponse``)."""

    def __init__(self, admin: Admin) -> None:
        self._admin = admin

    def get_schema(self, topic: str, version: int | None = None) -> dict[str, Any]:
        """The latest schema of ``topic``, or its version ``version``."""
        return self._admin.call("schemas.get_schema", topic=topic, version=version)


class Clusters:
    """``admin.clusters``: the one cluster, ``standalone``."""

    def __init__(self, admin: Admin) -> None:
        self._admin = admin

    def get_clusters(self) -> list[str]:
        return self._admin.call("clusters.get_clusters")

    def get_cluster(self, cluster: str) -> dict[str, Any]:
        return self._admin.call("clusters.get_cluster", cluster=cluster)


def _id_arg(message_id: Any) -> Any:
    if message_id is None or isinstance(message_id, str | list):
        return message_id
    if hasattr(message_id, "ledger_id"):
        return [message_id.ledger_id(), message_id.entry_id(), message_id.partition()]
    raise ValueError(f"message_id must be a MessageId, 'earliest' or 'latest', not {message_id!r}")
