"""Pulsar's admin REST API (``/admin/v2``) over plain HTTP, shaped like ``pulsarlab.Admin``.

:class:`RestAdmin` talks to any Pulsar cluster's web service (``http://host:8080`` or
``https://…`` with a CA file) with ``urllib`` only, sending ``Authorization: Bearer <token>``
when given a token. Its ``topics`` and ``namespaces`` groups carry the method names of
:class:`pulsarlab.Admin` (``get_stats``, ``get_internal_stats``, ``peek_messages``,
``reset_cursor`` …), so code written against one works with the other.

Every call that changes the cluster first goes through ``before_write(description)``: the
cluster connection uses it to refuse writes unless they were allowed, and to say what is
about to happen before it happens. An HTTP error becomes one :class:`ClusterAdminError`
naming the status and Pulsar's ``reason``.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from pulsarlab.broker.admin_messages import message_from_headers

__all__ = ["ClusterAdminError", "RestAdmin"]

LATEST = {"ledgerId": 2**63 - 1, "entryId": 2**63 - 1}
EARLIEST = {"ledgerId": -1, "entryId": -1}


class ClusterAdminError(RuntimeError):
    """A REST call the cluster refused: the HTTP status and Pulsar's reason."""

    def __init__(self, status: int, reason: str, method: str, path: str) -> None:
        super().__init__(f"{method} {path}: {status} {reason}")
        self.status = status
        self.reason = reason


def topic_path(topic: str) -> str:
    """``persistent://t/ns/x`` → ``persistent/t/ns/x`` (the local name URL-quoted)."""
    domain, sep, rest = topic.partition("://")
    if not sep:
        domain, rest = "persistent", topic
    parts = rest.split("/")
    if len(parts) == 1:
        parts = ["public", "default", *parts]
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"not a topic name: {topic!r} (want tenant/namespace/topic)")
    return "/".join([domain, *(urllib.parse.quote(p, safe="") for p in parts)])


