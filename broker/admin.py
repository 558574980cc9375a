"""``Admin``: the admin client, mirroring Java's ``PulsarAdmin`` in snake_case.

``Admin(web_url).topics.get_stats("t")`` returns the same dict ``pulsar-admin topics stats``
prints (Pulsar's field names). Every method is one (or, where Pulsar's admin client does the
same, a few) requests to the broker's ``/admin/v2`` REST API — Pulsar's paths, so the same
calls work against any broker serving them. The object is thread-safe and keeps one HTTP
connection alive; :meth:`Admin.close` (or ``with``) releases it.
"""

from __future__ import annotations

from typing import Any

from . import local_brokers
from .admin_http import AdminConnection, segment
from .admin_messages import message_from_headers
from .errors import InvalidArgument, NamespaceNotFound, PulsarLabError
from .topic_name import TopicName

# Pulsar's MessageId.latest / earliest as a JSON body (create subscription, reset cursor).
_LATEST = {"ledgerId": 2**63 - 1, "entryId": 2**63 - 1}
_EARLIEST = {"ledgerId": -1, "entryId": -1}


def web_url_of(target: Any) -> str:
    """The admin REST API's URL for what ``Admin`` was given: a web URL as is, a ``Broker``
    (or anything with ``web_url``), or the ``zmq://`` service URL of a broker started on this
    machine (:mod:`.local_brokers`)."""
    web_url = getattr(target, "web_url", None)
    if isinstance(web_url, str):
        return web_url
    if not isinstance(target, str):
        raise TypeError(f"Admin needs the broker's web service URL (http://host:port) or a "
                        f"Broker, not {type(target).__name__}")
    scheme = target.partition("://")[0]
    if scheme in ("http", "https"):
        return target
    if scheme in ("zmq", "tcp", "pulsarlab"):
        found = local_brokers.web_url_for(target)
        if found is not None:
            return found
        raise ValueError(
            f"Admin talks to the broker's admin REST API: pass its web service URL "
            f"(http://host:port, the web_url `pulsarlab broker` reports, Broker.web_url); no "
            f"broker started on this machine serves the ZeroMQ service URL {target!r}"
        )
    raise ValueError(f"Admin needs the broker's web service URL (http://host:port or "
                     f"https://host:port), not {target!r}")


def topic_path(topic: str) -> str:
    """``persistent://t/ns/x`` (or a short name) → ``persistent/t/ns/x``, quoted."""
    name = TopicName.get(topic)
    return "/".join((name.domain, segment(name.tenant), segment(name.namespace_portion),
                     segment(name.local_name)))


def namespace_path(namespace: str) -> str:
    tenant, sep, name = namespace.partition("/")
    if not sep or not tenant or not name or "/" in name:
        raise InvalidArgument(f"namespace must be 'tenant/namespace', not {namespace!r}")
    return f"{segment(tenant)}/{segment(name)}"


def message_id_body(message_id: Any) -> dict[str, int]:
    """A ``MessageId``, ``(ledger, entry[, partition])``, ``"earliest"`` or ``"latest"`` as
    Pulsar's ``MessageIdImpl`` JSON."""
    if message_id is None or message_id == "latest":
        return dict(_LATEST)
    if message_id == "earliest":
        return dict(_EARLIEST)
    if hasattr(message_id, "ledger_id"):
        return {"ledgerId": message_id.ledger_id(), "entryId": message_id.entry_id(),
                "partitionIndex": message_id.partition()}
    if isinstance(message_id, list | tuple) and len(message_id) >= 2:
        body = {"ledgerId": int(message_id[0]), "entryId": int(message_id[1])}
        if len(message_id) > 2:
            body["partitionIndex"] = int(message_id[2])
        return body
    raise ValueError(f"message_id must be a MessageId, 'earliest' or 'latest', not {message_id!r}")


