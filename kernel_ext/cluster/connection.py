"""One :class:`Connection` to a broker, whatever runs it: pulsarlab over ZeroMQ, or any Pulsar.

The ``%pulsar`` magics and the live views talk to a broker only through a connection, and
never ask which backend it is:

:class:`ZmqConnection`
    a pulsarlab broker's ``zmq://`` service: :class:`pulsarlab.Client` and
    :class:`pulsarlab.Admin`, and its event stream for live views.
:class:`ClusterConnection`
    any Pulsar cluster — Apache Pulsar 3.x/4.x or pulsarlab's own listeners: a Pulsar client
    on ``pulsar://`` (or ``pulsar+ssl://``) for produce and consume — pulsarlab's own by
    default, the official ``pulsar-client`` with ``client="official"`` — the
    admin REST API (:class:`~.rest.RestAdmin`) for stats, topics, subscriptions, policies,
    peek and skip / reset / expire, and REST polling for live views. It is read-only unless
    opened with ``allow_writes=True``; then every change is announced before it is made.

:func:`open_connection` picks the backend from the service URL's scheme.
"""

from __future__ import annotations

import importlib
import logging
import threading
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..extras import require
from .rest import ClusterAdminError, RestAdmin

__all__ = [
    "CLIENTS",
    "ClusterConnection",
    "Connection",
    "WritesNotAllowed",
    "ZmqConnection",
    "open_connection",
]

CLUSTER_SCHEMES = ("pulsar", "pulsar+ssl")
CLIENTS = ("pulsarlab", "official")
"""The Pulsar clients a cluster connection can use: pulsarlab's (the default: no extra
dependency, the same client as everywhere else in pulsarlab) or the official
``pulsar-client`` (the ``ops`` extra), chosen by name."""


def check_client(client: str) -> str:
    """``client`` if it names one of :data:`CLIENTS`, else a one-line ``ValueError``."""
    if client not in CLIENTS:
        raise ValueError(f"the client is {' or '.join(CLIENTS)}, not {client!r}")
    return client


class WritesNotAllowed(PermissionError):
    """A change asked of a cluster connected read-only."""


class Connection(ABC):
    """What magics and views use of one broker."""

    backend: str
    service_url: str
    admin_url: str | None = None
    events_url: str | None = None
    writes_allowed: bool = True
    client_name: str = "pulsarlab"
    """Which Pulsar client :meth:`client` makes (one of :data:`CLIENTS`)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._client: Any = None
        self._admin: Any = None

    @property
    @abstractmethod
    def api(self) -> ModuleType:
        """The client module: ``ConsumerType``, ``InitialPosition``, ``Timeout`` by name."""

    @abstractmethod
    def _new_client(self) -> Any: ...

    @abstractmethod
    def _new_admin(self) -> Any: ...

    @abstractmethod
    def check(self, timeout_s: float) -> None:
        """One admin call: raise a one-line error when nothing usable answers."""

    @abstractmethod
    def live_source(self, topic: str, subscription: str) -> Any:
        """A not-yet-started live source (``start``/``stop``/``running``) for views."""

    def client(self) -> Any:
        """The shared client (created on first use)."""
        with self._lock:
            if self._client is None:
                self._client = self._new_client()
            return self._client

    def admin(self) -> Any:
        """The shared admin (created on first use)."""
        with self._lock:
            if self._admin is None:
                self._admin = self._new_admin()
            return self._admin

    @abstractmethod
    def check_write(self, what: str) -> None:
        """Called before a change (``what``: e.g. "send 3 messages to T")."""

    def describe(self) -> dict[str, Any]:
        """The connection as a plain dict (for ``%pulsar status``)."""
        return {"backend": self.backend, "service_url": self.service_url,
                "admin_url": self.admin_url, "events_url": self.events_url,
                "writes_allowed": self.writes_allowed, "client": self.client_name}

    def close(self) -> None:
        """Close the client and admin (the broker keeps running)."""
        with self._lock:
            client, self._client = self._client, None
            admin, self._admin = self._admin, None
        for resource in (client, admin):
            if resource is not None:
                resource.close()


class ZmqConnection(Connection):
    """A pulsarlab broker's ZeroMQ service (and its event stream, when known)."""

    backend = "zmq"

    def __init__(self, service_url: str, events_url: str | None = None, *,
                 security: dict[str, Any] | None = None,
                 view_settings: dict[str, Any] | None = None,
                 admin_url: str | None = None,
                 tls_trust_certs_file_path: str | None = None) -> None:
        """``view_settings``: what is known of the broker's settings that shape the views
        (``pulsar_version``, consistent-hashing points), handed to every live source.
        ``admin_url``: the broker's admin REST API (``http://host:port``); without it, the
        one of the broker started on this machine at ``service_url``;
        ``tls_trust_certs_file_path``: the CA file of an https:// ``admin_url``."""
        super().__init__()
        self.service_url = service_url
        self.events_url = events_url
        self.admin_url = admin_url
        self._ca_file = tls_trust_certs_file_path
        self.security = dict(security or {})
        self.view_settings = dict(view_settings or {})

    @property
    def api(self) -> ModuleType:
        return importlib.import_module("pulsarlab.broker.client")

    def check_write(self, what: str) -> None:
        """A pulsarlab broker is a sandbox: every change is allowed."""

    def _new_client(self) -> Any:
        from pulsarlab.broker.client import Client

        return Client(self.service_url, operation_timeout_seconds=15,
                      connection_timeout_ms=5000, **self.security)

    def _new_admin(self, timeout_s: float = 10.0) -> Any:
        from pulsarlab.broker.admin import Admin

        return Admin(self.admin_url or self.service_url, timeout_seconds=timeout_s,
                     tls_trust_certs_file_path=self._ca_file, **self.security)

    def check(self, timeout_s: float) -> None:
        from pulsarlab.broker import local_brokers
        from pulsarlab.broker.errors import AuthorizationError

        if self.admin_url is None and local_brokers.web_url_for(self.service_url) is None:
            raise ValueError(
                f"{self.service_url} is not a broker started on this machine: give its admin "
                "REST API with --admin-url http://host:port (the web_url `pulsarlab broker` "
                "reports)"
            )
        admin = self._new_admin(timeout_s)
        try:
            admin.topics.get_list()
        except AuthorizationError:
            pass  # it answered (and knows the token): the role may just not list topics
        except TimeoutError:
            raise TimeoutError(
                f"no broker answered at {admin.web_url} within {timeout_s:g} s"
            ) from None
        finally:
            admin.close()

    def live_source(self, topic: str, subscription: str) -> Any:
        from pulsarlab.widgets import LiveBinding

        if self.events_url is None:
            raise ValueError("live views need the event stream: "
                             "%pulsar connect URL --events tcp://host:port")
        return LiveBinding(self.service_url, self.events_url, topic, subscription,
                           security=self.security, settings=self.view_settings,
                           admin_url=self.admin_url)


