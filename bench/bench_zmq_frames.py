"""Benchmark: broker CPU per message over ZeroMQ (Pulsar frames, one per ZeroMQ message) beside
the same frames over pulsar:// TCP, to the same broker and to pulsar-lite.

One broker process (``pulsarlab broker``, durable storage) and, when it is installed, one
pulsar-lite process (a Pulsar-protocol broker not written here); raw clients in this process
doing the same work per message, in the same run, alternating: unbatched 100 B messages,
produced with a window of outstanding sends, then consumed from a subscription made before
the produce (permits as Pulsar's client gives them: 1000, then 500 more each time 500
arrived) and acknowledged one by one. The serving process's CPU time (user + system, from
the OS) over each phase divided by the messages is the figure; client-side msgs/s are
printed too. Three columns, the same frames each time: ``pulsar_frames`` over the broker's
ZeroMQ ROUTER (a DEALER; served by PulsarSession), ``pulsar_tcp`` over its pulsar:// socket
(the same session behind another transport: the ZeroMQ transport's own cost), and
``pulsar_lite`` over pulsar-lite's pulsar:// socket (the peer). Prints one JSON document.

    python bench/bench_zmq_frames.py [--messages N] [--runs R]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

import psutil
import zmq

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH_DIR)

from bench_official import pulsar_lite_process  # noqa: E402
from benchlib import start_broker_report, stop_broker  # noqa: E402

from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api  # noqa: E402
from pulsarlab.broker.pulsar_protocol.framing import (  # noqa: E402
    FrameDecoder,
    decode_message,
    encode_command,
    encode_payload_command,
)

PAYLOAD = b"x" * 100
WINDOW = 1000  # sends outstanding at once
FIRST_PERMITS, MORE_PERMITS = 1000, 500
T = api.BaseCommand
_TOPICS = itertools.count()


def _dealer(url: str) -> zmq.Socket:
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    sock.sndhwm = sock.rcvhwm = 0
    sock.connect(url.replace("zmq://", "tcp://"))
    return sock


def _command(type_: int, field: str, **fields) -> bytes:
    cmd = T(type=type_)
    getattr(cmd, field).CopyFrom(type(getattr(cmd, field))(**fields))
    return encode_command(cmd)


class PulsarFrames:
    """Pulsar's commands, one frame per ZeroMQ message."""

    name = "pulsar_frames"

    def __init__(self, urls: dict) -> None:
        self.sock = self._connect(urls)
        self.sock.send(_command(T.CONNECT, "connect", client_version="bench",
                                protocol_version=20))
        self._expect(T.CONNECTED)

    def _connect(self, urls: dict):
        return _dealer(urls["service_url"])

    def _read(self):
        return decode_message(self.sock.recv(), 1 << 30)

    def _recv(self):
        while True:
            command = self._read()
            if command.command.type == T.PING:
                self.sock.send(_command(T.PONG, "pong"))
                continue
            return command

    def _expect(self, type_: int):
        frame = self._recv()
        assert frame.command.type == type_, frame.command
        return frame

    def subscribe(self, topic: str, consumer_id: int) -> None:
        self.sock.send(_command(T.SUBSCRIBE, "subscribe", topic=topic, subscription="s",
                                consumer_id=consumer_id, request_id=consumer_id,
                                subType=api.CommandSubscribe.Exclusive,
                                initialPosition=api.CommandSubscribe.Earliest))
        self._expect(T.SUCCESS)

    def close_consumer(self, consumer_id: int) -> None:
        self.sock.send(_command(T.CLOSE_CONSUMER, "close_consumer", consumer_id=consumer_id,
                                request_id=1000 + consumer_id))
        self._expect(T.SUCCESS)

    def produce(self, topic: str, n: int) -> None:
        self.sock.send(_command(T.PRODUCER, "producer", topic=topic, producer_id=1,
                                request_id=2))
        name = self._expect(T.PRODUCER_SUCCESS).command.producer_success.producer_name
        frames = []
        for seq in range(n):
            md = api.MessageMetadata(producer_name=name, sequence_id=seq,
                                     publish_time=int(time.time() * 1000))
            cmd = T(type=T.SEND, send=api.CommandSend(producer_id=1, sequence_id=seq))
            frames.append(encode_payload_command(cmd, md.SerializeToString(), PAYLOAD))
        self.timed = _window(n, lambda seq: self.sock.send(frames[seq]),
                             lambda: self._expect(T.SEND_RECEIPT) and 1)

    def consume(self, topic: str, n: int) -> None:
        sock = self.sock
        sock.send(_command(T.FLOW, "flow", consumer_id=2, messagePermits=FIRST_PERMITS))
        received = 0
        while received < n:
            frame = self._expect(T.MESSAGE)
            mid = frame.command.message.message_id
            sock.send(_command(T.ACK, "ack", consumer_id=2, ack_type=api.CommandAck.Individual,
                               message_id=[api.MessageIdData(ledgerId=mid.ledgerId,
                                                             entryId=mid.entryId)]))
            received += 1
            if received % MORE_PERMITS == 0:
                sock.send(_command(T.FLOW, "flow", consumer_id=2, messagePermits=MORE_PERMITS))


