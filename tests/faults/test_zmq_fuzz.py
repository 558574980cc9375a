"""Bad-input fuzzing over ZeroMQ (R-WIRE): the frame decoder and the live broker take anything.

* Property (hypothesis): :func:`decode_message` turns any bytes into a frame or a
  ``FrameError``, never another exception.
* Live: a seeded fuzzer sends 100k hostile messages to a broker process over its ZeroMQ
  socket, from short-lived DEALER peers: random bytes (half of them starting like a Pulsar
  frame), truncated and bit-flipped frames, messages of several parts, first messages that
  are not Pulsar at all (the msgpack wire's), and well-framed commands of every type whose
  fields take hostile values of their protobuf types (reflection fills them: uint64
  maxima, negative ints, odd topic names, missing required fields). Each peer ends with a
  PING: its PONG, or the broker's close notice, must come back (no hang, no silent drop).
  Broker RSS growth stays under a generous bound, and a healthy ``pulsarlab.Client``
  (producer and Shared consumer, another namespace) is served throughout with exact
  delivery: everything it sent arrives once, in order.

Stored-message fuzzing (hostile SEND metadata and batches) is :mod:`.test_pulsar_fuzz`.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq
from google.protobuf.descriptor import FieldDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsarlab import Admin, Client, ConsumerType
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.pulsar_protocol.framing import (
    FrameError,
    decode_message,
    encode_command,
    encode_payload_command,
)

from .support import SESSION, BrokerProcess, serve_healthy, wait_until

T = api.BaseCommand
FRAMES = 100_000
CHUNK = 1_000
PER_PEER = 20  # hostile messages per DEALER peer at most (many are closed before: a SEND
# to a producer it never opened costs a Pulsar connection, as on Pulsar)
RSS_GROWTH_LIMIT = 256 * 1024 * 1024
BARRIER_TIMEOUT_MS = 30_000
HEALTHY_TOPIC = "persistent://healthy/ns/steady"


# -- the decoder, property-based ----------------------------------------------------------


@settings(max_examples=600, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.one_of(
    st.binary(max_size=64),
    st.binary(max_size=48).map(lambda b: struct.pack(">I", len(b)) + b),
    st.tuples(st.integers(0, 40), st.binary(max_size=40)).map(
        lambda t: struct.pack(">II", len(t[1]) + 4, t[0]) + t[1]),
))
def test_decode_gives_a_frame_or_a_frame_error(data: bytes) -> None:
    try:
        frame = decode_message(data, 1 << 20)
    except FrameError as exc:
        assert str(exc)
        return
    assert isinstance(frame.command, T)


# -- the live fuzzer -------------------------------------------------------------------------

_U64 = (0, 1, 2, 5, (1 << 63) - 1, 1 << 63, (1 << 64) - 1)
_I64 = (0, 1, 2, 5, -1, (1 << 63) - 1, -(1 << 63))
_U32 = (0, 1, 2, 5, 1000, (1 << 31) - 1, (1 << 32) - 1)
_I32 = (0, 1, 2, 5, -1, (1 << 31) - 1, -(1 << 31))
_TOPICS = ("fuzz-a", "fuzz-b", "persistent://fuzz/ns/c", "non-persistent://fuzz/ns/d",
           "fuzz-a-partition-3", "", "a/b/c/d/e", "\x00\xff", "persistent://public/default/z")
_NAMES = ("", "s1", "s2", "x" * 300, "\u2603", "public/default", "fuzz/ns", "bad")
# Every command type but PING (each peer's barrier is a PING; a hostile one would answer
# early) and CONNECT (sent first, on its own).
_TYPES = [t for t in T.Type.values() if t not in (T.PING, T.CONNECT)]
_WEIGHTED = [*_TYPES, *([T.SEND] * 8), *([T.SUBSCRIBE] * 4), *([T.PRODUCER] * 4),
             *([T.FLOW] * 3), *([T.ACK] * 3), T.SEEK, T.REDELIVER_UNACKNOWLEDGED_MESSAGES]
# The BaseCommand field of each command type (its name is the type's, in some spelling; a
# few transaction answers have none here and go without a body).
_FIELD_OF = {}
for _field in T.DESCRIPTOR.fields:
    if _field.message_type is not None:
        _key = _field.name.replace("_", "").lower()
        for _name, _number in T.Type.items():
            if _name.replace("_", "").lower() in (_key, _key.removesuffix("topic")):
                _FIELD_OF[_number] = _field.name
_FIELD_OF.update({T.PARTITIONED_METADATA: "partitionMetadata",
                  T.PARTITIONED_METADATA_RESPONSE: "partitionMetadataResponse",
                  T.LOOKUP_RESPONSE: "lookupTopicResponse"})


class Fuzzer:
    """Seeded generator of hostile ZeroMQ messages."""

    def __init__(self, seed: str) -> None:
        self.rng = random.Random(seed)

    def fill(self, message: Any, depth: int = 0) -> None:
        """Give a protobuf message's fields hostile values of their types."""
        r = self.rng
        for field in message.DESCRIPTOR.fields:
            if r.random() < (0.02 if _required(field) else 0.3):  # left out, even required
                continue
            count = r.randint(0, 3) if _repeated(field) else 1
            for _ in range(count):
                if field.type == FieldDescriptor.TYPE_MESSAGE:
                    if depth >= 3:
                        break
                    child = (getattr(message, field.name).add()
                             if _repeated(field)
                             else getattr(message, field.name))
                    self.fill(child, depth + 1)
                    if not _repeated(field):
                        child.SetInParent()
                    continue
                value = self.value(field)
                if _repeated(field):
                    getattr(message, field.name).append(value)
                else:
                    setattr(message, field.name, value)

    def value(self, field: FieldDescriptor) -> Any:
        r = self.rng
        t = field.type
        if t == FieldDescriptor.TYPE_ENUM:
            return r.choice([v.number for v in field.enum_type.values])
        if t == FieldDescriptor.TYPE_BOOL:
            return r.random() < 0.5
        if t == FieldDescriptor.TYPE_STRING:
            if "topic" in field.name:
                return r.choice(_TOPICS)
            return r.choice(_NAMES)
        if t == FieldDescriptor.TYPE_BYTES:
            return r.randbytes(r.randint(0, 16))
        if t in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
            return r.choice((*_U64, r.randrange(1 << 64)))
        if t in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64,
                 FieldDescriptor.TYPE_SFIXED64):
            return r.choice(_I64)
        if t in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32):
            return r.choice(_U32)
        if t in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32,
                 FieldDescriptor.TYPE_SFIXED32):
            return r.choice(_I32)
        if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
            return r.random() * 1e6
        raise AssertionError(f"unexpected field type {t}")

    def command(self) -> bytes:
        """A well-framed command of any type with hostile field values."""
        r = self.rng
        type_ = r.choice(_WEIGHTED)
        cmd = T(type=type_)
        name = _FIELD_OF.get(type_)
        if name is not None:
            self.fill(getattr(cmd, name))
            getattr(cmd, name).SetInParent()
        if r.random() < 0.1:  # another command's body too, or none at all
            other = _FIELD_OF[r.choice(list(_FIELD_OF))]
            self.fill(getattr(cmd, other))
            getattr(cmd, other).SetInParent()
        body = cmd.SerializePartialToString()
        if type_ == T.SEND and r.random() < 0.9:
            metadata = api.MessageMetadata()
            self.fill(metadata)
            return _payload_frame(body, metadata.SerializePartialToString(),
                                  r.randbytes(r.randint(0, 64)))
        return struct.pack(">II", len(body) + 4, len(body)) + body

    def messages(self) -> list[bytes]:
        """One hostile ZeroMQ message (its parts)."""
        r = self.rng
        roll = r.random()
        # Most are well framed (a session lives on to take more); the rest cost the peer
        # its connection.
        if roll < 0.94:
            return [self.command()]
        if roll < 0.96:
            data = r.randbytes(r.randint(0, 40))
            return [b"\x00" + data if r.random() < 0.5 else data]
        if roll < 0.98:
            frame = bytearray(self.command())
            for _ in range(r.randint(1, 3)):
                frame[r.randrange(len(frame))] = r.randrange(256)
            return [bytes(frame)]
        if roll < 0.99:
            frame = self.command()
            return [frame[: r.randrange(len(frame))]]
        return [self.command(), r.randbytes(r.randint(0, 8))]

    def first(self) -> list[bytes]:
        """A peer's first message: mostly a CONNECT, sometimes anything else."""
        r = self.rng
        roll = r.random()
        if roll < 0.9:
            return [encode_command(T(type=T.CONNECT, connect=api.CommandConnect(
                client_version="fuzz", protocol_version=r.choice((0, 6, 20, 21, 1 << 20)))))]
        if roll < 0.95:
            return [msgpack.packb({"v": 1, "cmd": "CONNECT", "rid": 1, "client_version": "x"})]
        return self.messages()