class ClusterConnection(Connection):
    """Any Pulsar cluster: a Pulsar client on pulsar://, the admin REST API on http(s)://.

    ``client``: ``"pulsarlab"`` (the default) speaks Pulsar's binary protocol with
    :class:`pulsarlab.Client`, so nothing beyond pulsarlab is needed; ``"official"`` uses
    the official ``pulsar-client`` (installed by the ``ops`` extra). Both have the same API,
    so the magics and views do not ask which one they hold.
    ``token``: a JWT for both (``AuthenticationToken`` and ``Authorization: Bearer``).
    ``tls_trust_certs_file_path``: the CA file for ``pulsar+ssl://`` and ``https://``.
    ``allow_writes``: without it, sending, acknowledging and every admin change raise
    :class:`WritesNotAllowed`; with it, ``announce`` is told what will happen first.
    """

    backend = "cluster"

    def __init__(
        self,
        service_url: str,
        admin_url: str | None = None,
        *,
        token: str | None = None,
        tls_trust_certs_file_path: str | None = None,
        allow_writes: bool = False,
        announce: Callable[[str], None] = print,
        poll_interval_s: float = 2.0,
        client: str = "pulsarlab",
    ) -> None:
        super().__init__()
        self.client_name = check_client(client)
        self.api  # noqa: B018 - the official client missing is an error now, not at first use
        parts = urllib.parse.urlsplit(service_url)
        if parts.scheme not in CLUSTER_SCHEMES or not parts.hostname:
            raise ValueError(
                f"a cluster service URL is pulsar://host:6650 or pulsar+ssl://host:6651, "
                f"not {service_url!r}"
            )
        if admin_url is None:  # where `pulsar standalone` and a broker serve it by default
            secure = parts.scheme == "pulsar+ssl"
            admin_url = f"{'https' if secure else 'http'}://{parts.hostname}:" \
                        f"{8443 if secure else 8080}"
        self.service_url = service_url
        self.admin_url = admin_url
        self.writes_allowed = allow_writes
        self.poll_interval_s = poll_interval_s
        self._token = token
        self._ca_file = tls_trust_certs_file_path
        self._announce = announce
        self._reader_admin = RestAdmin(admin_url, token=token,
                                       tls_trust_certs_file_path=tls_trust_certs_file_path)

    @property
    def api(self) -> ModuleType:
        if self.client_name == "official":
            return require("pulsar", "a cluster connection with the official client")
        return importlib.import_module("pulsarlab.broker.client")

    def check_write(self, what: str) -> None:
        if not self.writes_allowed:
            raise WritesNotAllowed(
                f"{what} would change the cluster at {self.service_url}, connected read-only "
                "(connect again with --allow-writes to allow changes)"
            )
        self._announce(f"will {what} on {self.service_url}")

    def _new_client(self) -> Any:
        pulsar = self.api
        options: dict[str, Any] = {
            "operation_timeout_seconds": 15, "connection_timeout_ms": 5000,
            "logger": logging.getLogger("pulsarlab.cluster.client"),
        }  # the same arguments for both clients (pulsarlab's takes the official ones)
        if self._token:
            options["authentication"] = pulsar.AuthenticationToken(self._token)
        if self._ca_file:
            options["tls_trust_certs_file_path"] = self._ca_file
        return pulsar.Client(self.service_url, **options)

    def _new_admin(self) -> RestAdmin:
        return RestAdmin(self.admin_url or "", token=self._token,
                         tls_trust_certs_file_path=self._ca_file,
                         before_write=self.check_write)

    def check(self, timeout_s: float) -> None:
        probe = RestAdmin(self.admin_url or "", token=self._token,
                          tls_trust_certs_file_path=self._ca_file, timeout_seconds=timeout_s)
        try:
            probe.request("GET", "clusters")
        except ClusterAdminError as exc:
            if exc.status == 401:
                raise PermissionError(f"{self.admin_url} refused the token "
                                      f"({exc.reason})") from None
            if exc.status != 403:  # 403: it answered; the role may just not list clusters
                raise
        except OSError as exc:
            reason = getattr(exc, "reason", exc)
            raise OSError(f"no admin REST API answered at {self.admin_url}: {reason}") from None

    def live_source(self, topic: str, subscription: str) -> Any:
        from pulsarlab.widgets.cluster_source import ClusterSource

        return ClusterSource(self._reader_admin, topic, subscription,
                             interval_s=self.poll_interval_s)


