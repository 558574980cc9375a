"""``/admin/v2/namespaces/...``: namespaces, their policies and permissions.

Policies are shown with the field names of Pulsar's ``Policies`` JSON (``retention_policies``,
``message_ttl_in_seconds``, ``deduplicationEnabled``, ``backlog_quota_map``,
``auth_policies``); a policy that is not set reads as 204 No Content, as in Pulsar.
"""

from __future__ import annotations

from typing import Any

from .base import AdminResource, ApiError, guarded

_QUOTA_TYPE = "destination_storage"


def pulsar_policies(stored: dict[str, Any]) -> dict[str, Any]:
    """A namespace's stored policies as Pulsar's ``Policies`` JSON."""
    auth = stored.get("auth_policies") or {}
    out: dict[str, Any] = {
        "auth_policies": {
            "namespace_auth": auth.get("namespace_auth", {}),
            "destination_auth": auth.get("destination_auth", {}),
            "subscription_auth_roles": auth.get("subscription_auth_roles", {}),
        },
        "replication_clusters": ["standalone"],
        "bundles": {"boundaries": ["0x00000000", "0xffffffff"], "numBundles": 1},
        "backlog_quota_map": _quota_map(stored),
        "deleted": False,
        # set at creation from allowAutoUpdateSchemaEnabled (default true) in Pulsar
        "is_allow_auto_update_schema": stored.get("is_allow_auto_update_schema", True),
    }
    if "retention_policies" in stored:
        out["retention_policies"] = stored["retention_policies"]
    if "message_ttl_in_seconds" in stored:
        out["message_ttl_in_seconds"] = stored["message_ttl_in_seconds"]
    if "deduplication_enabled" in stored:
        out["deduplicationEnabled"] = stored["deduplication_enabled"]
    out["encryption_required"] = stored.get("encryption_required", False)
    if "compaction_threshold" in stored:
        out["compaction_threshold"] = stored["compaction_threshold"]
    return out


def _quota_map(stored: dict[str, Any]) -> dict[str, Any]:
    quota = stored.get("backlog_quota")
    if not quota:
        return {}
    return {_QUOTA_TYPE: {"limit": quota["limitSize"], "limitSize": quota["limitSize"],
                          "limitTime": -1, "policy": quota["policy"]}}


def _initial_policies(body: Any) -> dict[str, Any]:
    """The policies a namespace is created with (the ``Policies`` body, optional)."""
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise ApiError(400, "the namespace body must be a Policies JSON object")
    out = {}
    if body.get("retention_policies") is not None:
        out["retention_policies"] = _retention(body["retention_policies"])
    if body.get("message_ttl_in_seconds") is not None:
        out["message_ttl_in_seconds"] = body["message_ttl_in_seconds"]
    if body.get("deduplicationEnabled") is not None:
        out["deduplication_enabled"] = body["deduplicationEnabled"]
    return out


