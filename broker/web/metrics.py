"""``/metrics`` (and ``/metrics/``): the broker's Prometheus metrics with Pulsar's names.

The samples are gathered on the broker thread (:func:`pulsarlab.broker.metrics.collect`)
and written in Prometheus' text format 0.0.4 by ``prometheus_client``, the format every
Prometheus server and ``prometheus_client``'s own parser read. As on Pulsar, the endpoint
asks for a token only when authentication is on *and* ``authenticate_metrics_endpoint``.
"""

from __future__ import annotations

from typing import Any

from ..metrics import Samples, collect
from ..tenants import CLUSTER
from .base import AdminResource

# Prometheus' text format 0.0.4 (prometheus_client's CONTENT_TYPE_PLAIN_0_0_4).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _Scrape:
    """A ``prometheus_client`` collector that hands out one scrape's metric families."""

    def __init__(self, families: list[Any]) -> None:
        self.families = families

    def collect(self) -> list[Any]:
        return self.families


def exposition(samples: Samples) -> bytes:
    """The samples in Prometheus' text format, each family a gauge (as Pulsar types them)."""
    # Imported at the first scrape: importing it costs a notebook's start-up a lot more
    # than the broker ever spends on /metrics.
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import Metric

    families = []
    for name, rows in samples.items():
        family = Metric(name, f"Pulsar broker metric {name}", "gauge")
        for labels, value in rows:
            family.add_sample(name, labels, value)
        families.append(family)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Scrape(families))
    return generate_latest(registry)


class MetricsHandler(AdminResource):
    """``GET /metrics``: every loaded topic's samples."""

    def set_default_headers(self) -> None:
        self.set_header("Content-Type", CONTENT_TYPE)

    def prepare(self) -> None:
        if self.broker.settings.authenticate_metrics_endpoint:
            super().prepare()

    async def get(self) -> None:
        samples = await self.submit(lambda service: collect(service, CLUSTER))
        self.finish(exposition(samples))


ROUTES: list[tuple[str, Any]] = [(r"/metrics/?", MetricsHandler)]
