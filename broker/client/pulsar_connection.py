"""The client's Pulsar-protocol connection: ``pulsar://``, ``pulsar+ssl://`` or ``zmq://``.

Speaks Pulsar's binary protocol (``BaseCommand`` + ``MessageMetadata`` + payload, length
framed, CRC32C-checked) over TCP, TLS or a ZeroMQ DEALER (one frame per ZeroMQ message),
with the I/O-thread model and the interface of :class:`~.connection.Connection`: the
producers and consumers ask for commands by their pulsarlab names (``PRODUCER``,
``SUBSCRIBE``, ``SEND``, ``ACK``, ...) and get replies and pushes as
:class:`~.connection.Command` objects. This module parses the service URL and routes each
request to the layer that does it, from the bottom up (Java's client's roles):

- :mod:`.client_cnx` one socket to one broker (``ClientCnx``): framing, outbox, TLS
  handshake, reads and writes;
- :mod:`.pending_requests` request/response correlation by ``request_id``;
- :mod:`.connection_pool` the sockets by broker URL (``ConnectionPool``): CONNECT and
  authentication, keep-alive, the I/O loop's transport, dropping a lost socket;
- :mod:`.inbound_commands` what the brokers send (``ClientCnx.handle*``);
- :mod:`.lookup_service` LOOKUP with redirects, partitioned metadata, a namespace's topics
  (``BinaryProtoLookupService``);
- :mod:`.connection_handler` creating producers and consumers on their broker, again after
  a loss, with back-off (``ConnectionHandler``, ``Backoff``);
- :mod:`.producer_commands` / :mod:`.consumer_commands` what a producer or consumer sends
  (``ProducerImpl`` / ``ConsumerImpl``).
"""

from __future__ import annotations

import concurrent.futures
import ssl
from typing import Any

from ..format.batch import encode_pulsar_batch, pulsar_batch_items
from ..hosts import url_host
from .connection import parse_service_url
from .connection_pool import DEFAULT_KEEP_ALIVE_SECONDS
from .consumer_commands import ConsumerCommands
from .exceptions import (
    AuthenticationError,
    ConnectError,
    ErrorGettingAuthenticationData,
    PulsarException,
)
from .producer_commands import ProducerCommands
from .pulsar_commands import is_tls_url, parse_pulsar_url, settle
from .tls import TlsOptions, client_context

__all__ = ["DEFAULT_KEEP_ALIVE_SECONDS", "PulsarConnection", "parse_pulsar_url"]


class PulsarConnection(ProducerCommands, ConsumerCommands):
    """A Pulsar-protocol client connection (see the module docstring)."""

    encode_batch = staticmethod(encode_pulsar_batch)
    batch_items = staticmethod(pulsar_batch_items)

    def __init__(self, service_url: str, *, tls: TlsOptions | None = None,
                 keep_alive_interval_seconds: float = DEFAULT_KEEP_ALIVE_SECONDS,
                 **kwargs: Any) -> None:
        self.tls_options = tls or TlsOptions()
        self.keep_alive_ms = int(keep_alive_interval_seconds * 1000)
        super().__init__(service_url, **kwargs)

    def _parse_url(self, service_url: str) -> str:
        self.use_tls = is_tls_url(service_url)
        self._ssl_context: ssl.SSLContext | None = None
        if service_url.strip().startswith(("pulsar://", "pulsar+ssl://")):
            self.over_zmq = False
            host, port = parse_pulsar_url(service_url)
            scheme = "pulsar+ssl" if self.use_tls else "pulsar"
            self.service_url = endpoint = f"{scheme}://{url_host(host)}:{port}"
            if self.use_tls:
                self._ssl_context = client_context(self.tls_options)
        else:  # zmq:// (tcp://, ipc://, inproc://): one DEALER to a pulsarlab broker
            self.over_zmq = True
            endpoint = parse_service_url(service_url)
            self.service_url = service_url.strip().rstrip("/")
        self._init_pool()
        self._init_handles()
        return endpoint

    # -- any thread -----------------------------------------------------------------------

    def request(self, name: str, payloads: tuple = (), **fields: Any) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        self.post(lambda: self._io_request(name, fields, future))
        return future

    def send(self, name: str, payloads: tuple = (), **fields: Any) -> None:
        self.post(lambda: self.send_now(name, 0, payloads, **fields))

    def ensure_connected(self) -> None:
        if self.connected:
            return
        with self._connect_lock:
            if self.connected:
                return
            if self._auth_failure is not None:
                raise self._auth_failure
            future: concurrent.futures.Future = concurrent.futures.Future()
            self.post(lambda: self._io_cnx(self.service_url, lambda err: settle(future, err)))
            try:
                future.result(self.connection_timeout)
            except (AuthenticationError, ErrorGettingAuthenticationData) as exc:
                self._auth_failure = exc
                raise
            except concurrent.futures.TimeoutError:
                raise ConnectError(
                    f"no answer from a Pulsar broker at {self.service_url} within "
                    f"{self.connection_timeout:g} s"
                ) from None
            self.connected = True

    # -- I/O thread -----------------------------------------------------------------------

    def _io_request(self, name: str, fields: dict[str, Any],
                    future: concurrent.futures.Future) -> None:
        try:
            if name == "PRODUCER":
                self._io_create("producer", fields, future)
            elif name == "SUBSCRIBE":
                self._io_create("consumer", fields, future)
            elif name == "PARTITIONED_METADATA":
                self._io_partitioned_metadata(fields["topic"], future)
            elif name == "GET_TOPICS":
                self._io_get_topics(fields, future)
            elif name in ("CLOSE_PRODUCER",):
                self._io_close_producer(fields["producer_id"], future)
            elif name in ("CLOSE_CONSUMER", "UNSUBSCRIBE", "SEEK", "GET_LAST_MESSAGE_ID"):
                self._io_consumer_request(name, fields, future)
            else:
                raise PulsarException(f"{name} is not a command of the Pulsar protocol")
        except BaseException as exc:
            if not future.done():
                future.set_exception(exc)