class PulsarTcp(PulsarFrames):
    """The same frames over pulsar:// (a plain TCP socket, Pulsar's length framing): the
    same PulsarSession behind another transport."""

    name = "pulsar_tcp"
    checksum_optional = False

    def _connect(self, urls: dict):
        host, port = urls["pulsar_url"].removeprefix("pulsar://").rsplit(":", 1)
        sock = socket.create_connection((host, int(port)))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._decoder = FrameDecoder(1 << 30, checksum_optional=self.checksum_optional)
        self._frames: list = []
        return sock

    def _read(self):
        while not self._frames:
            data = self.sock.recv(1 << 16)
            if not data:
                raise ConnectionError("the broker closed the connection")
            self._frames = self._decoder.feed(data)[::-1]
        return self._frames.pop()


class PulsarLite(PulsarTcp):
    """The same frames over pulsar:// to pulsar-lite (the peer broker)."""

    name = "pulsar_lite"
    checksum_optional = True  # its MESSAGE frames carry no CRC32C

    def _connect(self, urls: dict):
        return super()._connect({"pulsar_url": urls["pulsar_lite_url"]})


def _window(n: int, send: Callable[[int], None], settle: Callable[[], int]) -> None:
    """Send ``n`` messages with at most WINDOW unsettled; ``settle()`` reads one answer
    and says how many sends it settles."""
    sent = settled = 0
    while settled < n:
        while sent < n and sent - settled < WINDOW:
            send(sent)
            sent += 1
        settled += settle()


def _phase(broker: psutil.Process, work: Callable[[], None], n: int) -> dict[str, float]:
    before = broker.cpu_times()
    began = time.perf_counter()
    work()
    wall = time.perf_counter() - began
    after = broker.cpu_times()
    cpu = (after.user - before.user) + (after.system - before.system)
    return {"broker_cpu_us_per_msg": cpu / n * 1e6, "msgs_per_s": n / wall}


def run_once(server: psutil.Process, urls: dict, kind: type, n: int) -> dict[str, dict]:
    client = kind(urls)
    topic = f"persistent://public/default/bench-zmq-frames-{next(_TOPICS)}"
    client.subscribe(topic, 1)  # the backlog is kept for the consume phase
    client.close_consumer(1)
    produce = _phase(server, lambda: client.produce(topic, n), n)
    client.subscribe(topic, 2)
    consume = _phase(server, lambda: client.consume(topic, n), n)
    client.sock.close()
    return {"produce": produce, "consume_ack": consume}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    lite_error = None
    with contextlib.ExitStack() as stack:
        data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-zmq-frames-"))
        proc, urls, _ready = start_broker_report(data_dir)
        stack.callback(stop_broker, proc)
        broker = psutil.Process(proc.pid)
        servers = {PulsarFrames: broker, PulsarTcp: broker}
        try:
            lite_url, lite_pid = stack.enter_context(pulsar_lite_process())
            urls = {**urls, "pulsar_lite_url": lite_url}
            servers[PulsarLite] = psutil.Process(lite_pid)
        except RuntimeError as exc:  # not installed: the broker's own columns only
            lite_error = str(exc)
        kinds = tuple(servers)
        for kind in kinds:  # warm-up: imports, first topic, JIT-free but cache-warm
            run_once(servers[kind], urls, kind, min(2000, args.messages))
        samples: dict[str, list] = {kind.name: [] for kind in kinds}
        for run in range(args.runs):
            for kind in kinds if run % 2 == 0 else reversed(kinds):
                samples[kind.name].append(run_once(servers[kind], urls, kind, args.messages))
    result: dict = {
        "benchmark": "bench_zmq_frames",
        "messages": args.messages, "runs": args.runs, "payload_bytes": len(PAYLOAD),
        "python": platform.python_version(), "cpus": os.cpu_count(),
    }
    for name, runs in samples.items():
        result[name] = {
            phase: {
                key: round(statistics.median(r[phase][key] for r in runs), 2)
                for key in ("broker_cpu_us_per_msg", "msgs_per_s")
            }
            for phase in ("produce", "consume_ack")
        }
    if lite_error is not None:
        result["pulsar_lite"] = {"unavailable": lite_error}
    for other in ("pulsar_tcp", "pulsar_lite"):
        if "produce" not in result[other]:
            continue
        result[f"pulsar_frames_vs_{other}_broker_cpu"] = {
            phase: round(result["pulsar_frames"][phase]["broker_cpu_us_per_msg"]
                         / result[other][phase]["broker_cpu_us_per_msg"], 2)
            for phase in ("produce", "consume_ack")
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