class Admin:
    """Admin operations on a broker, over its admin REST API."""

    def __init__(
        self,
        web_url: Any,
        timeout_seconds: float = 30.0,
        *,
        authentication: Any = None,
        token: str | None = None,
        tls_trust_certs_file_path: str | None = None,
        tls_allow_insecure_connection: bool = False,
        tls_validate_hostname: bool = True,
        curve_server_key: str | bytes | None = None,
    ) -> None:
        """``web_url``: ``http://host:port`` or ``https://host:port`` (a ``Broker``, or the
        ``zmq://`` URL of a broker started on this machine, is taken too).

        ``authentication``: ``pulsarlab.AuthenticationToken`` (sent as ``Authorization:
        Bearer``), ``AuthenticationBasic`` (``Authorization: Basic``; ``http://user:pw@…``
        works too) or ``AuthenticationTLS`` (a client certificate on https://); ``token``:
        a token string. ``tls_trust_certs_file_path``: the CA file of an https:// broker.
        ``curve_server_key`` is accepted for the security options shared with ``Client``
        and unused: CURVE encrypts ZeroMQ, not HTTP."""
        del curve_server_key
        self.web_url = web_url_of(web_url)
        self._http = AdminConnection(
            self.web_url, timeout_seconds, authentication=authentication, token=token,
            tls_trust_certs_file_path=tls_trust_certs_file_path,
            tls_allow_insecure_connection=tls_allow_insecure_connection,
            tls_validate_hostname=tls_validate_hostname,
        )
        self.topics = Topics(self)
        self.namespaces = Namespaces(self)
        self.tenants = Tenants(self)
        self.clusters = Clusters(self)
        self.schemas = Schemas(self)

    def request(self, method: str, path: str, body: Any = None, **options: Any) -> Any:
        """One REST call to ``/admin/v2/<path>`` (``query=``, ``raw=``)."""
        return self._http.request(method, path, body, **options)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Admin({self.web_url!r})"


