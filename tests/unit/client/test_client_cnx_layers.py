"""The client's Pulsar connection in layers (ARCHITECTURE.md): each module imports only the
layers below it, the socket says why it is lost without deciding what that means, and a
lost socket answers its waiting requests as Pulsar's clients do (ServiceNotReady)."""

from __future__ import annotations

import ast
import pathlib

import pytest
import zmq

from pulsarlab.broker.client.client_cnx import ClientCnx
from pulsarlab.broker.client.pending_requests import PendingRequests
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as pb
from pulsarlab.broker.pulsar_protocol.framing import Frame, encode_command

CLIENT = pathlib.Path(__file__).resolve().parents[3] / "broker" / "client"

# Bottom up: a module may import the ones before it, never one after it.
LAYERS = [
    "client_cnx", "pending_requests", "connection_pool", "inbound_commands",
    "lookup_service", "connection_handler", "producer_commands", "consumer_commands",
    "pulsar_connection",
]


def client_imports(module: str) -> set[str]:
    tree = ast.parse((CLIENT / f"{module}.py").read_text())
    return {node.module for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module}


@pytest.mark.parametrize("module", LAYERS)
def test_a_layer_imports_no_layer_above_it(module):
    above = set(LAYERS[LAYERS.index(module) + 1:])
    assert client_imports(module) & above == set()


def test_the_check_sees_the_imports():
    assert "connection_pool" in client_imports("lookup_service")


def command(kind: int, **fields) -> pb.BaseCommand:
    cmd = pb.BaseCommand(type=kind)
    for name, value in fields.items():
        getattr(cmd, name).request_id = value
    return cmd


def lookup() -> pb.BaseCommand:
    cmd = pb.BaseCommand(type=pb.BaseCommand.LOOKUP)
    cmd.lookupTopic.topic = "persistent://public/default/t"
    return cmd


def seek() -> pb.BaseCommand:
    cmd = pb.BaseCommand(type=pb.BaseCommand.SEEK)
    cmd.seek.consumer_id = 1
    cmd.seek.message_publish_time = 0
    return cmd


def test_an_answer_goes_to_its_request_by_id():
    requests = PendingRequests()
    cnx = ClientCnx("pulsar://a:6650", 1 << 20, over_zmq=False)
    got: dict[str, Frame] = {}
    requests.send(cnx, lookup(), "lookupTopic",
                  lambda frame: got.setdefault("lookup", frame))
    requests.send(cnx, seek(), "seek",
                  lambda frame: got.setdefault("seek", frame))
    assert len(cnx.outbox) == 2
    success = Frame(command(pb.BaseCommand.SUCCESS, success=2))
    assert requests.answer(success) is True
    assert got == {"seek": success}
    assert requests.answer(success) is False  # answered once only
    assert requests.answer(Frame(pb.BaseCommand(type=pb.BaseCommand.PONG))) is False


def test_a_lost_socket_answers_its_requests_service_not_ready_and_no_others():
    requests = PendingRequests()
    lost = ClientCnx("pulsar://a:6650", 1 << 20, over_zmq=False)
    kept = ClientCnx("pulsar://b:6650", 1 << 20, over_zmq=False)
    answers: list[tuple[str, pb.BaseCommand]] = []
    requests.send(lost, seek(), "seek",
                  lambda frame: answers.append(("lost", frame.command)))
    requests.send(kept, seek(), "seek",
                  lambda frame: answers.append(("kept", frame.command)))
    requests.fail(lost, ConnectionError("connection to pulsar://a:6650 closed"))
    assert [(who, cmd.type, cmd.error.error, cmd.error.request_id, cmd.error.message)
            for who, cmd in answers] == [
        ("lost", pb.BaseCommand.ERROR, pb.ServiceNotReady, 1,
         "connection to pulsar://a:6650 closed")]
    assert requests.answer(Frame(command(pb.BaseCommand.SUCCESS, success=2))) is True


class ScriptedSocket:
    """What ``recv`` returns, in turn; then it would block."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = list(chunks)

    def recv(self, _size: int) -> bytes:
        if not self.chunks:
            raise BlockingIOError
        return self.chunks.pop(0)


def stream_cnx(*chunks: bytes) -> ClientCnx:
    cnx = ClientCnx("pulsar://a:6650", 1 << 20, over_zmq=False)
    cnx.sock = ScriptedSocket(*chunks)
    cnx.waiting_for_pong = True
    return cnx


def test_a_read_returns_the_frames_and_any_traffic_answers_the_ping():
    ping = encode_command(pb.BaseCommand(type=pb.BaseCommand.PING))
    cnx = stream_cnx(ping + ping[:3], ping[3:])
    frames, lost = cnx.read()
    assert [f.command.type for f in frames] == [pb.BaseCommand.PING]
    assert lost is None and cnx.waiting_for_pong is False
    frames, lost = cnx.read()
    assert [f.command.type for f in frames] == [pb.BaseCommand.PING] and lost is None


def test_a_closed_socket_says_so_after_handing_over_what_came_before():
    ping = encode_command(pb.BaseCommand(type=pb.BaseCommand.PING))
    cnx = stream_cnx(ping, b"")
    frames, lost = cnx.read()  # one recv per turn of the loop on a plain socket
    assert [f.command.type for f in frames] == [pb.BaseCommand.PING] and lost is None
    assert cnx.read() == ([], "connection to pulsar://a:6650 closed")


def test_a_zmq_hang_up_hands_over_the_frames_before_it():
    ping = encode_command(pb.BaseCommand(type=pb.BaseCommand.PING))

    class Dealer(ScriptedSocket):
        def recv(self, _flags: int) -> bytes:
            if not self.chunks:
                raise zmq.Again
            return self.chunks.pop(0)

    cnx = ClientCnx("zmq://a:6650", 1 << 20, over_zmq=True)
    cnx.sock = Dealer(ping, ping, b"", ping)
    frames, lost = cnx.read()
    assert [f.command.type for f in frames] == [pb.BaseCommand.PING] * 2
    assert lost == "the broker at zmq://a:6650 closed the connection"


def test_a_bad_frame_loses_the_socket_with_its_reason():
    frames, lost = stream_cnx(b"\xff\xff\xff\xff\x00\x00\x00\x01x").read()
    assert frames == []
    assert lost is not None and lost.startswith("bad frame from pulsar://a:6650")
