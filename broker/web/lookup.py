"""Topic lookup over HTTP: ``GET /lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}``.

A client given ``http://host:8080`` (or ``https://``) as its service URL looks topics up
here (and their partitions at ``/admin/v2/.../partitions``), then connects to the broker
URL the answer names, as Pulsar's ``TopicLookup`` resource serves it: ``brokerUrl``,
``brokerUrlTls``, ``httpUrl``, ``httpUrlTls`` (and the deprecated ``nativeUrl``). The
listener is the one ``?listenerName=`` or the ``X-Pulsar-ListenerName`` header names
(advertised listeners), the internal one otherwise; a name the broker does not advertise
is a 503 with Pulsar's "the broker do not have NAME listener". Looking a topic up needs the
``lookup`` permission (produce or consume) when authorization is on, and a topic that does
not exist is a 404 unless the broker creates topics automatically.
"""

from __future__ import annotations

from typing import Any

from .. import errors
from ..topic_name import TopicName
from .base import AdminResource, guarded

LISTENER_HEADER = "X-Pulsar-ListenerName"


class TopicLookupHandler(AdminResource):
    """The broker that serves a topic (always this one: pulsarlab is one broker)."""

    @guarded
    async def get(self, domain: str, tenant: str, namespace: str, topic: str) -> None:
        name = f"{domain}://{tenant}/{namespace}/{topic}"
        listener_name = (self.get_query_argument("listenerName", "")
                         or self.request.headers.get(LISTENER_HEADER, ""))
        role = self.role
        broker = self.broker

        def lookup(service: Any) -> Any:
            full = str(TopicName.get(name))
            broker.admin.authorizer.check_topic(role, full, "lookup")
            # NamespaceNotFound (404) for a namespace that does not exist, as Pulsar
            broker.admin.call("namespaces.get_topics", {"namespace": f"{tenant}/{namespace}"})
            listener = broker.advertised.lookup(listener_name)
            if (not service.settings.allow_auto_topic_creation
                    and service.get_partitioned_topic_metadata(full) == 0):
                service.get_topic(full, create=False)  # TopicNotFound if it does not exist
            return listener

        try:
            listener = await self.submit(lookup)
        except errors.ServiceNotReady as exc:
            self.fail(503, str(exc))
            return
        except errors.TopicNotFound:
            raise errors.TopicNotFound("Topic not found") from None
        # every key, null where the broker has no such listener, as Pulsar's LookupData: the
        # official C++ client crashes on an answer that leaves brokerUrlTls out
        self.reply({
            "brokerUrl": listener.broker_service_url,
            "brokerUrlTls": listener.broker_service_url_tls,
            "httpUrl": broker.web_url,
            "httpUrlTls": broker.web_url_tls,
            "nativeUrl": listener.broker_service_url,
            # LookupData's deprecated alias of brokerUrlTls, "" without TLS (as Pulsar's)
            "brokerUrlSsl": listener.broker_service_url_tls or "",
        })


ROUTES: list[tuple[str, Any]] = [
    (r"/lookup/v2/topic/(persistent|non-persistent)/([^/]+)/([^/]+)/([^/]+)",
     TopicLookupHandler),
]
