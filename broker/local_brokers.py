"""The brokers this process knows, by ZeroMQ service URL: where their admin REST API is.

``Admin("zmq://host:port")`` finds the web service of a broker started in this process
(``Broker.start`` registers it) or beside it (the kernel runtime registers the one it
spawned); any other broker is reached by its web URL.
"""

from __future__ import annotations

import threading
from urllib.parse import urlsplit

_lock = threading.Lock()
_web_urls: dict[str, str] = {}


def _key(service_url: str) -> str:
    """``zmq://host:port`` and ``tcp://host:port`` name the same endpoint."""
    parts = urlsplit(service_url)
    return parts.netloc or service_url


def register(service_url: str, web_url: str) -> None:
    """Remember that ``service_url``'s broker serves its admin REST API at ``web_url``."""
    with _lock:
        _web_urls[_key(service_url)] = web_url


def unregister(service_url: str) -> None:
    with _lock:
        _web_urls.pop(_key(service_url), None)


def web_url_for(service_url: str) -> str | None:
    """The admin REST API of the broker at ``service_url``, if this process knows it."""
    with _lock:
        return _web_urls.get(_key(service_url))
