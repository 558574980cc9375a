"""A raw-socket Pulsar broker for client tests: just enough of Pulsar's protocol (CONNECT,
PARTITIONED_METADATA, LOOKUP, PRODUCER, SEND, PING) to watch what a client does, with
faults a real broker does not make on demand: a connection that goes silent, a lookup that
sends the client elsewhere, TLS with a given context."""

from __future__ import annotations

import socket
import socketserver
import ssl
import threading
from collections.abc import Iterator

from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as pb
from pulsarlab.broker.pulsar_protocol.framing import FrameDecoder, encode_command

__all__ = ["FakeBroker", "serve"]

_T = pb.BaseCommand.Type


class FakeBroker(socketserver.ThreadingTCPServer):
    """Answers CONNECT, PARTITIONED_METADATA, LOOKUP (itself), PRODUCER, SEND and PING.
    With ``silence_first``, the first connection answers nothing after its PRODUCER; with
    ``mute``, no connection answers anything."""

    def get_request(self) -> tuple[socket.socket, object]:
        sock, address = super().get_request()
        if self.tls is not None:  # a failed handshake is an OSError: the request is dropped
            sock = self.tls.wrap_socket(sock, server_side=True)
        return sock, address

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, silence_first: bool = False, *, tls: ssl.SSLContext | None = None,
                 lookup_urls: tuple[str, str] | None = None, mute: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        scheme = "pulsar+ssl" if tls is not None else "pulsar"
        self.url = f"{scheme}://127.0.0.1:{self.server_address[1]}"
        self.tls = tls
        self.lookup_urls = lookup_urls  # (brokerServiceUrl, brokerServiceUrlTls); else itself
        self.lookups: list[str] = []
        self.mute = mute  # every connection answers nothing, not even CONNECT
        self.silence_first = silence_first
        self.lock = threading.Lock()
        self.connections = 0
        self.silenced: set[int] = set()
        self.pings: list[int] = []  # PINGs each connection got
        self.stored: list[tuple[int, bytes]] = []  # (connection, payload) of answered SENDs
        self.five_pings = threading.Event()


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server: FakeBroker = self.server  # type: ignore[assignment]
        with server.lock:
            index = server.connections
            server.connections += 1
            server.pings.append(0)
            if server.mute:
                server.silenced.add(index)
        decoder = FrameDecoder(1 << 22, checksum_optional=True)
        while True:
            try:
                data = self.request.recv(65536)
            except OSError:
                return
            if not data:
                return
            for frame in decoder.feed(data):
                reply = self._answer(server, index, frame)
                if reply is not None and index not in server.silenced:
                    self.request.sendall(encode_command(reply))

    @staticmethod
    def _answer(server: FakeBroker, index: int, frame) -> pb.BaseCommand | None:
        cmd = frame.command
        if cmd.type == _T.PING:
            with server.lock:
                server.pings[index] += 1
                if sum(server.pings) >= 5:
                    server.five_pings.set()
            return pb.BaseCommand(type=_T.PONG)
        if index in server.silenced:
            return None
        if cmd.type == _T.CONNECT:
            reply = pb.BaseCommand(type=_T.CONNECTED)
            reply.connected.server_version = "fake"
            reply.connected.protocol_version = 21
            return reply
        if cmd.type == _T.PARTITIONED_METADATA:
            reply = pb.BaseCommand(type=_T.PARTITIONED_METADATA_RESPONSE)
            reply.partitionMetadataResponse.request_id = cmd.partitionMetadata.request_id
            reply.partitionMetadataResponse.partitions = 0
            return reply
        if cmd.type == _T.LOOKUP:
            reply = pb.BaseCommand(type=_T.LOOKUP_RESPONSE)
            r = reply.lookupTopicResponse
            r.request_id = cmd.lookupTopic.request_id
            r.response = r.Connect
            r.authoritative = True
            server.lookups.append(cmd.lookupTopic.topic)
            if server.lookup_urls is None:
                r.brokerServiceUrl = server.url
            else:
                r.brokerServiceUrl, r.brokerServiceUrlTls = server.lookup_urls
            return reply
        if cmd.type == _T.PRODUCER:
            reply = pb.BaseCommand(type=_T.PRODUCER_SUCCESS)
            reply.producer_success.request_id = cmd.producer.request_id
            reply.producer_success.producer_name = "fake-producer"
            if server.silence_first and index == 0:
                server.silenced.add(0)  # this reply still goes out; then nothing does
                server.silence_first = False
            return reply
        if cmd.type == _T.SEND:
            with server.lock:
                server.stored.append((index, bytes(frame.payload)))
                entry = len(server.stored)
            reply = pb.BaseCommand(type=_T.SEND_RECEIPT)
            reply.send_receipt.producer_id = cmd.send.producer_id
            reply.send_receipt.sequence_id = cmd.send.sequence_id
            reply.send_receipt.message_id.ledgerId = 1
            reply.send_receipt.message_id.entryId = entry
            return reply
        if cmd.type == _T.CLOSE_PRODUCER:
            reply = pb.BaseCommand(type=_T.SUCCESS)
            reply.success.request_id = cmd.close_producer.request_id
            return reply
        return None


def serve(broker: FakeBroker) -> Iterator[FakeBroker]:
    thread = threading.Thread(target=broker.serve_forever, daemon=True)
    thread.start()
    try:
        yield broker
    finally:
        broker.shutdown()
        broker.server_close()