class Topics:
    """``admin.topics``: topics, subscriptions, cursors and stats."""

    def __init__(self, admin: Admin) -> None:
        self._admin = admin

    def _get(self, path: str, **query: Any) -> Any:
        return self._admin.request("GET", path, query=query or None)

    def _sub(self, topic: str, subscription: str) -> str:
        return f"{topic_path(topic)}/subscription/{segment(subscription)}"

    def _partitions(self, topic: str) -> list[str]:
        """The topic's partitions, or the topic itself when it is not partitioned."""
        name = TopicName.get(topic)
        if name.is_partition:
            return [str(name)]
        count = self.get_partitioned_topic_metadata(topic)["partitions"]
        return [str(name.partition(i)) for i in range(count)] if count else [str(name)]

    # -- topics ---------------------------------------------------------------------------

    def create_partitioned_topic(self, topic: str, partitions: int) -> None:
        self._admin.request("PUT", f"{topic_path(topic)}/partitions", partitions)

    def create_non_partitioned_topic(self, topic: str) -> None:
        self._admin.request("PUT", topic_path(topic))

    def update_partitioned_topic(self, topic: str, partitions: int) -> None:
        """Grow a partitioned topic (partition counts never shrink)."""
        self._admin.request("POST", f"{topic_path(topic)}/partitions", partitions)

    def get_partitioned_topic_metadata(self, topic: str) -> dict[str, int]:
        return self._get(f"{topic_path(topic)}/partitions")

    def get_partitioned_topic_list(self, namespace: str = "public/default") -> list[str]:
        """The partitioned topics of ``namespace`` (their parent names), both domains."""
        ns = namespace_path(namespace)
        try:
            return sorted(name for domain in ("persistent", "non-persistent")
                          for name in self._get(f"{domain}/{ns}/partitioned"))
        except NamespaceNotFound:
            return []

    def get_list(self, namespace: str = "public/default", include_system: bool = False) -> list:
        """The topics of ``namespace``, a partitioned topic by its parent name (``[]`` for a
        namespace that does not exist)."""
        ns = namespace_path(namespace)
        try:
            names = self._get(f"namespaces/{ns}/topics",
                              includeSystemTopic="true" if include_system else "false")
        except NamespaceNotFound:
            return []
        parents = set(self.get_partitioned_topic_list(namespace))
        out = set()
        for name in names:
            parent = str(TopicName.get(name).partitioned_topic_name)
            out.add(parent if parent in parents else name)
        return sorted(out | {p for p in parents if include_system
                             or not TopicName.get(p).is_system_topic})

    def get_last_message_id(self, topic: str) -> dict[str, int]:
        """``{"ledgerId", "entryId", "partitionIndex", "batchIndex"}`` of the last message."""
        return self._get(f"{topic_path(topic)}/lastMessageId")

    def delete(self, topic: str, force: bool = False) -> None:
        """Delete a topic (a partitioned topic with its partitions)."""
        query = {"force": "true"} if force else None
        partitioned = not TopicName.get(topic).is_partition and (
            self.get_partitioned_topic_metadata(topic)["partitions"] > 0
        )
        suffix = "/partitions" if partitioned else ""
        self._admin.request("DELETE", topic_path(topic) + suffix, query=query)

    # -- subscriptions and cursors --------------------------------------------------------

    def get_subscriptions(self, topic: str) -> list[str]:
        return self._get(f"{topic_path(topic)}/subscriptions")

    def create_subscription(self, topic: str, subscription: str, message_id: Any = None) -> None:
        self._admin.request("PUT", self._sub(topic, subscription), message_id_body(message_id))

    def delete_subscription(self, topic: str, subscription: str, force: bool = False) -> None:
        self._admin.request("DELETE", self._sub(topic, subscription),
                            query={"force": "true"} if force else None)

    def reset_cursor(
        self, topic: str, subscription: str, message_id: Any = None, timestamp: int | None = None
    ) -> None:
        """To a message id (``"earliest"``, ``"latest"``, a ``MessageId``, ``(ledger,
        entry)``) or to the first message published at or after ``timestamp`` (ms)."""
        base = f"{self._sub(topic, subscription)}/resetcursor"
        if timestamp is not None:
            self._admin.request("POST", f"{base}/{int(timestamp)}")
        else:
            self._admin.request("POST", base, message_id_body(message_id))

    def skip_messages(self, topic: str, subscription: str, count: int) -> None:
        self._admin.request("POST", f"{self._sub(topic, subscription)}/skip/{int(count)}")

    def skip_all_messages(self, topic: str, subscription: str) -> None:
        """Acknowledge the subscription's whole backlog (``pulsar-admin topics skip-all``)."""
        self._admin.request("POST", f"{self._sub(topic, subscription)}/skip_all")

    def expire_messages(self, topic: str, subscription: str, expire_time_seconds: int) -> None:
        self._admin.request("POST", f"{self._sub(topic, subscription)}/expireMessages/"
                                    f"{int(expire_time_seconds)}")

    # -- messages -------------------------------------------------------------------------

    def examine_message(self, topic: str, initial_position: str = "latest",
                        message_position: int = 1) -> dict:
        """The n-th stored message from the earliest or back from the latest."""
        body, headers = self._admin.request(
            "GET", f"{topic_path(topic)}/examinemessage", raw=True,
            query={"initialPosition": initial_position, "messagePosition": message_position},
        )
        return message_from_headers(str(TopicName.get(topic)), body, headers)

    def peek_messages(self, topic: str, subscription: str, count: int = 1) -> list[dict]:
        """The subscription's next ``count`` messages (fewer when its backlog is shorter),
        one request per message as Pulsar's admin client peeks; partition by partition."""
        out: list[dict] = []
        for part in self._partitions(topic):
            base = f"{self._sub(part, subscription)}/position"
            for n in range(1, count - len(out) + 1):
                try:
                    body, headers = self._admin.request("GET", f"{base}/{n}", raw=True)
                except PulsarLabError as exc:  # a 404 past the backlog's end
                    if getattr(exc, "status", None) != 404 or (
                        "message not found" not in str(exc).lower()
                    ):
                        raise
                    break
                out.append(message_from_headers(part, body, headers))
            if len(out) >= count:
                break
        return out

    # -- lifecycle ------------------------------------------------------------------------

    def unload(self, topic: str) -> None:
        self._admin.request("PUT", f"{topic_path(topic)}/unload")

    def terminate_topic(self, topic: str) -> dict[str, int]:
        """Terminate a non-partitioned topic: no more messages, consumers drain what is left.

        Returns the last message id, ``{"ledgerId", "entryId", "partitionIndex"}``.
        """
        return self._admin.request("POST", f"{topic_path(topic)}/terminate")

    def terminate_partitioned_topic(self, topic: str) -> dict[str, dict[str, int]]:
        """Terminate every partition; partition index (a string) -> its last message id."""
        return self._admin.request("POST", f"{topic_path(topic)}/terminate/partitions")

    def compact(self, topic: str) -> None:
        """Compact ``topic`` now (``pulsar-admin topics compact``)."""
        self._admin.request("PUT", f"{topic_path(topic)}/compaction")

    def compaction_status(self, topic: str) -> dict[str, str]:
        """``{"status": "NOT_RUN|RUNNING|SUCCESS|ERROR", "lastError": ...}``."""
        return self._get(f"{topic_path(topic)}/compaction")

    # -- stats ----------------------------------------------------------------------------

    def get_stats(self, topic: str) -> dict[str, Any]:
        return self._get(f"{topic_path(topic)}/stats")

    def get_internal_stats(self, topic: str) -> dict[str, Any]:
        return self._get(f"{topic_path(topic)}/internalStats")

    def get_partitioned_stats(self, topic: str, per_partition: bool = True) -> dict[str, Any]:
        return self._get(f"{topic_path(topic)}/partitioned-stats",
                         perPartition="true" if per_partition else "false")


