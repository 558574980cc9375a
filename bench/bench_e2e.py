"""Benchmark: end-to-end produce → consume → ack through the broker, beside a bare relay.

Every run uses three processes on 127.0.0.1: a producer, a consumer and the middle — either
a pulsarlab broker (the real ``pulsarlab broker`` command) or a bare ZeroMQ relay (ROUTER
in, DEALER out, no logic) forwarding the same payloads. The relay the ratios divide by is the
fastest bare Python relay, a plain ``recv()``/``send()`` loop; the idiomatic
``recv_multipart``/``send_multipart`` relay runs too, as a second column
(``relay_multipart_*``, ``*_vs_multipart_relay``). Both consumers count messages from the
first received to the last. The broker's clients speak Pulsar's binary protocol directly
over a DEALER (one Pulsar frame per ZeroMQ message, the broker's only ZeroMQ protocol), so
this measures the broker, not the client library; the relay forwards the same payloads
(for batches, the same Pulsar batch bytes). The same clients also run against pulsar-lite
(a Pulsar-protocol broker not written here, over pulsar:// TCP) when it is installed:
``pulsar_lite_*`` runs and CPU per message, and ``memory_*_cpu_vs_pulsar_lite`` ratios.
Prints one JSON document: msgs/s per configuration and ``broker / relay`` ratios, plus
latency p50/p99/p999 at a fixed moderate rate (unbatched).

    python bench/bench_e2e.py [--messages N] [--quick] [--unbatched-only]

``broker_cpu_us_per_msg`` is the broker process's CPU per message (user + system, its
Python thread and libzmq's I/O thread): on a shared machine the steadier figure.
``relay_cpu_us_per_msg`` is the bare relay's (its frames in and out, nothing else), and
``client_cpu_us_per_msg`` the same for the bench's producer and consumer (the three
processes share 2 cores, so a heavy client caps the broker).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import zmq

from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.pulsar_protocol.framing import (
    decode_message,
    encode_command,
    encode_payload_command,
)

WINDOW = 2000  # sends in flight before the producer waits for receipts
ACK_GROUP = 100  # message ids per ACK at most (Pulsar's client groups acks too)
T = api.BaseCommand


def _batch_payload(size: int, count: int) -> bytes:
    """A batch in Pulsar's layout: per message its SingleMessageMetadata and payload."""
    parts = []
    for i in range(count):
        single = api.SingleMessageMetadata(payload_size=size, sequence_id=i).SerializeToString()
        parts += [len(single).to_bytes(4, "big"), single, b"x" * size]
    return b"".join(parts)


# -- the bare relay -----------------------------------------------------------------------

def relay_main(front_port, back_port, ready, loop="fast") -> None:
    """The middle without logic. ``fast``: a plain ``recv()``/``send()`` loop, the fastest
    Python relay (the baseline the ratios use); ``multipart``: ``recv_multipart`` /
    ``send_multipart`` with zero-copy frames, the idiomatic loop (a second column)."""
    ctx = zmq.Context()
    front = ctx.socket(zmq.ROUTER)
    back = ctx.socket(zmq.DEALER)
    front.bind(f"tcp://127.0.0.1:{front_port}")
    back.bind(f"tcp://127.0.0.1:{back_port}")
    ready.set()
    if loop == "fast":
        # The producer sends one frame per message: the ROUTER hands over [identity, frame].
        recv, send = front.recv, back.send
        while True:
            recv()
            frame = recv()
            if frame == b"STOP":
                send(b"STOP")
                break
            send(frame)
    else:
        while True:
            frames = front.recv_multipart(copy=False)
            if frames[1].bytes == b"STOP":
                back.send(b"STOP")
                break
            back.send_multipart(frames[1:], copy=False)
    front.close()
    back.close()  # default linger: the queued frames and STOP still go out
    ctx.term()


def relay_producer(port, n, payload, start) -> None:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.connect(f"tcp://127.0.0.1:{port}")
    start.wait()
    for _ in range(n):
        sock.send(payload)
    sock.send(b"STOP")
    sock.close()  # default linger: wait until everything, STOP included, is sent
    ctx.term()


