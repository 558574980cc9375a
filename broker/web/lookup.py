"""HTTP topic lookup, ``GET /lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}``: which
broker serves a topic, in Pulsar's ``LookupData`` shape (``brokerUrl``, ``httpUrl``,
``nativeUrl``; the TLS URLs once the broker has TLS listeners).

pulsarlab's one broker owns every topic. As on Pulsar, the caller needs the lookup
permission on the topic's namespace, and a topic that does not exist is a 404 unless the
broker creates topics automatically.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import TopicNotFound
from ..topic_name import TopicName
from .base import AdminResource, guarded


def lookup_data(broker: Any) -> dict[str, str]:
    """``LookupData`` of this broker: every topic's owner."""
    data = {
        "brokerUrl": broker.pulsar_url,
        "httpUrl": broker.web_url,
        "nativeUrl": broker.pulsar_url,
    }
    for key, attribute in (("brokerUrlTls", "pulsar_tls_url"), ("httpUrlTls", "web_tls_url")):
        url = getattr(broker, attribute, None)
        if url:
            data[key] = url
    return data


class TopicLookupHandler(AdminResource):
    """``GET /lookup/v2/topic/...``: this broker's URLs for a topic it may serve."""

    @guarded
    async def get(self, domain: str, tenant: str, namespace: str, topic: str) -> None:
        name = str(TopicName.get(f"{domain}://{tenant}/{namespace}/{topic}"))
        role, authorizer = self.role, self.broker.admin.authorizer

        def check(service: Any) -> None:
            authorizer.check_topic(role, name, "lookup")
            if service.settings.allow_auto_topic_creation:
                return
            if service.get_partitioned_topic_metadata(name) == 0:
                service.get_topic(name, create=False)  # TopicNotFound if it does not exist

        try:
            await asyncio.wrap_future(self.broker.submit(check))
        except TopicNotFound:
            raise TopicNotFound("Topic not found") from None
        self.reply(lookup_data(self.broker))


ROUTES: list[tuple[str, Any]] = [
    (r"/lookup/v2/topic/(persistent|non-persistent)/([^/]+)/([^/]+)/([^/]+)",
     TopicLookupHandler),
]
