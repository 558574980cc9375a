"""Pulsar Functions, IO connectors and packages: services pulsarlab does not run, answered
as a Pulsar broker without them answers, not with a bare 404.

With ``functionsWorkerEnabled=false`` every ``/admin/v3/functions``, ``sources`` and
``sinks`` call (and the ``/admin/v2/worker`` ones) is a 409 saying the function worker is
not enabled; with ``enablePackagesManagement=false`` ``/admin/v3/packages`` is a 503.
"""

from __future__ import annotations

from typing import Any

from .base import AdminResource

FUNCTIONS_DISABLED = (
    "Pulsar Function Worker is not enabled, probably functionsWorkerEnabled is set to false"
)
PACKAGES_DISABLED = "Package Management Service is not enabled in the broker."


class DisabledServiceHandler(AdminResource):
    """Every method of a service that is off: its status and reason."""

    status = 409
    reason = FUNCTIONS_DISABLED

    def _refuse(self, *_args: Any) -> None:
        self.fail(self.status, self.reason)

    get = post = put = delete = patch = _refuse


class PackagesDisabledHandler(DisabledServiceHandler):
    status = 503
    reason = PACKAGES_DISABLED


ROUTES: list[tuple[str, Any]] = [
    (r"/admin/v3/(?:functions|sources|sinks)(?:/.*)?", DisabledServiceHandler),
    (r"/admin/v2/(?:functions|worker|worker-stats)(?:/.*)?", DisabledServiceHandler),
    (r"/admin/v3/packages(?:/.*)?", PackagesDisabledHandler),
]
