"""Bad-input fuzzing (R-WIRE): the decoder and the live broker take anything.

* Property (hypothesis): :func:`wire.decode` turns any frames into a ``Command`` or a
  ``ProtocolError``, never another exception, in both directions' command tables.
* Live: a seeded fuzzer sends over 100k frames from one DEALER to a broker process as fast
  as the broker takes them: random bytes, truncated and random msgpack, huge ints, wrong
  types, random command names and valid commands with random field values (including
  ``ADMIN`` operations, on their own namespace). After every chunk a ``PING`` barrier must
  come back (no hang, no crash); broker RSS growth stays under a generous bound; and a
  healthy ``pulsarlab.Client`` (producer and Shared consumer, another namespace) is served
  throughout with exact delivery: everything it sent arrives once, in order.

Input shapes that once killed or wedged the broker (out-of-range SEND metadata, a huge
partition count) have their own regression tests below, and the fuzzer sends them too.
"""

from __future__ import annotations

import random
import string
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsarlab import Admin, Client, ConsumerType
from pulsarlab.broker import wire

from .support import SESSION, BrokerProcess, wait_until

FRAMES = 100_000
CHUNK = 1_000
RSS_GROWTH_LIMIT = 256 * 1024 * 1024
BARRIER_TIMEOUT_MS = 30_000
HEALTHY_TOPIC = "persistent://healthy/ns/steady"

# Partition counts the fuzzer asks for, the absurd one included (refused by the broker).
FUZZ_PARTITIONS = (-1, 0, 1, 2, 16, 2**63 - 1, "2", None)


# -- the decoder, property-based ----------------------------------------------------------

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), st.floats(allow_nan=True),
    st.text(max_size=20), st.binary(max_size=20),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=8), st.binary(max_size=8)), inner,
                        max_size=4),
    ),
    max_leaves=12,
)
_names = st.sampled_from(sorted({*wire.CLIENT_COMMANDS, *wire.BROKER_COMMANDS, "NOPE", ""}))
_field_names = st.sampled_from(sorted({
    key for spec in [*wire.CLIENT_COMMANDS.values(), *wire.BROKER_COMMANDS.values()]
    for key in [*spec.required, *spec.optional]
}))


@st.composite
def _headers(draw: st.DrawFn) -> bytes:
    """msgpack maps that look like headers: right or wrong version, name, rid and fields."""
    header: dict[Any, Any] = {}
    if draw(st.booleans()):
        header["v"] = draw(st.one_of(st.just(1), _scalars))
    if draw(st.integers(0, 9)):
        header["cmd"] = draw(st.one_of(_names, _scalars))
    if draw(st.booleans()):
        header["rid"] = draw(st.one_of(st.integers(0, 2**32), _scalars))
    for key in draw(st.lists(_field_names, max_size=6)):
        header[key] = draw(_values)
    raw = msgpack.packb(header, use_bin_type=True)
    cut = draw(st.integers(0, 3))
    return raw[:-cut] if cut and len(raw) > cut else raw


_frames = st.lists(
    st.one_of(_headers(), st.binary(max_size=64),
              _values.map(lambda v: msgpack.packb(v, use_bin_type=True))),
    max_size=4,
)