class RestAdmin:
    """The admin REST API of one cluster (``admin_url`` is its web service URL)."""

    def __init__(
        self,
        admin_url: str,
        *,
        token: str | None = None,
        tls_trust_certs_file_path: str | None = None,
        timeout_seconds: float = 10.0,
        before_write: Callable[[str], None] | None = None,
    ) -> None:
        scheme = urllib.parse.urlsplit(admin_url).scheme
        if scheme not in ("http", "https"):
            raise ValueError(f"the admin URL must be http:// or https://, not {admin_url!r}")
        self.admin_url = admin_url.rstrip("/")
        self.timeout_seconds = timeout_seconds
        self.before_write = before_write
        self._token = token
        self._ssl = (ssl.create_default_context(cafile=tls_trust_certs_file_path)
                     if scheme == "https" else None)
        self.topics = RestTopics(self)
        self.namespaces = RestNamespaces(self)
        self.schemas = RestSchemas(self)

    def request(self, method: str, path: str, body: Any = None, *,
                raw: bool = False) -> Any:
        """One call; the decoded JSON answer (``raw``: ``(bytes, headers)``)."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        req = urllib.request.Request(self.admin_url + "/admin/v2/" + path, data=data,
                                     method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_seconds,
                                        context=self._ssl) as resp:
                payload = resp.read()
                if raw:
                    return payload, resp.headers
        except urllib.error.HTTPError as exc:
            raise ClusterAdminError(exc.code, _reason(exc), method, path) from None
        if not payload:
            return None
        return json.loads(payload)

    def write(self, description: str, method: str, path: str, body: Any = None) -> Any:
        """A call that changes the cluster: announced (or refused) by ``before_write``."""
        if self.before_write is not None:
            self.before_write(f"{description} ({method} /admin/v2/{path})")
        return self.request(method, path, body)

    def close(self) -> None:
        """Nothing to release (each call is its own HTTP request)."""


def _reason(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read()
        reason = json.loads(body).get("reason")
    except (ValueError, AttributeError, OSError):
        reason = None
    return str(reason or exc.reason or "error")


class RestTopics:
    """``admin.topics``: what ``pulsar-admin topics`` does, by REST."""

    def __init__(self, admin: RestAdmin) -> None:
        self._admin = admin

    def _get(self, path: str) -> Any:
        return self._admin.request("GET", path)

    # -- reading ------------------------------------------------------------------------

    def get_list(self, namespace: str = "public/default") -> list[str]:
        return list(self._get(f"persistent/{namespace}"))

    def get_partitioned_topic_metadata(self, topic: str) -> dict[str, int]:
        return self._get(f"{topic_path(topic)}/partitions")

    def get_subscriptions(self, topic: str) -> list[str]:
        return list(self._get(f"{topic_path(topic)}/subscriptions"))

    def get_stats(self, topic: str) -> dict[str, Any]:
        return self._get(f"{topic_path(topic)}/stats")

    def get_internal_stats(self, topic: str) -> dict[str, Any]:
        return self._get(f"{topic_path(topic)}/internalStats")

    def get_partitioned_stats(self, topic: str, per_partition: bool = True) -> dict[str, Any]:
        flag = "true" if per_partition else "false"
        return self._get(f"{topic_path(topic)}/partitioned-stats?perPartition={flag}")

    def get_last_message_id(self, topic: str) -> dict[str, int]:
        return self._get(f"{topic_path(topic)}/lastMessageId")

    def peek_messages(self, topic: str, subscription: str, count: int = 1) -> list[dict]:
        """The subscription's next ``count`` messages (fewer if its backlog is shorter)."""
        sub = urllib.parse.quote(subscription, safe="")
        out: list[dict] = []
        for n in range(1, count + 1):
            try:
                body, headers = self._admin.request(
                    "GET", f"{topic_path(topic)}/subscription/{sub}/position/{n}", raw=True
                )
            except ClusterAdminError as exc:
                if exc.status == 404 and (out or "message not found" in exc.reason.lower()):
                    break  # the backlog is shorter than count
                raise
            out.append(message_from_headers(topic, body, headers))
        return out

    def examine_message(self, topic: str, initial_position: str = "latest",
                        message_position: int = 1) -> dict:
        """The n-th stored message from the earliest or back from the latest (read-only)."""
        query = urllib.parse.urlencode({"initialPosition": initial_position,
                                        "messagePosition": message_position})
        body, headers = self._admin.request(
            "GET", f"{topic_path(topic)}/examinemessage?{query}", raw=True
        )
        return message_from_headers(topic, body, headers)

    # -- changing -----------------------------------------------------------------------

    def _sub(self, topic: str, subscription: str) -> str:
        return f"{topic_path(topic)}/subscription/{urllib.parse.quote(subscription, safe='')}"

    def create_partitioned_topic(self, topic: str, partitions: int) -> None:
        self._admin.write(f"create {topic} with {partitions} partitions", "PUT",
                          f"{topic_path(topic)}/partitions", partitions)

    def create_non_partitioned_topic(self, topic: str) -> None:
        self._admin.write(f"create {topic}", "PUT", topic_path(topic))

    def delete(self, topic: str, force: bool = False) -> None:
        suffix = "?force=true" if force else ""
        self._admin.write(f"delete {topic}", "DELETE", topic_path(topic) + suffix)

    def skip_messages(self, topic: str, subscription: str, count: int) -> None:
        self._admin.write(f"skip {count} messages of {subscription} on {topic}", "POST",
                          f"{self._sub(topic, subscription)}/skip/{int(count)}")

    def skip_all_messages(self, topic: str, subscription: str) -> None:
        self._admin.write(f"skip the whole backlog of {subscription} on {topic}", "POST",
                          f"{self._sub(topic, subscription)}/skip_all")

    def expire_messages(self, topic: str, subscription: str, expire_time_seconds: int) -> None:
        self._admin.write(
            f"expire messages older than {expire_time_seconds} s for {subscription} on {topic}",
            "POST", f"{self._sub(topic, subscription)}/expireMessages/{int(expire_time_seconds)}",
        )

    def reset_cursor(self, topic: str, subscription: str, message_id: Any = None,
                     timestamp: int | None = None) -> None:
        """To ``"earliest"``, ``"latest"``, a ``(ledger, entry)`` id, or a publish time."""
        base = f"{self._sub(topic, subscription)}/resetcursor"
        if timestamp is not None:
            self._admin.write(f"reset {subscription} on {topic} to publish time {timestamp}",
                              "POST", f"{base}/{int(timestamp)}")
            return
        if message_id in (None, "latest"):
            body, where = LATEST, "latest"
        elif message_id == "earliest":
            body, where = EARLIEST, "earliest"
        else:
            ledger, entry = message_id
            body, where = {"ledgerId": int(ledger), "entryId": int(entry)}, f"{ledger}:{entry}"
        self._admin.write(f"reset {subscription} on {topic} to {where}", "POST", base, body)

    def delete_subscription(self, topic: str, subscription: str, force: bool = False) -> None:
        suffix = "?force=true" if force else ""
        self._admin.write(f"delete subscription {subscription} on {topic}", "DELETE",
                          self._sub(topic, subscription) + suffix)


