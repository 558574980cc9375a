"""Seeded junk from unauthenticated peers: one ERROR each at most, nothing else, no harm."""

from __future__ import annotations

import random

import msgpack
import zmq

from pulsarlab import AuthenticationToken, Broker, Client
from pulsarlab.broker import wire

from .support import wait_until

PEERS = 20
FRAMES_PER_PEER = 250
NAMES = sorted(wire.CLIENT_COMMANDS)


def _junk(r: random.Random) -> list[bytes]:
    kind = r.randrange(4)
    if kind == 0:
        return [r.randbytes(r.randrange(0, 64))]
    if kind == 1:
        return [msgpack.packb({"v": 1, "cmd": r.choice(NAMES), "rid": r.randrange(100),
                               "topic": "persistent://secret/ns/t", "auth_token": r.choice(
                                   [None, "", "a.b.c", r.randbytes(8).hex()])})]
    if kind == 2:
        return [msgpack.packb({"v": 1, "cmd": "CONNECT", "rid": 1, "client_version": "x",
                               "auth_token": r.choice(["x.y.z", 5, None])})]
    return [msgpack.packb(r.choice([[], 1, "CONNECT", {"cmd": None}])), r.randbytes(10)]


def test_junk_from_unauthenticated_peers_gets_at_most_one_error_each():
    r = random.Random(20261122)
    with Broker(storage="memory", authentication_enabled=True) as b:
        healthy = Client(b.service_url, authentication=AuthenticationToken(b.create_token("ok")))
        consumer = healthy.subscribe("steady", "s")
        producer = healthy.create_producer("steady")
        ctx = zmq.Context.instance()
        peers = []
        try:
            for _ in range(PEERS):
                sock = ctx.socket(zmq.DEALER)
                sock.linger = 0
                sock.connect(b.service_url.replace("zmq://", "tcp://"))
                peers.append(sock)
            for i in range(FRAMES_PER_PEER):
                for sock in peers:
                    sock.send_multipart(_junk(r))
                if i % 50 == 0:
                    producer.send(f"m{i}".encode())
                    assert consumer.receive(timeout_millis=10_000).data() == f"m{i}".encode()
            total = PEERS * FRAMES_PER_PEER
            wait_until(lambda: b.dropped_from_refused >= total - PEERS,
                       "the broker to drop everything after each peer's first message")
            for sock in peers:
                replies = []
                while sock.poll(100):
                    replies.append(wire.decode(sock.recv_multipart(), wire.BROKER_COMMANDS))
                assert len(replies) == 1, replies
                assert replies[0].name == "ERROR"
                assert replies[0]["code"] == "AuthenticationError"
                assert "secret" not in replies[0]["message"]
        finally:
            for sock in peers:
                sock.close(linger=0)
            healthy.close()