def _repeated(field: FieldDescriptor) -> bool:
    """Whether a field is repeated (``label`` is gone from newer protobuf releases)."""
    repeated = getattr(field, "is_repeated", None)
    if repeated is None:
        return field.label == FieldDescriptor.LABEL_REPEATED
    return bool(repeated)


def _required(field: FieldDescriptor) -> bool:
    required = getattr(field, "is_required", None)
    if required is None:
        return field.label == FieldDescriptor.LABEL_REQUIRED
    return bool(required)


def _payload_frame(command: bytes, metadata: bytes, payload: bytes) -> bytes:
    """A SEND frame around a possibly partial command (its checksum right)."""
    if not command:
        return struct.pack(">II", 4, 0)
    cmd = T()
    cmd.MergeFromString(command)
    if cmd.IsInitialized():
        return encode_payload_command(cmd, metadata, payload)
    return struct.pack(">II", len(command) + 4, len(command)) + command


def _barrier(sock: zmq.Socket) -> str:
    """Send a PING and read until its PONG or the broker's close notice (every other frame
    must decode); fail if neither comes."""
    sock.send(encode_command(T(type=T.PING, ping=api.CommandPing())))
    while True:
        if not sock.poll(BARRIER_TIMEOUT_MS):
            raise AssertionError("the broker answered neither PING nor with a close: hung?")
        (message,) = sock.recv_multipart()
        if not message:
            return "closed"
        try:
            frame = decode_message(message, 1 << 30)
        except FrameError as exc:  # the broker must only send valid frames
            raise AssertionError(f"the broker sent an invalid frame: {exc}") from None
        if frame.command.type == T.PONG:
            return "pong"
        if frame.command.type == T.PING:
            sock.send(encode_command(T(type=T.PONG, pong=api.CommandPong())))


