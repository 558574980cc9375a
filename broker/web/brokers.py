"""Pulsar's ``/admin/v2/brokers`` and ``/admin/v2/broker-stats/topics`` resources: what
``pulsar-admin brokers``, Pulsar Manager and health probes call.

pulsarlab is one broker of one cluster (``standalone``): it is the only active broker and
the leader; its id is its web service's ``host:port``, as a 3.x broker's id is. As on
Pulsar, these resources are for superusers when authorization is on. No setting can be
changed while the broker runs, so the dynamic-configuration list is empty and updating one
is refused as Pulsar refuses a non-dynamic one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from ..broker_stats import topics_stats
from ..errors import ClusterNotFound
from ..health import heartbeat_topic, run_health_check
from ..tenants import CLUSTER
from .base import AdminResource, ApiError, guarded


def broker_id(broker: Any) -> str:
    """``host:port`` of the web service: a 3.x broker's id (``lookupServiceAddress``)."""
    return urlsplit(broker.web_url).netloc


def _camel(name: str) -> str:
    """A setting's snake_case name as broker.conf spells it (``maxMessageSize``)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class BrokerResource(AdminResource):
    """A broker-wide resource: superusers only (``validateSuperUserAccess``)."""

    async def on_broker(self, op: str, fn: Callable[[Any], Any] = lambda _service: None) -> Any:
        """Authorize ``op`` and run ``fn(service)`` on the broker thread."""
        role, authorizer = self.role, self.broker.admin.authorizer

        def work(service: Any) -> Any:
            authorizer.check_admin(role, op, {})
            return fn(service)

        return await self.submit(work)


class ActiveBrokersHandler(BrokerResource):
    """``GET /brokers`` and ``GET /brokers/{cluster}``: the active brokers' ids."""

    @guarded
    async def get(self, cluster: str | None = None) -> None:
        if cluster is not None and cluster != CLUSTER:
            raise ClusterNotFound(f"Cluster does not exist: cluster={cluster}")
        await self.on_broker("brokers.get_active_brokers")
        self.reply([broker_id(self.broker)])


class LeaderBrokerHandler(BrokerResource):
    """``GET /brokers/leaderBroker``: this broker (``BrokerInfo``)."""

    @guarded
    async def get(self) -> None:
        await self.on_broker("brokers.get_leader_broker")
        self.reply({"serviceUrl": self.broker.web_url, "brokerId": broker_id(self.broker)})


class HealthHandler(BrokerResource):
    """``GET /brokers/health``: ``ok`` once a heartbeat message reached its reader."""

    @guarded
    async def get(self) -> None:
        version = self.get_query_argument("topicVersion", "V1")
        if version not in ("V1", "V2"):
            raise ApiError(400, f"topicVersion must be V1 or V2, not {version!r}")
        topic = heartbeat_topic(broker_id(self.broker))
        await self.on_broker(
            "brokers.health_check", lambda service: run_health_check(service, topic)
        )
        self.set_header("Content-Type", "text/plain")
        self.finish("ok")


class ReadyHandler(BrokerResource):
    """``GET /brokers/ready`` (no authentication in Pulsar either: a readiness probe)."""

    def prepare(self) -> None:
        return None

    @guarded
    async def get(self) -> None:
        await self.submit(lambda _service: None)
        self.set_header("Content-Type", "text/plain")
        self.finish("ok")


class VersionHandler(BrokerResource):
    """``GET /brokers/version``: the Pulsar release the broker behaves as, as plain text."""

    @guarded
    async def get(self) -> None:
        version = await self.on_broker(
            "brokers.get_version", lambda service: service.settings.pulsar_version
        )
        self.finish(version)


class DynamicConfigurationHandler(BrokerResource):
    """``GET /brokers/configuration`` (names), ``.../values`` (overrides): none."""

    @guarded
    async def get(self, what: str | None = None) -> None:
        await self.on_broker("brokers.get_dynamic_configuration")
        self.reply({} if what == "values" else [])


class RuntimeConfigurationHandler(BrokerResource):
    """``GET /brokers/configuration/runtime``: every setting, broker.conf names, as text."""

    @guarded
    async def get(self) -> None:
        settings = await self.on_broker(
            "brokers.get_runtime_configuration", lambda service: service.settings
        )
        self.reply({
            _camel(f.name): _text(getattr(settings, f.name))
            for f in dataclasses.fields(settings)
            if "secret" not in f.name  # key material never leaves the broker
        })


class UpdateConfigurationHandler(BrokerResource):
    """``POST /brokers/configuration/{name}/{value}`` and ``DELETE .../{name}``: refused."""

    @guarded
    async def post(self, name: str, _value: str | None = None) -> None:
        await self.on_broker("brokers.update_dynamic_configuration")
        raise ApiError(412, "Cannot update non-dynamic configuration")

    delete = post


class BrokerStatsTopicsHandler(BrokerResource):
    """``GET /broker-stats/topics``: every topic's stats by namespace and bundle."""

    @guarded
    async def get(self) -> None:
        self.reply(await self.on_broker("broker_stats.get_topics", topics_stats))


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


_SEG = r"([^/]+)"
# Tornado takes the first pattern that matches: the fixed names before /brokers/{cluster}.
ROUTES: list[tuple[str, Any]] = [
    (r"/admin/v2/brokers/?", ActiveBrokersHandler),
    (r"/admin/v2/brokers/leaderBroker", LeaderBrokerHandler),
    (r"/admin/v2/brokers/health", HealthHandler),
    (r"/admin/v2/brokers/ready", ReadyHandler),
    (r"/admin/v2/brokers/version", VersionHandler),
    (r"/admin/v2/brokers/configuration(?:/(values))?", DynamicConfigurationHandler),
    (r"/admin/v2/brokers/configuration/runtime", RuntimeConfigurationHandler),
    (f"/admin/v2/brokers/configuration/{_SEG}(?:/{_SEG})?", UpdateConfigurationHandler),
    (f"/admin/v2/brokers/{_SEG}", ActiveBrokersHandler),
    (r"/admin/v2/broker-stats/topics", BrokerStatsTopicsHandler),
]