class Namespaces:
    """``admin.namespaces``: namespaces, their policies and permissions."""

    def __init__(self, admin: Admin) -> None:
        self._admin = admin

    def _call(self, method: str, namespace: str, resource: str = "", body: Any = None,
              **query: Any) -> Any:
        path = f"namespaces/{namespace_path(namespace)}" + (f"/{resource}" if resource else "")
        return self._admin.request(method, path, body, query=query or None)

    def get_namespaces(self, tenant: str) -> list[str]:
        return self._admin.request("GET", f"namespaces/{segment(tenant)}")

    def create_namespace(self, namespace: str) -> None:
        self._call("PUT", namespace)

    def delete_namespace(self, namespace: str, force: bool = False) -> None:
        """Delete an empty namespace (``force``: its topics too) with its policies."""
        self._call("DELETE", namespace, **({"force": "true"} if force else {}))

    def get_topics(self, namespace: str) -> list[str]:
        """Every topic of ``namespace``, partitions by their own names."""
        return self._call("GET", namespace, "topics")

    def get_policies(self, namespace: str) -> dict[str, Any]:
        """The namespace's ``Policies`` (Pulsar's JSON: ``retention_policies``,
        ``message_ttl_in_seconds``, ``backlog_quota_map``, ``auth_policies`` …)."""
        return self._call("GET", namespace)

    def set_retention(self, namespace: str, retention_time_in_minutes: int,
                      retention_size_in_mb: int) -> None:
        self._call("POST", namespace, "retention",
                   {"retentionTimeInMinutes": retention_time_in_minutes,
                    "retentionSizeInMB": retention_size_in_mb})

    def remove_retention(self, namespace: str) -> None:
        self._call("DELETE", namespace, "retention")

    def set_message_ttl(self, namespace: str, ttl_seconds: int) -> None:
        self._call("POST", namespace, "messageTTL", ttl_seconds)

    def remove_message_ttl(self, namespace: str) -> None:
        self._call("DELETE", namespace, "messageTTL")

    def set_deduplication_status(self, namespace: str, enabled: bool) -> None:
        self._call("POST", namespace, "deduplication", enabled)

    def remove_deduplication_status(self, namespace: str) -> None:
        self._call("DELETE", namespace, "deduplication")

    def set_compaction_threshold(self, namespace: str, threshold_bytes: int) -> None:
        self._call("POST", namespace, "compactionThreshold", threshold_bytes)

    def remove_compaction_threshold(self, namespace: str) -> None:
        self._call("DELETE", namespace, "compactionThreshold")

    def set_encryption_required(self, namespace: str, required: bool) -> None:
        """Refuse unencrypted producers and messages in ``namespace``."""
        self._call("POST", namespace, "encryptionRequired", required)

    def set_backlog_quota(self, namespace: str, limit_size: int,
                          policy: str = "producer_request_hold") -> None:
        self._call("POST", namespace, "backlogQuota", {"limitSize": limit_size, "policy": policy})

    def remove_backlog_quota(self, namespace: str) -> None:
        self._call("DELETE", namespace, "backlogQuota")

    def grant_permission(self, namespace: str, role: str, actions: Any) -> None:
        """Let ``role`` do ``actions`` (``"produce"``, ``"consume"``) on ``namespace``."""
        body = sorted(actions) if isinstance(actions, set | frozenset) else actions
        self._call("POST", namespace, f"permissions/{segment(role)}", body)

    def revoke_permission(self, namespace: str, role: str) -> None:
        """Take every permission on ``namespace`` away from ``role``."""
        self._call("DELETE", namespace, f"permissions/{segment(role)}")

    def get_permissions(self, namespace: str) -> dict[str, list[str]]:
        """``{role: [actions]}`` on ``namespace``."""
        return self._call("GET", namespace, "permissions")