def _retention(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError(400, "retention must be a JSON object with retentionTimeInMinutes "
                            "and retentionSizeInMB")
    return {"retentionTimeInMinutes": body.get("retentionTimeInMinutes"),
            "retentionSizeInMB": body.get("retentionSizeInMB")}


# policy resource -> (stored key, admin operation suffix, body reader)
_POLICIES: dict[str, tuple[str, str, Any]] = {
    "retention": ("retention_policies", "retention", _retention),
    "messageTTL": ("message_ttl_in_seconds", "message_ttl", lambda v: v),
    "deduplication": ("deduplication_enabled", "deduplication_status", lambda v: v),
    "compactionThreshold": ("compaction_threshold", "compaction_threshold", lambda v: v),
    "encryptionRequired": ("encryption_required", "encryption_required", lambda v: v),
    "schemaValidationEnforced": (
        "schema_validation_enforced", "schema_validation_enforced", lambda v: v
    ),
    "schemaCompatibilityStrategy": (
        "schema_compatibility_strategy", "schema_compatibility_strategy", lambda v: v
    ),
}
# What GET answers for a policy that was never set (Pulsar's primitive default), else 204.
_UNSET = {"encryption_required": False, "schema_compatibility_strategy": "UNDEFINED",
          "schema_validation_enforced": False}
POLICY_RESOURCES = tuple(_POLICIES)


class NamespaceBase(AdminResource):
    async def stored_policies(self, namespace: str) -> dict[str, Any]:
        """The namespace's stored policies; 404 when the namespace does not exist."""
        tenant = namespace.split("/")[0]
        names, stored = await self.run_all(
            ("namespaces.get_namespaces", {"tenant": tenant}),
            ("namespaces.get_policies", {"namespace": namespace}),
        )
        if namespace not in names:
            raise ApiError(404, f"namespace {namespace} does not exist")
        return stored

    async def set_policy(self, namespace: str, op: str, value: Any) -> None:
        await self.stored_policies(namespace)
        self.reply(await self.run(op, namespace=namespace, value=value))


class NamespacesHandler(AdminResource):
    @guarded
    async def get(self, tenant: str) -> None:
        self.reply(await self.run("namespaces.get_namespaces", tenant=tenant))


class NamespaceHandler(NamespaceBase):
    """GET the policies, PUT creates (optional Policies body), DELETE (``?force=true``)."""

    @guarded
    async def get(self, tenant: str, namespace: str) -> None:
        self.reply(pulsar_policies(await self.stored_policies(f"{tenant}/{namespace}")))

    @guarded
    async def put(self, tenant: str, namespace: str) -> None:
        self.reply(await self.run("namespaces.create_namespace",
                                  namespace=f"{tenant}/{namespace}",
                                  policies=_initial_policies(self.body())))

    @guarded
    async def delete(self, tenant: str, namespace: str) -> None:
        self.reply(await self.run("namespaces.delete_namespace",
                                  namespace=f"{tenant}/{namespace}", force=self.flag("force")))


class NamespaceTopicsHandler(AdminResource):
    @guarded
    async def get(self, tenant: str, namespace: str) -> None:
        self.reply(await self.run("namespaces.get_topics", namespace=f"{tenant}/{namespace}",
                                  include_system=self.flag("includeSystemTopic")))


class PolicyHandler(NamespaceBase):
    """``retention``, ``messageTTL``, ``deduplication``, ``compactionThreshold``,
    ``encryptionRequired``: GET, POST sets, DELETE removes."""

    def _policy(self, resource: str) -> tuple[str, str, Any]:
        return _POLICIES[resource]

    @guarded
    async def get(self, tenant: str, namespace: str, resource: str) -> None:
        key, _, _ = self._policy(resource)
        value = (await self.stored_policies(f"{tenant}/{namespace}")).get(key, _UNSET.get(key))
        if value is None:
            # An unset policy: Pulsar's async resource resumes with null -> 200, empty body
            # (tests/conformance/test_more.py::test_namespace_policy_round_trip); the flags
            # in _UNSET answer the broker's default instead, as Pulsar's do.
            self.clear_header("Content-Type")
            self.finish()
            return
        self.reply(value)

    @guarded
    async def post(self, tenant: str, namespace: str, resource: str) -> None:
        _, op, read = self._policy(resource)
        body = self.body()
        if body is None:
            raise ApiError(400, f"POST {resource} needs a JSON body")
        await self.set_policy(f"{tenant}/{namespace}", f"namespaces.set_{op}", read(body))

    async def put(self, tenant: str, namespace: str, resource: str) -> None:
        """PUT sets too (Pulsar sets ``schemaCompatibilityStrategy`` with PUT)."""
        await self.post(tenant, namespace, resource)

    @guarded
    async def delete(self, tenant: str, namespace: str, resource: str) -> None:
        _, op, _ = self._policy(resource)
        self.reply(await self.run(f"namespaces.remove_{op}", namespace=f"{tenant}/{namespace}"))


class BacklogQuotaMapHandler(NamespaceBase):
    @guarded
    async def get(self, tenant: str, namespace: str) -> None:
        self.reply(_quota_map(await self.stored_policies(f"{tenant}/{namespace}")))


class BacklogQuotaHandler(NamespaceBase):
    """POST sets the ``destination_storage`` quota (``{"limitSize", "policy"}``), DELETE
    removes it; pulsarlab has no ``message_age`` quota."""

    def _check_type(self) -> None:
        kind = self.get_query_argument("backlogQuotaType", _QUOTA_TYPE)
        if kind != _QUOTA_TYPE:
            raise ApiError(412, f"backlogQuotaType {kind!r} is not supported: pulsarlab "
                                f"enforces {_QUOTA_TYPE} only")

    @guarded
    async def post(self, tenant: str, namespace: str) -> None:
        self._check_type()
        body = self.body()
        if not isinstance(body, dict):
            raise ApiError(400, "the backlog quota must be a JSON object with limitSize "
                                "and policy")
        limit = body.get("limitSize", body.get("limit"))
        value = {"limitSize": limit, "policy": body.get("policy")}
        await self.set_policy(f"{tenant}/{namespace}", "namespaces.set_backlog_quota", value)

    @guarded
    async def delete(self, tenant: str, namespace: str) -> None:
        self._check_type()
        self.reply(await self.run("namespaces.remove_backlog_quota",
                                  namespace=f"{tenant}/{namespace}"))


class PermissionsHandler(NamespaceBase):
    @guarded
    async def get(self, tenant: str, namespace: str) -> None:
        await self.stored_policies(f"{tenant}/{namespace}")
        self.reply(await self.run("namespaces.get_permissions",
                                  namespace=f"{tenant}/{namespace}"))


class RolePermissionsHandler(NamespaceBase):
    """POST grants the actions in the body (``["produce", "consume"]``), DELETE revokes."""

    @guarded
    async def post(self, tenant: str, namespace: str, role: str) -> None:
        ns = f"{tenant}/{namespace}"
        actions = self.body()
        if not isinstance(actions, list):
            raise ApiError(400, "the body must be a JSON list of actions, e.g. "
                                '["produce", "consume"]')
        await self.stored_policies(ns)
        self.reply(await self.run("namespaces.grant_permission", namespace=ns, role=role,
                                  actions=actions))

    @guarded
    async def delete(self, tenant: str, namespace: str, role: str) -> None:
        ns = f"{tenant}/{namespace}"
        await self.stored_policies(ns)
        self.reply(await self.run("namespaces.revoke_permission", namespace=ns, role=role))
