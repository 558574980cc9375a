"""ServerCnx rules no client library shows (it never breaks them), as raw Pulsar frames over
both transports: ZeroMQ (one frame per message, tests/integration/zmq_pulsar/dealer.py) and
pulsar:// TCP (Pulsar's length framing)."""

from __future__ import annotations

import itertools
import socket
from collections.abc import Iterator

import pytest

from pulsarlab import Broker
from pulsarlab.broker.pulsar_protocol.framing import Frame, FrameDecoder

from ..zmq_pulsar.dealer import CLOSED, QUIET_MS, WAIT_MS, PulsarDealer, T, command, send_frame
from .conftest import unique


class PulsarSocket(PulsarDealer):
    """The same raw connection as :class:`PulsarDealer`, over pulsar:// TCP."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=WAIT_MS / 1000)
        self._decoder = FrameDecoder(1 << 30)
        self._frames: list[Frame] = []
        self._ids = itertools.count(1)

    def close(self) -> None:
        self.sock.close()

    def send(self, *parts: bytes) -> None:
        self.sock.sendall(b"".join(parts))

    def recv(self, timeout_ms: int = WAIT_MS) -> Frame | str | None:
        """The next frame (PINGs answered and skipped), ``CLOSED`` once the broker closed
        the socket, ``None`` if nothing came within ``timeout_ms``."""
        self.sock.settimeout(timeout_ms / 1000)
        while not self._frames:
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                return None
            except ConnectionResetError:
                return CLOSED
            if not data:
                return CLOSED
            for frame in self._decoder.feed(data):
                if frame.command.type == T.PING:
                    self.send(command(T.PONG, "pong"))
                else:
                    self._frames.append(frame)
        return self._frames.pop(0)


@pytest.fixture(params=["zmq", "pulsar"])
def raw(request: pytest.FixtureRequest, broker: Broker) -> Iterator[PulsarDealer]:
    conn = (PulsarDealer(broker.service_url) if request.param == "zmq"
            else PulsarSocket(broker.host, broker.pulsar_port))
    assert conn.connect().type == T.CONNECTED
    yield conn
    conn.close()


def _next_non_message(conn: PulsarDealer) -> Frame | str | None:
    while True:
        frame = conn.recv()
        if not (isinstance(frame, Frame) and frame.command.type == T.MESSAGE):
            return frame


def test_a_repeated_subscribe_with_the_same_consumer_id_succeeds(raw: PulsarDealer) -> None:
    """ServerCnx.handleSubscribe: the consumer id is already created, so the broker answers
    SUCCESS again (a client whose first answer was lost retries this way)."""
    topic = f"persistent://public/default/{unique('resubscribe')}"
    raw.subscribe(topic, "s", consumer_id=5)
    raw.subscribe(topic, "s", consumer_id=5, permits=0)  # expects SUCCESS
    raw.producer(topic, producer_id=1)
    raw.send(send_frame(1, 0, b"once"))
    frames = [raw.recv(), raw.recv()]
    messages = [f for f in frames if isinstance(f, Frame) and f.command.type == T.MESSAGE]
    assert [f.payload for f in messages] == [b"once"]
    assert messages[0].command.message.consumer_id == 5
    assert raw.recv(QUIET_MS) is None  # one consumer, so one delivery


def test_a_send_for_an_unknown_producer_closes_the_connection(
    broker: Broker, raw: PulsarDealer
) -> None:
    """ServerCnx.handleSend (3.3): a SEND for a producer the connection never created (nor
    just closed) is a broken client; the broker closes the connection."""
    topic = f"persistent://public/default/{unique('unknown-producer')}"
    raw.subscribe(topic, "s", consumer_id=1)
    raw.send(send_frame(42, 0, b"nobody's"))
    assert _next_non_message(raw) == CLOSED
    assert broker.call(lambda s: s.topic_stats(topic)["msgInCounter"]) == 0
