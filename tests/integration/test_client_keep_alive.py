"""pulsarlab's client keep-alive, as Pulsar's clients: it PINGs each connection every
``keep_alive_interval_seconds`` and closes one that sent nothing since its last PING, so a
silently dead broker is noticed and the producers on it reconnect. The broker here is a raw
socket server speaking just enough of Pulsar's protocol; it can stop answering one
connection without closing it (a peer that died with the network)."""

from __future__ import annotations

import logging
import socketserver
import threading
from collections.abc import Iterator

import pytest

from pulsarlab.broker.client import Client
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as pb
from pulsarlab.broker.pulsar_protocol.framing import FrameDecoder, encode_command

_T = pb.BaseCommand.Type
GENEROUS_S = 30  # "eventually": far beyond the intervals the tests use, even under load


class _FakeBroker(socketserver.ThreadingTCPServer):
    """Answers CONNECT, PARTITIONED_METADATA, LOOKUP (itself), PRODUCER, SEND and PING.
    With ``silence_first``, the first connection answers nothing after its PRODUCER."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, silence_first: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.url = f"pulsar://127.0.0.1:{self.server_address[1]}"
        self.silence_first = silence_first
        self.lock = threading.Lock()
        self.connections = 0
        self.silenced: set[int] = set()
        self.pings: list[int] = []  # PINGs each connection got
        self.stored: list[tuple[int, bytes]] = []  # (connection, payload) of answered SENDs
        self.five_pings = threading.Event()


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server: _FakeBroker = self.server  # type: ignore[assignment]
        with server.lock:
            index = server.connections
            server.connections += 1
            server.pings.append(0)
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
    def _answer(server: _FakeBroker, index: int, frame) -> pb.BaseCommand | None:
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
            r.brokerServiceUrl = server.url
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


def _serve(broker: _FakeBroker) -> Iterator[_FakeBroker]:
    thread = threading.Thread(target=broker.serve_forever, daemon=True)
    thread.start()
    try:
        yield broker
    finally:
        broker.shutdown()
        broker.server_close()


@pytest.fixture
def answering() -> Iterator[_FakeBroker]:
    yield from _serve(_FakeBroker())


@pytest.fixture
def dying() -> Iterator[_FakeBroker]:
    yield from _serve(_FakeBroker(silence_first=True))


def test_an_answering_broker_is_pinged_and_kept(answering: _FakeBroker) -> None:
    client = Client(answering.url, operation_timeout_seconds=10, keep_alive_interval_seconds=0.05)
    try:
        producer = client.create_producer("kept")
        assert answering.five_pings.wait(GENEROUS_S)
        producer.send(b"still here")
        assert answering.connections == 1  # PONGs kept the one connection open
        assert answering.stored == [(0, b"still here")]
    finally:
        client.close()


def test_a_silent_broker_is_dropped_and_the_producer_reconnects(
    dying: _FakeBroker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pulsarlab.client")
    client = Client(dying.url, operation_timeout_seconds=10, keep_alive_interval_seconds=0.2)
    try:
        producer = client.create_producer("dying")
        assert dying.silenced == {0}
        # The SEND goes into the silent connection; the keep-alive closes it, the producer
        # is created again on a new connection and sends it there.
        producer.send(b"after the silence")
        assert dying.stored == [(1, b"after the silence")]
        assert dying.connections == 2
        assert dying.pings[0] >= 1  # the silent peer was PINGed before it was given up
        warned = [r.getMessage() for r in caplog.records if "answered no PING" in r.getMessage()]
        assert warned == [f"{dying.url} answered no PING within 0.2 s: closing the connection"]
    finally:
        client.close()


def test_the_keep_alive_interval_is_checked() -> None:
    with pytest.raises(ValueError, match="keep_alive_interval_seconds"):
        Client("pulsar://127.0.0.1:6650", keep_alive_interval_seconds=0)
    with pytest.raises(ValueError, match="keep_alive_interval_seconds"):
        Client("pulsar://127.0.0.1:6650", keep_alive_interval_seconds="30")