def open_connection(
    service_url: str,
    *,
    events_url: str | None = None,
    admin_url: str | None = None,
    token: str | None = None,
    curve_server_key: str | None = None,
    tls_trust_certs_file_path: str | None = None,
    allow_writes: bool = False,
    announce: Callable[[str], None] = print,
    client: str | None = None,
) -> Connection:
    """``pulsar[+ssl]://…`` → :class:`ClusterConnection`; else :class:`ZmqConnection`
    (``zmq://host:port``, whose admin client checks the URL).

    An option the chosen backend cannot use is refused with a one-line error rather than
    ignored (``events_url`` and ``curve_server_key`` are pulsarlab's ZeroMQ features).
    ``admin_url`` is a cluster's or a zmq:// broker's admin REST API (a zmq:// broker this
    process started is found without it). A pulsarlab broker over ZeroMQ is a sandbox: it
    takes writes without ``allow_writes``. ``client`` (``"pulsarlab"``, the default, or
    ``"official"``) is the Pulsar client of a cluster; a zmq:// broker is always reached with
    pulsarlab's.
    """
    scheme = urllib.parse.urlsplit(service_url).scheme
    if scheme in CLUSTER_SCHEMES:
        if events_url or curve_server_key:
            raise ValueError("--events and --curve-server-key are for zmq:// brokers; "
                             "a pulsar:// cluster is followed through its REST API")
        return ClusterConnection(service_url, admin_url, token=token,
                                 tls_trust_certs_file_path=tls_trust_certs_file_path,
                                 allow_writes=allow_writes, announce=announce,
                                 client=client or "pulsarlab")
    if scheme not in ("zmq", "tcp"):
        raise ValueError(f"service URL must look like zmq://host:port, not {service_url!r}")
    if client not in (None, "pulsarlab"):
        raise ValueError(f"a zmq:// broker is reached with pulsarlab's client, not {client!r} "
                         "(the official client speaks pulsar://)")
    security: dict[str, Any] = {}
    if token:
        from pulsarlab.broker.client.auth import AuthenticationToken

        security["authentication"] = AuthenticationToken(token)
    if curve_server_key:
        security["curve_server_key"] = curve_server_key
    return ZmqConnection(service_url, events_url, security=security, admin_url=admin_url,
                         tls_trust_certs_file_path=tls_trust_certs_file_path)
