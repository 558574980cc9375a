"""Topic lookups and namespace queries, as Java's ``BinaryProtoLookupService``.

``LOOKUP`` finds the broker owning a topic, following redirects with the
``authoritative`` flag each answer gives (at most 20 hops); ``pulsar+ssl://`` follows
``brokerServiceUrlTls``, and ``proxy_through_service_url`` keeps the service URL. Over
``zmq://`` one broker behind the ROUTER owns every topic: no lookup goes out.
``PARTITIONED_METADATA`` and ``GET_TOPICS_OF_NAMESPACE`` are asked of the service URL's
broker.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any

from ..pulsar_protocol import PulsarApi_pb2 as pb
from ..pulsar_protocol.framing import Frame
from .client_cnx import ClientCnx
from .connection import Command
from .connection_pool import ConnectionPool
from .exceptions import ConnectError
from .pulsar_commands import error_for

__all__ = ["MAX_LOOKUP_REDIRECTS", "LookupService"]

MAX_LOOKUP_REDIRECTS = 20
_T = pb.BaseCommand.Type

LookedUp = Callable[[ClientCnx | None, BaseException | None], None]


class LookupService(ConnectionPool):
    """Lookups on the pool's sockets."""

    use_tls: bool

    def _io_lookup(self, topic: str, done: LookedUp) -> None:
        """Find the broker owning ``topic`` (following redirects) and its ready socket."""
        if self.over_zmq:  # one broker behind the ROUTER owns every topic
            url = self.service_url
            self._io_cnx(url, lambda err: done(self._cnxs.get(url), err))
            return

        def ask(url: str, authoritative: bool, hops: int) -> None:
            def on_ready(err: BaseException | None) -> None:
                if err is not None:
                    done(None, err)
                    return
                command = pb.BaseCommand(type=_T.LOOKUP)
                command.lookupTopic.topic = topic
                command.lookupTopic.authoritative = authoritative
                self._requests.send(self._cnxs[url], command, "lookupTopic", answered)

            def answered(frame: Frame) -> None:
                cmd = frame.command
                if cmd.type == _T.ERROR:
                    done(None, error_for(cmd.error.error, cmd.error.message))
                    return
                r = cmd.lookupTopicResponse
                if r.response == r.Failed:
                    done(None, error_for(r.error, r.message or f"lookup of {topic} failed"))
                    return
                target = (r.brokerServiceUrlTls if self.use_tls else r.brokerServiceUrl) or url
                if (self.use_tls and not r.brokerServiceUrlTls and r.brokerServiceUrl
                        and not r.proxy_through_service_url):
                    done(None, ConnectError(f"lookup of {topic}: the owning broker has no "
                                            "TLS URL (brokerServiceUrlTls)"))
                    return
                if r.proxy_through_service_url:
                    target = self.service_url
                if r.response == r.Redirect:
                    if hops >= MAX_LOOKUP_REDIRECTS:
                        done(None, ConnectError(f"lookup of {topic}: too many redirects"))
                        return
                    ask(target, r.authoritative, hops + 1)
                    return
                self._io_cnx(target, lambda err: done(self._cnxs.get(target), err))

            self._io_cnx(url, on_ready)

        ask(self.service_url, False, 0)

    def _io_partitioned_metadata(self, topic: str, future: concurrent.futures.Future) -> None:
        command = pb.BaseCommand(type=_T.PARTITIONED_METADATA)
        command.partitionMetadata.topic = topic

        def answered(frame: Frame) -> None:
            r = frame.command.partitionMetadataResponse
            if r.response == r.Failed:
                future.set_exception(error_for(r.error, r.message))
                return
            future.set_result(Command("SUCCESS", 0, {"result": r.partitions}))

        self._ask_service_broker(command, "partitionMetadata", future, answered)

    def _io_get_topics(self, fields: dict[str, Any], future: concurrent.futures.Future) -> None:
        command = pb.BaseCommand(type=_T.GET_TOPICS_OF_NAMESPACE)
        command.getTopicsOfNamespace.namespace = fields["namespace"]
        command.getTopicsOfNamespace.mode = 2  # ALL: the caller filters by domain

        def answered(frame: Frame) -> None:
            topics = list(frame.command.getTopicsOfNamespaceResponse.topics)
            future.set_result(Command("SUCCESS", 0, {"result": topics}))

        self._ask_service_broker(command, "getTopicsOfNamespace", future, answered)

    def _ask_service_broker(self, command: pb.BaseCommand, field: str,
                            future: concurrent.futures.Future,
                            answered: Callable[[Frame], None]) -> None:
        """Send ``command`` to the service URL's broker once its socket is ready; an ERROR
        (or a failed connection) fails ``future``, any other answer goes to ``answered``."""
        def on_ready(err: BaseException | None) -> None:
            if err is not None:
                future.set_exception(err)
                return
            self._requests.send(self._cnxs[self.service_url], command, field, on_reply)

        def on_reply(frame: Frame) -> None:
            cmd = frame.command
            if cmd.type == _T.ERROR:
                future.set_exception(error_for(cmd.error.error, cmd.error.message))
                return
            answered(frame)

        self._io_cnx(self.service_url, on_ready)