def relay_consumer(port, out) -> None:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.connect(f"tcp://127.0.0.1:{port}")
    recv, clock = sock.recv, time.perf_counter
    count = 0
    first = last = 0.0
    # Counted as the broker's consumer counts: from the first message to the last one.
    msg = recv()
    if msg != b"STOP":
        first = last = clock()
        count = 1
        while (msg := recv()) != b"STOP":
            last = clock()
            count += 1
    out.put((count, last - first))
    ctx.destroy(linger=0)


def run_relay(
    n: int, payload: bytes, per_frame: int, loop: str = "fast", cpu_out: list | None = None
) -> float:
    """msgs/s at the consumer; the relay process's CPU µs per message goes to ``cpu_out``."""
    ctx = mp.get_context("spawn")
    front, back = _free_port(), _free_port()
    ready, start, out = ctx.Event(), ctx.Event(), ctx.Queue()
    relay = ctx.Process(target=relay_main, args=(front, back, ready, loop))
    relay.start()
    ready.wait(30)
    consumer = ctx.Process(target=relay_consumer, args=(back, out))
    producer = ctx.Process(target=relay_producer, args=(front, n, payload, start))
    consumer.start()
    producer.start()
    time.sleep(0.5)
    cpu_before = _cpu_seconds(relay.pid)
    start.set()
    count, elapsed = out.get(timeout=600)
    cpu = _cpu_seconds(relay.pid) - cpu_before
    for p in (producer, consumer, relay):
        p.join(30)
    if cpu_out is not None:
        cpu_out.append(cpu / (count * per_frame) * 1e6)
    return count * per_frame / elapsed


# -- the broker ---------------------------------------------------------------------------

def _command(type_: int, field: str, **fields) -> bytes:
    cmd = T(type=type_)
    getattr(cmd, field).CopyFrom(type(getattr(cmd, field))(**fields))
    return encode_command(cmd)


