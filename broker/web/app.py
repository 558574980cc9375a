"""The routing table: Pulsar's ``/admin/v2`` paths onto the resource handlers."""

from __future__ import annotations

import logging
from typing import Any

from tornado.web import Application, RequestHandler

from . import brokers, disabled, lookup, metrics, tenants, topics
from . import namespaces as ns
from .base import NotFoundHandler

_SEG = r"([^/]+)"
_DOMAIN = r"(persistent|non-persistent)"
_NS = f"/admin/v2/namespaces/{_SEG}/{_SEG}"
_TOPIC = f"/admin/v2/{_DOMAIN}/{_SEG}/{_SEG}/{_SEG}"
_SUB = f"{_TOPIC}/subscription/{_SEG}"


def _alternatives(names: tuple[str, ...]) -> str:
    return "(" + "|".join(name.replace("-", r"\-") for name in names) + ")"


ROUTES: list[tuple[str, type]] = [
    (r"/admin/v2/clusters/?", tenants.ClustersHandler),
    (f"/admin/v2/clusters/{_SEG}", tenants.ClusterHandler),
    (r"/admin/v2/tenants/?", tenants.TenantsHandler),
    (f"/admin/v2/tenants/{_SEG}", tenants.TenantHandler),
    (f"/admin/v2/namespaces/{_SEG}", ns.NamespacesHandler),
    (_NS, ns.NamespaceHandler),
    (f"{_NS}/topics", ns.NamespaceTopicsHandler),
    (f"{_NS}/{_alternatives(ns.POLICY_RESOURCES)}", ns.PolicyHandler),
    (f"{_NS}/backlogQuotaMap", ns.BacklogQuotaMapHandler),
    (f"{_NS}/backlogQuota", ns.BacklogQuotaHandler),
    (f"{_NS}/permissions", ns.PermissionsHandler),
    (f"{_NS}/permissions/{_SEG}", ns.RolePermissionsHandler),
    (f"/admin/v2/{_DOMAIN}/{_SEG}/{_SEG}", topics.NamespaceTopicsListHandler),
    (f"/admin/v2/{_DOMAIN}/{_SEG}/{_SEG}/partitioned", topics.PartitionedTopicsListHandler),
    (_TOPIC, topics.TopicHandler),
    (f"{_TOPIC}/partitions", topics.PartitionsHandler),
    (f"{_TOPIC}/{_alternatives(topics.INFO_RESOURCES)}", topics.TopicInfoHandler),
    (f"{_TOPIC}/unload", topics.UnloadHandler),
    (f"{_TOPIC}/compaction", topics.CompactionHandler),
    (f"/admin/v2/schemas/{_SEG}/{_SEG}/{_SEG}/(schema|schemas|compatibility)(?:/{_SEG})?",
     topics.SchemaHandler),
    (f"{_TOPIC}/terminate(?:/(partitions))?", topics.TerminateHandler),
    (f"{_TOPIC}/examinemessage", topics.ExamineMessageHandler),
    (f"{_TOPIC}/permissions", topics.TopicPermissionsHandler),
    (f"{_TOPIC}/permissions/{_SEG}", topics.TopicRolePermissionsHandler),
    (f"{_TOPIC}/all_subscription/expireMessages/{_SEG}", topics.ExpireAllSubscriptionsHandler),
    (_SUB, topics.SubscriptionHandler),
    (f"{_SUB}/(skip_all)", topics.CursorActionHandler),
    (f"{_SUB}/(skip|expireMessages|resetcursor)/{_SEG}", topics.CursorActionHandler),
    (f"{_SUB}/(resetcursor)", topics.CursorActionHandler),
    (f"{_SUB}/position/{_SEG}", topics.PeekHandler),
    *metrics.ROUTES,
    *brokers.ROUTES,
    *lookup.ROUTES,
    *disabled.ROUTES,
]


log = logging.getLogger("pulsarlab.broker.web")


def _log_request(handler: RequestHandler) -> None:
    """Requests are logged at debug level: a 404 is an answer, not a broker warning."""
    request = handler.request
    log.debug("%d %s %s %.1fms", handler.get_status(), request.method, request.uri,
              1000 * request.request_time())


def make_app(broker: Any) -> Application:
    """The Tornado application serving ``broker``'s admin API."""
    kwargs = {"broker": broker}
    return Application(
        [(path, handler, kwargs) for path, handler in ROUTES],
        default_handler_class=NotFoundHandler,
        default_handler_args=kwargs,
        log_function=_log_request,
    )
