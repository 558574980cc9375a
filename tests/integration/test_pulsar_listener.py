"""The broker's pulsar:// listener (plain TCP on the broker thread): a free port read back,
a restart on the same port while the last connection's socket lingers (SO_REUSEADDR, as
Pulsar's), a port in use as a start-up error that leaves nothing running, and the
connections served from the loop's one wait (no second poll of the transport's own)."""

from __future__ import annotations

import socket
import struct

import pytest

from pulsarlab import Broker
from pulsarlab.broker.pulsar_protocol import FrameDecoder
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api

_CONNECT = api.BaseCommand(type=api.BaseCommand.CONNECT, connect=api.CommandConnect(
    client_version="test", protocol_version=20))


def _connected(port: int) -> socket.socket:
    """A raw pulsar:// connection that completed its CONNECT."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    body = _CONNECT.SerializeToString()
    sock.sendall(struct.pack(">II", len(body) + 4, len(body)) + body)
    head = sock.recv(4, socket.MSG_WAITALL)
    rest = sock.recv(struct.unpack(">I", head)[0], socket.MSG_WAITALL)
    (frame,) = FrameDecoder(1 << 20).feed(head + rest)
    assert frame.command.type == api.BaseCommand.CONNECTED
    return sock


def test_a_restart_on_the_same_port_while_the_last_connection_lingers() -> None:
    with Broker(storage="memory") as first:
        port = first.pulsar_port
        assert port > 0 and first.pulsar_url.endswith(f":{port}")
        client = _connected(port)
    # The broker closed its side first: that socket lingers in TIME_WAIT on the port.
    assert client.recv(1) == b""
    client.close()
    with Broker(storage="memory", broker_service_port=port) as second:
        assert second.pulsar_port == port
        _connected(port).close()


def test_a_pulsar_port_in_use_fails_start_and_leaves_nothing_running() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        broker = Broker(storage="memory", broker_service_port=taken.getsockname()[1])
        with pytest.raises(OSError, match="in use"):
            broker.start()
        broker.stop(timeout=5)
        assert not broker.running


def test_connections_are_served_from_the_loops_one_wait() -> None:
    """The listener's sockets are in the loop's epoll: a turn hands the transport what that
    wait found, and never polls again to learn which socket is ready."""
    with Broker(storage="memory") as broker:

        def no_second_poll(service: object) -> None:
            (listener,) = broker._listeners
            assert listener.readiness is broker._poller.readiness

            def second_poll() -> list[tuple[int, int]]:
                raise AssertionError("the transport polled again")

            listener.readiness.ready = second_poll

        broker.call(no_second_poll)
        clients = [_connected(broker.pulsar_port) for _ in range(3)]  # each served
        for client in clients:
            client.close()
        assert broker.loop_error is None