class Tenants:
    """``admin.tenants``: tenants and their ``TenantInfo`` (adminRoles, allowedClusters)."""

    def __init__(self, admin: Admin) -> None:
        self._admin = admin

    def get_tenants(self) -> list[str]:
        return self._admin.request("GET", "tenants")

    def get_tenant_info(self, tenant: str) -> dict[str, Any]:
        return self._admin.request("GET", f"tenants/{segment(tenant)}")

    def create_tenant(self, tenant: str, config: dict[str, Any] | None = None) -> None:
        self._admin.request("PUT", f"tenants/{segment(tenant)}", config)

    def update_tenant(self, tenant: str, config: dict[str, Any]) -> None:
        self._admin.request("POST", f"tenants/{segment(tenant)}", config)

    def delete_tenant(self, tenant: str, force: bool = False) -> None:
        self._admin.request("DELETE", f"tenants/{segment(tenant)}",
                            query={"force": "true"} if force else None)


class Schemas:
    """``pulsar-admin schemas``: a topic's schema (``GetSchemaResponse``)."""

    def __init__(self, admin: Admin) -> None:
        self._admin = admin

    def get_schema(self, topic: str, version: int | None = None) -> dict[str, Any]:
        """The latest schema of ``topic``, or its version ``version``."""
        path = topic_path(topic).split("/", 1)[1]  # by tenant/namespace/topic, any domain
        suffix = "" if version is None else f"/{int(version)}"
        return self._admin.request("GET", f"schemas/{path}/schema{suffix}")


class Clusters:
    """``admin.clusters``: the one cluster, ``standalone``."""

    def __init__(self, admin: Admin) -> None:
        self._admin = admin

    def get_clusters(self) -> list[str]:
        return self._admin.request("GET", "clusters")

    def get_cluster(self, cluster: str) -> dict[str, Any]:
        return self._admin.request("GET", f"clusters/{segment(cluster)}")