def test_live_broker_survives_100k_hostile_messages_and_serves_a_healthy_client(
    tmp_path: Path,
) -> None:
    broker = BrokerProcess(tmp_path / "data", log_path=tmp_path / "broker.log").start()
    fuzzer = Fuzzer("live-zmq-fuzz")
    ctx = zmq.Context()
    url = broker.service_url.replace("zmq://", "tcp://")
    client = Client(broker.service_url, operation_timeout_seconds=30)
    sent: list[bytes] = []
    received: list[bytes] = []
    outcomes = {"pong": 0, "closed": 0}
    try:
        producer = client.create_producer(HEALTHY_TOPIC, send_timeout_millis=30_000)
        consumer = client.subscribe(HEALTHY_TOPIC, "healthy", consumer_type=ConsumerType.Shared)
        baseline = None
        messages = 0
        for chunk in range(FRAMES // CHUNK):
            SESSION.check(f"live fuzzing, chunk {chunk}")
            done = 0
            while done < CHUNK:
                sock = ctx.socket(zmq.DEALER)
                sock.linger = 0
                sock.connect(url)
                try:
                    sock.send_multipart(fuzzer.first())
                    for _ in range(fuzzer.rng.randint(1, PER_PEER)):
                        sock.send_multipart(fuzzer.messages())
                        done += 1
                    outcomes[_barrier(sock)] += 1
                finally:
                    sock.close(linger=0)
            messages += done
            assert broker.alive(), f"broker died:\n{broker.log_text()[-3000:]}"
            # The healthy client is served between every chunk, in order, exactly once.
            serve_healthy(producer, consumer, str(chunk), sent, received)
            if chunk == 9:
                baseline = broker.rss()
        growth = broker.rss() - baseline
        assert messages >= FRAMES
        assert outcomes["pong"] and outcomes["closed"], outcomes  # both kinds of peer seen
        assert growth < RSS_GROWTH_LIMIT, f"broker RSS grew by {growth >> 20} MiB"
        assert received == sent
        with Admin(broker.web_url) as admin:
            wait_until(
                lambda: admin.topics.get_stats(HEALTHY_TOPIC)["subscriptions"]["healthy"][
                    "msgBacklog"] == 0,
                10, "the healthy subscription's acks",
            )
        log = broker.log_text()
        assert "crashed" not in log and "Traceback" not in log, log[-3000:]
    finally:
        client.close()
        ctx.term()
        broker.kill()


# -- known fatal inputs ----------------------------------------------------------------------


def test_a_huge_partition_count_is_refused_without_wedging_the_broker(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", log_path=tmp_path / "broker.log").start()
    try:
        with Admin(broker.web_url, timeout_seconds=3) as admin:
            with pytest.raises(Exception) as info:
                admin.topics.create_partitioned_topic("huge", 2**63 - 1)
            assert not isinstance(info.value, TimeoutError), "the broker stopped answering"
            assert admin.topics.get_list("public/default") is not None
    finally:
        broker.kill()
