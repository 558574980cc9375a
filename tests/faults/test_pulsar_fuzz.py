"""Live fuzzing of stored messages (issue 23): mutated pulsar:// SENDs, read back on both faces.

A seeded fuzzer opens raw pulsar:// connections to a broker process, each with a producer and
a consumer on one topic (a pulsarlab ZeroMQ consumer reads it too, so every entry also goes
out over the ZeroMQ face), and sends SEND frames whose metadata takes any value of Pulsar's
protobuf types (uint64 maxima, negative int32 chunk fields, any codec, batch counts and
layouts, encryption keys) with random, truncated or valid batch payloads; some frames then
get bytes flipped (a bad checksum or broken framing, which costs that connection). Between
chunks the official client's producer and consumer on another topic must be served, in
order, exactly once; at the end the broker is alive and never logged a crashed loop.
"""

from __future__ import annotations

import random
import socket
import threading
from pathlib import Path

import pulsar

import pulsarlab
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.pulsar_protocol.framing import (
    FrameDecoder,
    encode_command,
    encode_payload_command,
)

from .support import SESSION, BrokerProcess, serve_healthy

T = api.BaseCommand
FRAMES = 3_000
CHUNK = 300
FUZZ_TOPIC = "persistent://public/default/poison"
HEALTHY_TOPIC = "persistent://public/default/healthy"
U64 = (1 << 64) - 1
I32 = (1 << 31) - 1


class SendFuzzer:
    """SEND frames with hostile metadata and payloads, from a seed."""

    def __init__(self, seed: str) -> None:
        self.rng = random.Random(seed)

    def u64(self) -> int:
        r = self.rng
        return r.choice([0, 1, U64, U64 - 1, 1 << 63, (1 << 63) - 1, r.randrange(U64 + 1)])

    def i32(self) -> int:
        r = self.rng
        return r.choice([0, 1, -1, I32, -I32 - 1, r.randint(-I32 - 1, I32)])

    def batch_payload(self, n: int) -> bytes:
        r = self.rng
        parts = []
        for _ in range(max(0, min(n, 8))):
            data = r.randbytes(r.randrange(16))
            single = api.SingleMessageMetadata(payload_size=len(data), event_time=self.u64(),
                                               sequence_id=self.u64())
            raw = single.SerializeToString()
            parts += [len(raw).to_bytes(4, "big"), raw, data]
        good = b"".join(parts)
        roll = r.random()
        if roll < 0.4:
            return good
        if roll < 0.7:
            return good[: r.randrange(len(good) + 1)]
        return r.randbytes(r.randrange(64))

    def send(self, producer_id: int, seq: int) -> bytes:
        r = self.rng
        md = api.MessageMetadata(producer_name="fuzz", sequence_id=self.u64(),
                                 publish_time=r.choice([0, 1, self.u64()]))
        if r.random() < 0.5:
            md.event_time = self.u64()
        if r.random() < 0.3:
            md.highest_sequence_id = self.u64()
        if r.random() < 0.3:
            md.deliver_at_time = r.choice([-1, 1, (1 << 63) - 1])
        if r.random() < 0.3:
            md.uuid = "u"
            md.num_chunks_from_msg, md.total_chunk_msg_size, md.chunk_id = (
                self.i32(), self.i32(), self.i32())
        if r.random() < 0.2:
            md.marker_type = self.i32()
        if r.random() < 0.3:
            md.compression = r.choice(list(api.CompressionType.values()))
            md.uncompressed_size = r.choice([0, 10, U64 >> 32])
        if r.random() < 0.1:
            md.encryption_keys.append(api.EncryptionKeys(key="k", value=b"v"))
        if r.random() < 0.2:
            md.partition_key = r.choice(["", "k", "\u2603" * 3])
            md.ordering_key = r.randbytes(4)
        payload = r.randbytes(r.randrange(32))
        if r.random() < 0.5:
            md.num_messages_in_batch = r.choice([self.i32(), r.randint(1, 8)])
            payload = self.batch_payload(md.num_messages_in_batch)
        cmd = T(type=T.SEND, send=api.CommandSend(producer_id=producer_id, sequence_id=seq))
        frame = bytearray(encode_payload_command(cmd, md.SerializeToString(), payload))
        if r.random() < 0.15:  # mutated on the way: a bad checksum or broken framing
            for _ in range(r.randint(1, 4)):
                frame[r.randrange(len(frame))] = r.randrange(256)
        return bytes(frame)


def framed_whole(frame: bytes) -> bool:
    """Whether the frame's size field still says how long it is."""
    return len(frame) >= 4 and int.from_bytes(frame[:4], "big") == len(frame) - 4