class _TcpFrames:
    """Pulsar frames over pulsar:// TCP (for the pulsar-lite column) with the few calls of
    a DEALER the bench makes: ``send`` one frame, ``recv`` one frame, ``poll``."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("pulsar://").rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = bytearray()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _complete(self) -> int:
        """The size of the whole first frame in the buffer, 0 if it is not all there."""
        if len(self.buffer) < 4:
            return 0
        size = 4 + int.from_bytes(self.buffer[:4], "big")
        return size if len(self.buffer) >= size else 0

    def recv(self) -> bytes:
        while not (size := self._complete()):
            data = self.sock.recv(1 << 16)
            if not data:
                raise ConnectionError("the peer closed the connection")
            self.buffer += data
        frame = bytes(self.buffer[:size])
        del self.buffer[:size]
        return frame

    def poll(self, timeout_ms: int) -> bool:
        if self._complete():
            return True
        return bool(select.select([self.sock], [], [], timeout_ms / 1000)[0])

    def close(self) -> None:
        self.sock.close()


def _recv(sock):
    """The next frame from the broker (its PINGs answered; pulsar-lite's MESSAGE frames
    carry no checksum)."""
    while True:
        frame = decode_message(sock.recv(), 1 << 30, checksum_optional=True)
        if frame.command.type != T.PING:
            return frame
        sock.send(_command(T.PONG, "pong"))


def _expect(sock, type_: int):
    frame = _recv(sock)
    if frame.command.type != type_:
        raise RuntimeError(f"expected {T.Type.Name(type_)}, got {frame.command}")
    return frame.command


def _connect(url: str):
    """A connected peer (a DEALER, or a TCP socket for a pulsar:// URL) and its closer."""
    if url.startswith("pulsar://"):
        sock = _TcpFrames(url)
        closer = sock.close
    else:
        ctx = zmq.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.connect(url)
        closer = lambda: ctx.destroy(linger=0)  # noqa: E731
    sock.send(_command(T.CONNECT, "connect", client_version="bench", protocol_version=20))
    _expect(sock, T.CONNECTED)
    return closer, sock


def _send_frame(seq: int, payload: bytes, batch: int, event_time: int = 0) -> bytes:
    metadata = api.MessageMetadata(producer_name="bench", sequence_id=seq, publish_time=1)
    if batch > 1:
        metadata.num_messages_in_batch = batch
    if event_time:
        metadata.event_time = event_time
    cmd = T(type=T.SEND, send=api.CommandSend(producer_id=1, sequence_id=seq,
                                              num_messages=batch))
    return encode_payload_command(cmd, metadata.SerializeToString(), payload)


def broker_producer(url, topic, n, payload, batch, start, rate, cpu=None) -> None:
    close, sock = _connect(url)
    sock.send(_command(T.PRODUCER, "producer", topic=topic, producer_id=1, request_id=1,
                       producer_name="bench"))
    _expect(sock, T.PRODUCER_SUCCESS)
    # Every SEND frame (metadata, CRC32C) built before the clock starts: building them as
    # it runs would make the producer, not the broker, the bottleneck on 2 cores.
    frames = [] if rate else [_send_frame(seq, payload, batch) for seq in range(n)]
    send = sock.send
    start.wait()
    cpu_start = time.process_time()
    outstanding = 0
    interval = 1.0 / rate if rate else 0.0
    next_send = time.perf_counter()
    for seq in range(n):
        if rate:
            # Sleep, not spin: on a 2-core machine a spinning producer takes a core from
            # the broker and the consumer, and the latency it measures is its own.
            delay = next_send - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            next_send += interval
            send(_send_frame(seq, payload, batch, time.time_ns() // 1000))
        else:
            send(frames[seq])
        outstanding += 1
        if rate or not seq & 31:  # a poll costs as much as a send: not after every one
            while outstanding and sock.poll(0):
                outstanding -= _receipts(sock)
        while outstanding >= WINDOW:
            outstanding -= _receipts(sock)
    while outstanding:
        outstanding -= _receipts(sock)
    if cpu is not None:
        cpu.put(time.process_time() - cpu_start)
    close()


def _receipts(sock) -> int:
    """Read one frame from the broker; how many sends it answers."""
    frame = _recv(sock)
    kind = frame.command.type
    if kind == T.SEND_ERROR:
        raise RuntimeError(f"send failed: {frame.command.send_error.message}")
    return 1 if kind == T.SEND_RECEIPT else 0


def broker_consumer(url, topic, n_entries, batch, ready, out, latency) -> None:
    close, sock = _connect(url)
    sock.send(_command(T.SUBSCRIBE, "subscribe", topic=topic, subscription="bench",
                       consumer_id=1, request_id=2, subType=api.CommandSubscribe.Shared,
                       initialPosition=api.CommandSubscribe.Earliest))
    _expect(sock, T.SUCCESS)
    queue = 1000
    sock.send(_command(T.FLOW, "flow", consumer_id=1, messagePermits=queue))
    ready.set()
    got = 0
    used = 0
    first = None
    lat: list[int] = []
    cpu_start = None
    acks: list = []
    while got < n_entries:
        frame = _recv(sock)
        if frame.command.type != T.MESSAGE:
            continue
        if first is None:
            first = time.perf_counter()
            cpu_start = time.process_time()
        if latency:
            now_us = time.time_ns() // 1000
            lat.append(now_us - api.MessageMetadata.FromString(frame.metadata).event_time)
        mid = frame.command.message.message_id
        acks.append(api.MessageIdData(ledgerId=mid.ledgerId, entryId=mid.entryId))
        got += 1
        used += batch
        if len(acks) >= ACK_GROUP or not sock.poll(0) or got == n_entries:
            sock.send(_command(T.ACK, "ack", consumer_id=1,
                               ack_type=api.CommandAck.Individual, message_id=acks))
            acks = []
        if used >= queue // 2:
            sock.send(_command(T.FLOW, "flow", consumer_id=1, messagePermits=used))
            used = 0
    elapsed = time.perf_counter() - first
    out.put((got, elapsed, lat, time.process_time() - cpu_start))
    close()


def start_broker(storage: str, data_dir: str) -> tuple[subprocess.Popen, str]:
    args = [sys.executable, "-m", "pulsarlab.broker.cli", "broker", "--port", "0",
            "--pulsar-port", "0", "--web-port", "0",
            "--storage", storage, "--data-dir", data_dir]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    lines = []
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        lines.append(line)
        if line.strip() == "}":
            break
    report = json.loads("".join(lines))
    return proc, report["service_url"].replace("zmq://", "tcp://")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux ``/proc``; 0.0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_broker(storage: str, n_entries: int, payload: bytes, batch: int, rate: int = 0):
    """msgs/s at the consumer, latencies (µs, when ``rate``), the broker process's CPU
    µs per message (its Python thread and libzmq's I/O thread, from start to the last
    message) and the producer's and consumer's CPU µs per message (on 2 cores the three
    processes share the CPU: a heavy client caps the broker)."""
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_broker(storage, tmp)
        try:
            return _run_peer(url, proc.pid, storage, n_entries, payload, batch, rate)
        finally:
            proc.terminate()
            proc.wait(30)


def run_pulsar_lite(n_entries: int, payload: bytes, batch: int):
    """:func:`run_broker`'s figures for the same clients over pulsar:// to pulsar-lite
    (the peer broker), or ``None`` and why when it is not installed."""
    from bench_official import pulsar_lite_process

    try:
        with pulsar_lite_process() as (url, pid):
            return _run_peer(url, pid, "lite", n_entries, payload, batch, 0), None
    except RuntimeError as exc:
        return None, str(exc)


def _run_peer(url: str, pid: int, label: str, n_entries: int, payload: bytes, batch: int,
              rate: int):
    """One run of the producer and consumer processes against the server at ``url`` (its
    process ``pid``): the figures :func:`run_broker` returns."""
    ctx = mp.get_context("spawn")
    topic = f"bench-{label}-{batch}-{rate}"
    ready, start, out, producer_cpu = ctx.Event(), ctx.Event(), ctx.Queue(), ctx.Queue()
    consumer = ctx.Process(
        target=broker_consumer, args=(url, topic, n_entries, batch, ready, out, bool(rate))
    )
    consumer.start()
    ready.wait(60)
    producer = ctx.Process(
        target=broker_producer,
        args=(url, topic, n_entries, payload, batch, start, rate, producer_cpu),
    )
    producer.start()
    cpu_before = _cpu_seconds(pid)
    start.set()
    got, elapsed, lat, consumer_cpu = out.get(timeout=900)
    cpu = _cpu_seconds(pid) - cpu_before
    clients = {"producer": producer_cpu.get(timeout=60), "consumer": consumer_cpu}
    producer.join(60)
    consumer.join(60)
    messages = got * batch
    return (
        messages / elapsed, lat, cpu / messages * 1e6,
        {k: round(v / messages * 1e6, 2) for k, v in clients.items()},
    )


def _free_port() -> int:
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.ROUTER)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    sock.close(linger=0)
    return port


def _pct(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000, 3)


def _pulsar_lite_columns(results: dict, size: int, n: int, payload: bytes, batch: int,
                         kind: str) -> None:
    """The same clients against pulsar-lite: its msgs/s and CPU per message, and the
    broker's (memory storage) CPU per message over pulsar-lite's."""
    figures, why = run_pulsar_lite(n, payload, batch)
    key = f"{size}B_{kind}"
    if figures is None:
        results["pulsar_lite"] = {"unavailable": why}
        return
    rate, _, cpu, clients = figures
    results["runs"][f"pulsar_lite_{key}"] = round(rate)
    results["broker_cpu_us_per_msg"][f"pulsar_lite_{key}"] = round(cpu, 2)
    results["client_cpu_us_per_msg"][f"pulsar_lite_{key}"] = clients
    ours = results["broker_cpu_us_per_msg"].get(f"memory_{key}")
    if ours is not None and cpu > 0:
        results["ratios"][f"memory_{key}_cpu_vs_pulsar_lite"] = round(ours / cpu, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--quick", action="store_true", help="small counts, for a smoke run")
    parser.add_argument(
        "--unbatched-only", action="store_true",
        help="only 100 B, one message per entry (relay, memory, durable): the per-message path",
    )
    args = parser.parse_args()
    n = 5_000 if args.quick else args.messages
    results: dict = {"bench": "e2e", "messages": n, "runs": {}, "ratios": {},
                     "broker_cpu_us_per_msg": {}, "client_cpu_us_per_msg": {}}
    cpu_per_msg = results["broker_cpu_us_per_msg"]
    client_cpu = results["client_cpu_us_per_msg"]
    for size in (100,) if args.unbatched_only else (100, 1024):
        single = b"x" * size
        batched = _batch_payload(size, 100)
        relay_cpu: list[float] = []
        relay_single = run_relay(n, single, 1, cpu_out=relay_cpu)
        results["runs"][f"relay_{size}B_unbatched"] = round(relay_single)
        results.setdefault("relay_cpu_us_per_msg", {})[f"{size}B_unbatched"] = round(
            relay_cpu[0], 2)
        if args.unbatched_only:
            for storage in ("memory", "durable"):
                unb, _, cpu, clients = run_broker(storage, n, single, 1)
                results["runs"][f"broker_{storage}_{size}B_unbatched"] = round(unb)
                cpu_per_msg[f"{storage}_{size}B_unbatched"] = round(cpu, 2)
                client_cpu[f"{storage}_{size}B_unbatched"] = clients
                results["ratios"][f"{storage}_{size}B_unbatched"] = round(unb / relay_single, 3)
            _pulsar_lite_columns(results, size, n, single, 1, "unbatched")
            print(json.dumps(results, indent=2))
            return
        relay_batched = run_relay(max(1, n // 100), batched, 100)
        results["runs"][f"relay_{size}B_batched100"] = round(relay_batched)
        multi_single = run_relay(n, single, 1, "multipart")
        multi_batched = run_relay(max(1, n // 100), batched, 100, "multipart")
        results["runs"][f"relay_multipart_{size}B_unbatched"] = round(multi_single)
        results["runs"][f"relay_multipart_{size}B_batched100"] = round(multi_batched)
        for storage in ("memory", "durable"):
            unb, _, cpu_unb, clients_unb = run_broker(storage, n, single, 1)
            bat, _, cpu_bat, clients_bat = run_broker(storage, max(1, n // 100), batched, 100)
            client_cpu[f"{storage}_{size}B_unbatched"] = clients_unb
            client_cpu[f"{storage}_{size}B_batched100"] = clients_bat
            results["runs"][f"broker_{storage}_{size}B_unbatched"] = round(unb)
            results["runs"][f"broker_{storage}_{size}B_batched100"] = round(bat)
            cpu_per_msg[f"{storage}_{size}B_unbatched"] = round(cpu_unb, 2)
            cpu_per_msg[f"{storage}_{size}B_batched100"] = round(cpu_bat, 2)
            results["ratios"][f"{storage}_{size}B_unbatched"] = round(unb / relay_single, 3)
            results["ratios"][f"{storage}_{size}B_batched100"] = round(bat / relay_batched, 3)
            results["ratios"][f"{storage}_{size}B_unbatched_vs_multipart_relay"] = round(
                unb / multi_single, 3)
            results["ratios"][f"{storage}_{size}B_batched100_vs_multipart_relay"] = round(
                bat / multi_batched, 3)
        _pulsar_lite_columns(results, size, n, single, 1, "unbatched")
        _pulsar_lite_columns(results, size, max(1, n // 100), batched, 100, "batched100")
    rate = 5000
    count = 2_000 if args.quick else 25_000
    _, lat, _, _ = run_broker("durable", count, b"x" * 100, 1, rate=rate)
    results["latency_ms_at_5k_per_s_durable"] = {
        "p50": _pct(lat, 0.50), "p99": _pct(lat, 0.99), "p999": _pct(lat, 0.999),
        "mean": round(statistics.fmean(lat) / 1000, 3),
    }
    # The peer: Redis Streams from Python on the same load (bench_redis.py; it may skip).
    from bench_redis import redis_e2e

    redis = redis_e2e(n)
    results["redis_streams_100B"] = redis
    if "msgs_per_s" in redis:
        results["ratios"]["durable_100B_batched100_vs_redis"] = round(
            results["runs"]["broker_durable_100B_batched100"] / redis["msgs_per_s"], 2
        )
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