class RestSchemas:
    """``/admin/v2/schemas``: a topic's schema, as :class:`pulsarlab.Admin`'s ``schemas``."""

    def __init__(self, admin: RestAdmin) -> None:
        self._admin = admin

    def get_schema(self, topic: str, version: int | None = None) -> dict[str, Any]:
        """The latest schema of ``topic`` (a persistent topic), or its version ``version``."""
        path = topic_path(topic).split("/", 1)[1]  # by tenant/namespace/topic, any domain
        suffix = "" if version is None else f"/{int(version)}"
        return self._admin.request("GET", f"schemas/{path}/schema{suffix}")


class RestNamespaces:
    """``admin.namespaces``: policies, by REST."""

    def __init__(self, admin: RestAdmin) -> None:
        self._admin = admin

    def get_topics(self, namespace: str) -> list[str]:
        return list(self._admin.request("GET", f"namespaces/{namespace}/topics"))

    def get_policies(self, namespace: str) -> dict[str, Any]:
        return self._admin.request("GET", f"namespaces/{namespace}")

    def set_message_ttl(self, namespace: str, ttl_seconds: int) -> None:
        self._admin.write(f"set the message TTL of {namespace} to {ttl_seconds} s", "POST",
                          f"namespaces/{namespace}/messageTTL", int(ttl_seconds))

    def set_retention(self, namespace: str, retention_time_in_minutes: int,
                      retention_size_in_mb: int) -> None:
        self._admin.write(
            f"set the retention of {namespace} to {retention_time_in_minutes} min, "
            f"{retention_size_in_mb} MB", "POST", f"namespaces/{namespace}/retention",
            {"retentionTimeInMinutes": int(retention_time_in_minutes),
             "retentionSizeInMB": int(retention_size_in_mb)},
        )

    def set_deduplication_status(self, namespace: str, enabled: bool) -> None:
        state = "on" if enabled else "off"
        self._admin.write(f"turn de-duplication {state} for {namespace}", "POST",
                          f"namespaces/{namespace}/deduplication", bool(enabled))

    def grant_permission(self, namespace: str, role: str, actions: Any) -> None:
        actions = sorted(actions)
        self._admin.write(f"grant {role} {', '.join(actions)} on {namespace}", "POST",
                          f"namespaces/{namespace}/permissions/"
                          f"{urllib.parse.quote(role, safe='')}", actions)

    def revoke_permission(self, namespace: str, role: str) -> None:
        self._admin.write(f"revoke the permissions of {role} on {namespace}", "DELETE",
                          f"namespaces/{namespace}/permissions/"
                          f"{urllib.parse.quote(role, safe='')}")