class RawConnection:
    """A pulsar:// socket with a producer (1) and a consumer (2) on the fuzz topic; once the
    producer is ready, what the broker sends back is read and dropped on a thread."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.sock = socket.create_connection(address, timeout=30)
        self.closed = threading.Event()
        for cmd, field, body in [
            (T.CONNECT, "connect", api.CommandConnect(client_version="fuzz",
                                                      protocol_version=20)),
            (T.PRODUCER, "producer", api.CommandProducer(topic=FUZZ_TOPIC, producer_id=1,
                                                         request_id=1)),
            (T.SUBSCRIBE, "subscribe", api.CommandSubscribe(
                topic=FUZZ_TOPIC, subscription="raw", subType=api.CommandSubscribe.Shared,
                consumer_id=2, request_id=2)),
            (T.FLOW, "flow", api.CommandFlow(consumer_id=2, messagePermits=100_000)),
        ]:
            command = T(type=cmd)
            getattr(command, field).CopyFrom(body)
            self.send(encode_command(command))
        self._await_producer()
        threading.Thread(target=self._drain, daemon=True).start()

    def _await_producer(self) -> None:
        """Read until PRODUCER_SUCCESS: like every Pulsar client, send only to a ready producer
        (3.3's ServerCnx closes a connection that sends for one still being created)."""
        decoder = FrameDecoder(5 << 20)
        while True:
            data = self.sock.recv(65536)
            assert data, "the broker closed a raw connection before its producer was ready"
            for frame in decoder.feed(data):
                assert frame.command.type != T.ERROR, frame.command
                if frame.command.type == T.PRODUCER_SUCCESS:
                    return

    def _drain(self) -> None:
        try:
            while self.sock.recv(65536):
                pass
        except OSError:
            pass
        self.closed.set()

    def send(self, data: bytes) -> bool:
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def close(self) -> None:
        self.sock.close()


def test_live_broker_delivers_or_refuses_every_mutated_send_and_serves_a_healthy_client(
    tmp_path: Path,
) -> None:
    broker = BrokerProcess(tmp_path / "data", log_path=tmp_path / "broker.log").start()
    host, port = broker.report["pulsar_url"].removeprefix("pulsar://").rsplit(":", 1)
    address = (host, int(port))
    fuzzer = SendFuzzer("pulsar-send-fuzz")
    official = pulsar.Client(broker.report["pulsar_url"], operation_timeout_seconds=30,
                             logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    ours = pulsarlab.Client(broker.service_url)
    connections: list[RawConnection] = []
    sent: list[bytes] = []
    received: list[bytes] = []
    try:
        zmq_reader = ours.subscribe(FUZZ_TOPIC, "zmq",
                                    consumer_type=pulsarlab.ConsumerType.Shared)
        producer = official.create_producer(HEALTHY_TOPIC, batching_enabled=False)
        consumer = official.subscribe(HEALTHY_TOPIC, "healthy")
        conn = RawConnection(address)
        connections.append(conn)
        for chunk in range(FRAMES // CHUNK):
            SESSION.check(f"pulsar:// fuzzing, chunk {chunk}")
            for seq in range(CHUNK):
                frame = fuzzer.send(1, seq)
                if conn.closed.is_set() or not conn.send(frame) or not framed_whole(frame):
                    # A mutated frame cost that connection; or its size now claims bytes
                    # that never come, and the broker (as Pulsar) waits for them: give up on it.
                    conn.close()
                    conn = RawConnection(address)
                    connections.append(conn)
            assert broker.alive(), f"broker died:\n{broker.log_text()[-3000:]}"
            serve_healthy(producer, consumer, str(chunk), sent, received)
            while True:  # the ZeroMQ consumer takes what was delivered to it
                try:
                    zmq_reader.acknowledge(zmq_reader.receive(timeout_millis=0))
                except pulsarlab.Timeout:
                    break
        assert received == sent
        assert len(connections) > 1, "no mutated frame ever cost a connection"
        with pulsarlab.Admin(broker.web_url) as admin:
            stats = admin.topics.get_stats(FUZZ_TOPIC)
        # Many hostile sends were stored (and so delivered to both faces), not just refused.
        assert stats["msgInCounter"] > FRAMES // 10, (stats, broker.log_text()[-3000:])
        assert broker.alive()
        log = broker.log_text()
        assert "loop crashed" not in log and "Traceback" not in log, log[-3000:]
    finally:
        for c in connections:
            c.close()
        ours.close()
        official.close()
        broker.kill()
