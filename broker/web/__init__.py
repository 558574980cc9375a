"""Pulsar's admin REST API (``/admin/v2/...``) over HTTP, served by Tornado.

:class:`WebServer` binds the broker's web port and serves it from one asyncio loop on its
own thread; each request hands its admin operation to the broker thread
(``Broker.submit``) and awaits the result, so the core stays single-threaded.
"""

from .server import WebServer

__all__ = ["WebServer"]
