"""Clusters, tenants and namespaces: which exist, as Pulsar's admin API sees them.

pulsarlab is one cluster, ``standalone``, and starts with the tenants and namespaces of
``pulsar standalone``: ``public`` (``public/default``, ``public/functions``) and ``pulsar``
(``pulsar/system``). Admin creates and deletes more; they are kept in the metadata store
(scope ``/admin/tenants``, which no namespace can be named) and survive a restart.

The broker creates topics in any namespace on first use, as it always has, so a namespace
also exists while topics live in it, and a tenant while one of its namespaces exists.
Setting a policy on a namespace through the admin client records the namespace too.
Everything here runs on the broker thread.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from .authorization import Authorizer
from .errors import (
    ClusterNotFound,
    InvalidArgument,
    NamespaceAlreadyExists,
    NamespaceNotEmpty,
    NamespaceNotFound,
    NotAllowed,
    TenantAlreadyExists,
    TenantNotEmpty,
    TenantNotFound,
)
from .service import BrokerService
from .topic_name import TopicName

__all__ = ["CLUSTER", "Tenants"]

CLUSTER = "standalone"
_SCOPE = "/admin/tenants"
_NAME = re.compile(r"^[-=:.\w]+$")
_DEFAULT = {
    "tenants": {
        "public": {"adminRoles": [], "allowedClusters": [CLUSTER]},
        "pulsar": {"adminRoles": [], "allowedClusters": [CLUSTER]},
    },
    "namespaces": ["public/default", "public/functions", "pulsar/system"],
}


def _check_name(kind: str, value: Any) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise InvalidArgument(
            f"{kind} name {value!r} is not valid: use letters, digits and - _ = : ."
        )
    return value


def _split(namespace: Any) -> tuple[str, str]:
    parts = namespace.split("/") if isinstance(namespace, str) else []
    if len(parts) != 2:
        raise InvalidArgument(f"namespace must be 'tenant/namespace', not {namespace!r}")
    return _check_name("tenant", parts[0]), _check_name("namespace", parts[1])


class Tenants:
    """The cluster, tenant and namespace operations of the admin API."""

    def __init__(self, service: BrokerService, authorizer: Authorizer) -> None:
        self.service = service
        self.authorizer = authorizer
        # Filled in by the broker once its listeners are bound (Pulsar's ClusterData).
        self.cluster_data: dict[str, Any] = {}

    # -- the stored document --------------------------------------------------------------

    def _load(self) -> dict[str, Any]:
        stored = self.service.storage.metadata.get_policies(_SCOPE)
        return stored if stored else copy.deepcopy(_DEFAULT)

    def _save(self, doc: dict[str, Any]) -> None:
        self.service.storage.metadata.put_policies(_SCOPE, doc)

    def _namespaces(self, doc: dict[str, Any]) -> set[str]:
        names = set(doc["namespaces"])
        for topic in self.service.list_topics(None, include_system=True):
            names.add(TopicName.get(topic).namespace)
        return names

    def _tenants(self, doc: dict[str, Any]) -> set[str]:
        return set(doc["tenants"]) | {ns.split("/")[0] for ns in self._namespaces(doc)}

    # -- clusters -------------------------------------------------------------------------

    def get_clusters(self) -> list[str]:
        return [CLUSTER]

    def get_cluster(self, cluster: str) -> dict[str, Any]:
        if cluster != CLUSTER:
            raise ClusterNotFound(f"cluster {cluster!r} does not exist (this is {CLUSTER!r})")
        return dict(self.cluster_data)

    # -- tenants --------------------------------------------------------------------------

    def get_tenants(self) -> list[str]:
        return sorted(self._tenants(self._load()))

    def get_tenant_info(self, tenant: str) -> dict[str, Any]:
        doc = self._load()
        if tenant not in self._tenants(doc):
            raise TenantNotFound(f"tenant {tenant!r} does not exist")
        return doc["tenants"].get(tenant) or {"adminRoles": [], "allowedClusters": [CLUSTER]}

    def create_tenant(self, tenant: str, config: dict[str, Any] | None = None) -> None:
        _check_name("tenant", tenant)
        doc = self._load()
        if tenant in self._tenants(doc):
            raise TenantAlreadyExists(f"tenant {tenant!r} already exists")
        doc["tenants"][tenant] = self._tenant_info(config)
        self._save(doc)

    def update_tenant(self, tenant: str, config: dict[str, Any] | None = None) -> None:
        doc = self._load()
        if tenant not in self._tenants(doc):
            raise TenantNotFound(f"tenant {tenant!r} does not exist")
        doc["tenants"][tenant] = self._tenant_info(config)
        self._save(doc)

    def delete_tenant(self, tenant: str, force: bool = False) -> None:
        doc = self._load()
        if tenant not in self._tenants(doc):
            raise TenantNotFound(f"tenant {tenant!r} does not exist")
        namespaces = sorted(ns for ns in self._namespaces(doc) if ns.split("/")[0] == tenant)
        if namespaces and not force:
            raise TenantNotEmpty(
                f"tenant {tenant!r} still has namespaces: {', '.join(namespaces)}"
            )
        for namespace in namespaces:
            self.delete_namespace(namespace, force=True)
        doc = self._load()
        doc["tenants"].pop(tenant, None)
        self._save(doc)

    @staticmethod
    def _tenant_info(config: Any) -> dict[str, Any]:
        config = {} if config is None else config
        if not isinstance(config, dict):
            raise InvalidArgument("tenant info must be a JSON object")
        roles = config.get("adminRoles") or []
        clusters = config.get("allowedClusters") or [CLUSTER]
        for label, value in (("adminRoles", roles), ("allowedClusters", clusters)):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InvalidArgument(f"tenant info {label} must be a list of strings")
        unknown = sorted(set(clusters) - {CLUSTER})
        if unknown:
            raise NotAllowed(f"clusters {unknown} do not exist (this is {CLUSTER!r})")
        return {"adminRoles": sorted(set(roles)), "allowedClusters": sorted(set(clusters))}

    # -- namespaces -----------------------------------------------------------------------

    def get_namespaces(self, tenant: str) -> list[str]:
        doc = self._load()
        if tenant not in self._tenants(doc):
            raise TenantNotFound(f"tenant {tenant!r} does not exist")
        return sorted(ns for ns in self._namespaces(doc) if ns.split("/")[0] == tenant)

    def require_namespace(self, namespace: str) -> None:
        """:class:`NamespaceNotFound` unless ``namespace`` exists."""
        _split(namespace)
        if namespace not in self._namespaces(self._load()):
            raise NamespaceNotFound(f"namespace {namespace} does not exist")

    def create_namespace(self, namespace: str, policies: dict[str, Any] | None = None) -> None:
        """Create ``namespace`` in an existing tenant, optionally with initial policies."""
        tenant, _ = _split(namespace)
        if policies is not None and not isinstance(policies, dict):
            raise InvalidArgument("namespace policies must be a dict")
        doc = self._load()
        if tenant not in self._tenants(doc):
            raise TenantNotFound(f"tenant {tenant!r} does not exist")
        if namespace in self._namespaces(doc):
            raise NamespaceAlreadyExists(f"namespace {namespace} already exists")
        for key, value in (policies or {}).items():
            self.service.set_namespace_policy(namespace, key, value)
        doc["namespaces"].append(namespace)
        self._save(doc)

    def record_namespace(self, namespace: str) -> None:
        """Remember a namespace admin set policies on (and its tenant)."""
        tenant, _ = _split(namespace)
        doc = self._load()
        if namespace in doc["namespaces"]:
            return
        doc["namespaces"].append(namespace)
        doc["tenants"].setdefault(tenant, {"adminRoles": [], "allowedClusters": [CLUSTER]})
        self._save(doc)

    def delete_namespace(self, namespace: str, force: bool = False) -> None:
        """Delete ``namespace``, its policies and permissions; with ``force`` its topics too."""
        self.require_namespace(namespace)
        topics = self.service.list_topics(namespace, include_system=True)
        if topics and not force:
            raise NamespaceNotEmpty(
                f"namespace {namespace} still has {len(topics)} topic(s), e.g. {topics[0]}"
            )
        for topic in topics:
            self.service.delete_topic(topic, force=True)
        self.service.forget_namespace_policies(namespace)
        self.authorizer.forget_namespace(namespace)
        doc = self._load()
        if namespace in doc["namespaces"]:
            doc["namespaces"].remove(namespace)
        self._save(doc)