@settings(max_examples=600, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(frames=_frames, client_side=st.booleans())
def test_decode_gives_a_command_or_a_protocol_error(frames: list[bytes], client_side: bool):
    specs = wire.CLIENT_COMMANDS if client_side else wire.BROKER_COMMANDS
    try:
        command = wire.decode(frames, specs)
    except wire.ProtocolError as exc:
        assert isinstance(exc.request_id, int) and str(exc)
        return
    assert command.name in specs
    assert isinstance(command.request_id, int) and command.request_id >= 0
    assert isinstance(command.fields, dict)


@pytest.mark.parametrize("extra", [1, 4096])
def test_decode_refuses_oversized_headers(extra: int):
    raw = msgpack.packb({"v": 1, "cmd": "PING", "rid": 1, "pad": "x" * wire.MAX_HEADER_SIZE})
    with pytest.raises(wire.ProtocolError, match="exceeds"):
        wire.decode([raw + b"\x00" * extra], wire.CLIENT_COMMANDS)


# -- the live fuzzer -------------------------------------------------------------------------

_HUGE = (2**63 - 1, 2**64 - 1, -(2**63), 2**32, -1, 0)
_FUZZ_TOPICS = ("fuzz-a", "fuzz-b", "persistent://fuzz/ns/c", "non-persistent://fuzz/ns/d",
                "fuzz-a", "fuzz-b", "", "a/b/c/d/e", "fuzz-a-partition-3", "\x00\xff")
_SUBS = ("s1", "s2", "s1", "s2", "", "reader-x")
_SUB_TYPES = ("Exclusive", "Shared", "Failover", "Key_Shared", "Shared", "Key_Shared", "Nope")
_ADMIN_OPS = (
    "topics.create_partitioned_topic", "topics.create_non_partitioned_topic",
    "topics.get_partitioned_topic_metadata", "topics.get_list", "topics.delete",
    "topics.get_subscriptions", "topics.create_subscription", "topics.delete_subscription",
    "topics.reset_cursor", "topics.skip_messages", "topics.peek_messages",
    "topics.expire_messages", "topics.unload", "topics.get_stats", "topics.get_internal_stats",
    "topics.get_partitioned_stats", "namespaces.get_policies", "namespaces.set_retention",
    "namespaces.set_message_ttl", "namespaces.set_deduplication_status",
    "namespaces.set_backlog_quota", "namespaces.grant_permission",
    "namespaces.revoke_permission", "namespaces.get_permissions", "nope", "",
    "clusters.get_cluster", "tenants.create_tenant", "tenants.update_tenant",
    "tenants.delete_tenant", "tenants.get_tenant_info", "namespaces.create_namespace",
    "namespaces.delete_namespace", "namespaces.get_namespaces", "namespaces.get_topics",
    "namespaces.remove_retention", "topics.update_partitioned_topic",
    "topics.get_last_message_id", "topics.skip_all_messages", "topics.examine_message",
    "topics.get_partitioned_topic_list",
)
_NAMESPACES = ("public/default", "fuzz/ns", "bad", "", "a/b/c")
_META_KEYS = (
    "producer_name", "sequence_id", "publish_time", "properties", "partition_key",
    "partition_key_b64_encoded", "ordering_key", "event_time", "num_messages_in_batch",
    "compression", "uncompressed_size", "deliver_at_time", "schema_version", "null_value",
    "uuid", "num_chunks_from_msg", "total_chunk_msg_size", "chunk_id", "marker_type",
    "highest_sequence_id", "nope",
)


# Commands that build state (producers, consumers, entries, acks) come up more often.
_WEIGHTED_COMMANDS = [
    *sorted(wire.CLIENT_COMMANDS),
    *("SUBSCRIBE", "SUBSCRIBE", "SUBSCRIBE", "PRODUCER", "SEND", "SEND", "SEND", "SEND"),
    *("FLOW", "FLOW", "ACK", "ACK", "REDELIVER_UNACKNOWLEDGED", "SEEK", "ADMIN", "ADMIN"),
]


class Fuzzer:
    """Seeded generator of hostile frames."""

    def __init__(self, seed: str) -> None:
        self.rng = random.Random(seed)

    def scalar(self) -> Any:
        r = self.rng
        return r.choice((
            None, True, False, r.choice(_HUGE), r.randint(-5, 50), r.random() * 1e20,
            "".join(r.choice(string.printable) for _ in range(r.randint(0, 12))),
            r.randbytes(r.randint(0, 12)), "\u2603" * r.randint(1, 3),
        ))

    def value(self, depth: int = 0) -> Any:
        r = self.rng
        roll = r.random()
        if depth < 3 and roll < 0.12:
            return [self.value(depth + 1) for _ in range(r.randint(0, 4))]
        if depth < 3 and roll < 0.2:
            return {str(self.scalar()): self.value(depth + 1) for _ in range(r.randint(0, 3))}
        return self.scalar()

    def small_id(self) -> Any:
        return self.rng.choice((0, 1, 2, 3, 4, 5, 6, 7, -1, 2**63 - 1, "1", None, 1.0, True))

    def position(self) -> Any:
        r = self.rng
        if r.random() < 0.7:
            return [r.choice((0, 1, 2, -1, 2**63 - 1)), r.choice((0, 1, 5, -1, 2**63 - 1))]
        return self.value(1)

    def metadata(self) -> dict:
        r = self.rng
        out: dict[str, Any] = {}
        for key in r.sample(_META_KEYS, r.randint(0, 4)):
            out[key] = self.value(1)
        return out

    def typed(self, types: tuple[type, ...]) -> Any:
        """A value of one of ``types`` (the right wire type), with hostile content."""
        r = self.rng
        kind = r.choice(types)
        if kind is int:
            return r.choice((*_HUGE, r.randint(-3, 20), r.randint(0, 2**31)))
        if kind is str:
            return r.choice(("", "x", "\u2603", "a" * r.randint(1, 300), str(self.scalar())))
        if kind is bool:
            return r.random() < 0.5
        if kind is list:
            return [self.value(1) for _ in range(r.randint(0, 3))]
        if kind is dict:
            return {str(self.scalar()): self.value(1) for _ in range(r.randint(0, 3))}
        if kind is bytes:
            return r.randbytes(r.randint(0, 8))
        return None

    def field(self, command: str, key: str, types: tuple[type, ...]) -> Any:
        r = self.rng
        if r.random() < 0.08:
            return self.value()  # any type at all
        if key == "topic":
            return r.choice(_FUZZ_TOPICS)
        if key == "subscription":
            return r.choice(_SUBS)
        if key == "sub_type":
            return r.choice(_SUB_TYPES)
        if key in ("producer_id", "consumer_id"):
            return r.choice((0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, -1, 2**63 - 1))
        if key == "permits":
            return r.choice((1, 10, 1000, 0, -3, 2**63 - 1))
        if key == "metadata":
            return self.metadata()
        if key in ("positions", "ack_sets", "requested_at", "sticky_ranges",
                   "key_hash_ranges"):
            return [self.position() for _ in range(r.randint(0, 3))]
        if key in ("start_message_id", "message_id"):
            return [r.choice(_HUGE) for _ in range(r.choice((4, 4, 2, 5)))]
        if key == "namespace":
            return r.choice(_NAMESPACES)
        if key == "op":
            return r.choice(_ADMIN_OPS)
        if key == "args":
            return self.admin_args()
        if key == "initial_position":
            return r.choice(("earliest", "latest", "middle"))
        if key == "key_shared_mode":
            return r.choice(("AUTO_SPLIT", "STICKY", "x", None))
        if key == "reason":
            return r.choice(("consumer_request", "nack", "ack_timeout", "why", None))
        return self.typed(types)

    def admin_args(self) -> Any:
        r = self.rng
        args: dict[str, Any] = {}
        for key in r.sample(("topic", "subscription", "namespace", "value", "partitions",
                             "count", "message_id", "timestamp", "force",
                             "expire_time_seconds", "include_system", "per_partition",
                             "role", "actions", "bogus", "tenant", "cluster", "config",
                             "policies", "initial_position", "message_position"),
                            r.randint(0, 4)):
            if key == "topic":
                args[key] = r.choice(_FUZZ_TOPICS)
            elif key == "subscription":
                args[key] = r.choice(_SUBS)
            elif key == "namespace":
                args[key] = r.choice(_NAMESPACES)
            elif key == "tenant":
                args[key] = r.choice(("public", "fuzz", "", "a/b", "pulsar"))
            elif key == "partitions":
                args[key] = r.choice(FUZZ_PARTITIONS)
            elif key == "message_id":
                args[key] = r.choice(("earliest", "latest", [0, 0], [2**63 - 1, -1], "x"))
            else:
                args[key] = self.value(1)
        return args

    def command(self) -> list[bytes]:
        """A known command, well formed, with plausible and hostile field values."""
        r = self.rng
        name = r.choice(_WEIGHTED_COMMANDS)
        spec = wire.CLIENT_COMMANDS[name]
        fields: dict[str, Any] = {}
        for key, types in spec.required.items():
            if r.random() > 0.02:
                fields[key] = self.field(name, key, types)
        optional = 1.5 / max(1, len(spec.optional))  # one or two optional fields on average
        for key, types in spec.optional.items():
            if r.random() < optional:
                fields[key] = self.field(name, key, types)
        if r.random() < 0.03:
            fields[str(self.scalar())] = self.value()
        rid = r.randint(0, 1000) if r.random() < 0.95 else r.choice((2**63 - 1, -1, "x"))
        header = {"v": 1, "cmd": name, "rid": rid, **fields}
        count = {"none": 0, "one": 1, "any": r.randint(0, 3)}[spec.payloads]
        if r.random() < 0.05:
            count = r.randint(0, 3)
        payloads = [r.randbytes(r.randint(0, 40)) for _ in range(count)]
        return [msgpack.packb(header, use_bin_type=True), *payloads]

    def frames(self) -> list[bytes]:
        """Hostile msgpack-wire frames. None starts with 0x00: on the broker's ZeroMQ socket
        that byte opens a Pulsar-frame connection (test_pulsar_fuzz.py fuzzes that side),
        so 0x00 becomes 0xc1, the one byte msgpack never uses."""
        frames = self._frames()
        if frames and frames[0][:1] == b"\x00":
            frames[0] = b"\xc1" + frames[0][1:]
        return frames

    def _frames(self) -> list[bytes]:
        r = self.rng
        roll = r.random()
        if roll < 0.05:  # random bytes
            return [r.randbytes(r.randint(0, 64)) for _ in range(r.randint(1, 3))]
        if roll < 0.10:  # truncated valid command
            frames = self.command()
            head = frames[0]
            return [head[: r.randint(0, max(0, len(head) - 1))], *frames[1:]]
        if roll < 0.15:  # some msgpack value, not a header
            return [msgpack.packb(self.value(), use_bin_type=True)]
        if roll < 0.20:  # header with a random command name / version / rid
            header = {
                "v": r.choice((1, 1, 2, 0, "1", None)),
                "cmd": r.choice((self.scalar(), r.choice(sorted(wire.CLIENT_COMMANDS)).lower(),
                                 "".join(r.choice(string.ascii_uppercase) for _ in range(6)))),
                "rid": r.choice((r.randint(0, 99), *_HUGE, "rid", None)),
            }
            return [msgpack.packb(header, use_bin_type=True)]
        if roll < 0.22:
            return [msgpack.packb({"v": 1, "cmd": "CONNECT", "rid": 0, "client_version": "f"})]
        return self.command()


def _barrier(sock: zmq.Socket, rid: int) -> int:
    """Send a PING with ``rid`` and read every reply until its PONG; returns replies read."""
    sock.send(msgpack.packb({"v": 1, "cmd": "PING", "rid": rid}))
    replies = 0
    deadline = time.monotonic() + BARRIER_TIMEOUT_MS / 1000
    while True:
        timeout = int(max(0.0, deadline - time.monotonic()) * 1000)
        if not sock.poll(timeout):
            raise AssertionError(f"the broker did not answer PING {rid}: hung or dead")
        frames = sock.recv_multipart()
        replies += 1
        try:
            reply = wire.decode(frames, wire.BROKER_COMMANDS)
        except wire.ProtocolError as exc:  # the broker must only send valid frames
            raise AssertionError(f"the broker sent an invalid frame: {exc}: {frames!r}") from None
        if reply.name == "PONG" and reply.request_id == rid:
            return replies


def test_live_broker_survives_100k_hostile_frames_and_serves_a_healthy_client(
    tmp_path: Path,
) -> None:
    broker = BrokerProcess(tmp_path / "data", log_path=tmp_path / "broker.log").start()
    fuzzer = Fuzzer("live-fuzz")
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(broker.service_url.replace("zmq://", "tcp://"))
    client = Client(broker.service_url, operation_timeout_seconds=30)
    sent: list[bytes] = []
    received: list[bytes] = []
    try:
        producer = client.create_producer(HEALTHY_TOPIC, send_timeout_millis=30_000)
        consumer = client.subscribe(HEALTHY_TOPIC, "healthy", consumer_type=ConsumerType.Shared)
        baseline = None
        frames_sent = replies = 0
        for chunk in range(FRAMES // CHUNK):
            SESSION.check(f"live fuzzing, chunk {chunk}")
            for _ in range(CHUNK):
                sock.send_multipart(fuzzer.frames())
            frames_sent += CHUNK
            replies += _barrier(sock, 10**12 + chunk)
            assert broker.alive(), f"broker died:\n{broker.log_text()[-3000:]}"
            # The healthy client is served between every chunk, in order, exactly once.
            for i in range(3):
                data = f"healthy:{chunk}:{i}".encode()
                producer.send(data)
                sent.append(data)
            for _ in range(3):
                msg = consumer.receive(10_000)
                received.append(msg.data())
                consumer.acknowledge(msg)
            if chunk == 9:
                baseline = broker.rss()
        growth = broker.rss() - baseline
        assert frames_sent >= FRAMES and replies > FRAMES // 2
        assert growth < RSS_GROWTH_LIMIT, f"broker RSS grew by {growth >> 20} MiB"
        assert received == sent
        with Admin(broker.web_url) as admin:
            wait_until(
                lambda: admin.topics.get_stats(HEALTHY_TOPIC)["subscriptions"]["healthy"][
                    "msgBacklog"] == 0,
                10, "the healthy subscription's acks",
            )
        assert "crashed" not in broker.log_text() and "Traceback" not in broker.log_text()
    finally:
        client.close()
        sock.close(linger=0)
        ctx.term()
        broker.kill()


# -- known fatal inputs ----------------------------------------------------------------------



@pytest.mark.parametrize(
    "metadata",
    [
        {"deliver_at_time": 2**63},
        {"publish_time": 2**64 - 1},
        {"publish_time": "soon"},
        {"num_messages_in_batch": -1},
        {"num_messages_in_batch": 2**40},
        {"partition_key": 2**63 - 1},
        {"ordering_key": 2**63 - 1},
    ],
    ids=["deliver_at_2^63", "publish_time_2^64-1", "publish_time_str", "batch_-1",
         "batch_2^40", "partition_key_int", "ordering_key_int"],
)
def test_send_with_out_of_range_metadata_is_an_error_not_a_crash(
    tmp_path: Path, metadata: dict
) -> None:
    broker = BrokerProcess(tmp_path / "data", log_path=tmp_path / "broker.log").start()
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(broker.service_url.replace("zmq://", "tcp://"))
    try:
        def request(name: str, rid: int, payloads: tuple = (), **fields: Any) -> wire.Command:
            sock.send_multipart(wire.encode(name, rid, payloads, **fields))
            for _ in range(100):  # up to 5 s, but stop as soon as the broker is gone
                if sock.poll(50):
                    return wire.decode(sock.recv_multipart(), wire.BROKER_COMMANDS)
                assert broker.alive(), f"the broker died on {name}:\n{broker.log_text()}"
            raise AssertionError(f"no answer to {name}")

        assert request("CONNECT", 1, client_version="t").name == "CONNECTED"
        assert request("PRODUCER", 2, topic="t", producer_id=1).name == "PRODUCER_SUCCESS"
        reply = request("SEND", 3, (b"x",), producer_id=1, sequence_id=1, metadata=metadata)
        assert reply.name in ("ERROR", "SEND_ERROR"), reply
        assert request("PING", 4).name == "PONG"
    finally:
        sock.close(linger=0)
        ctx.term()
        broker.kill()


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
