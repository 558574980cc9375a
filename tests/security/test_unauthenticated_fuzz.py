"""Seeded junk from unauthenticated ZeroMQ peers, plain and over CurveZMQ: at most one
Pulsar ERROR each, then the close notice, nothing else (never a topic name), and no harm to
an authenticated client beside them."""

from __future__ import annotations

import random

import msgpack
import pytest

from pulsarlab import AuthenticationToken, Broker, Client
from pulsarlab.broker import curve
from pulsarlab.broker.pulsar_protocol.framing import decode_message

from .support import PulsarDealer, T, api, command, wait_until

PEERS = 20
FRAMES_PER_PEER = 250
SECRET_TOPIC = "persistent://secret/ns/t"


def _junk(r: random.Random) -> list[bytes]:
    kind = r.randrange(6)
    if kind == 0:  # random bytes, half of them starting like a Pulsar frame
        data = r.randbytes(r.randrange(0, 64))
        return [b"\x00" + data if r.random() < 0.5 else data]
    if kind == 1:  # a command that needs a session, before any CONNECT
        return [r.choice([
            command(T.PRODUCER, "producer", topic=SECRET_TOPIC, producer_id=1, request_id=1),
            command(T.SUBSCRIBE, "subscribe", topic=SECRET_TOPIC, subscription="s",
                    consumer_id=1, request_id=2, subType=api.CommandSubscribe.Shared),
            command(T.LOOKUP, "lookupTopic", topic=SECRET_TOPIC, request_id=3),
            command(T.GET_TOPICS_OF_NAMESPACE, "getTopicsOfNamespace", namespace="secret/ns",
                    request_id=4),
        ])]
    if kind == 2:  # a CONNECT with no, a malformed or a forged token
        token = r.choice([None, b"", b"a.b.c", r.randbytes(8).hex().encode(),
                          b"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyb290In0.forged"])
        fields = {} if token is None else {"auth_method_name": "token", "auth_data": token}
        return [command(T.CONNECT, "connect", client_version="x", protocol_version=20,
                        **fields)]
    if kind == 3:  # an answer to a challenge nobody sent
        return [command(T.AUTH_RESPONSE, "authResponse", response=api.AuthData(
            auth_method_name="token", auth_data=r.randbytes(12)))]
    if kind == 4:  # the old msgpack wire
        return [msgpack.packb({"v": 1, "cmd": "CONNECT", "rid": 1, "auth_token": "x.y.z"})]
    return [r.randbytes(3), r.randbytes(10)]  # several parts


@pytest.mark.parametrize("transport", ["plain", "curve"])
def test_junk_from_unauthenticated_peers_gets_at_most_one_error_each(transport, tmp_path):
    r = random.Random(20261122)
    options: dict = {}
    server_key = None
    if transport == "curve":
        public_path, secret_path = curve.create_keypair_files(tmp_path, "server")
        options["curve_secret_key_file"] = str(secret_path)
        server_key = curve.load_public_key(str(public_path))
    with Broker(storage="memory", authentication_enabled=True, **options) as b:
        b.call(lambda s: s.get_topic(SECRET_TOPIC))
        healthy = Client(b.service_url, curve_server_key=server_key,
                         authentication=AuthenticationToken(b.create_token("ok")))
        consumer = healthy.subscribe("steady", "s")
        producer = healthy.create_producer("steady")
        peers = [PulsarDealer(b.service_url, curve_server_key=server_key)
                 for _ in range(PEERS)]
        try:
            for i in range(FRAMES_PER_PEER):
                for peer in peers:
                    peer.send(*_junk(r))
                if i % 50 == 0:
                    producer.send(f"m{i}".encode())
                    assert consumer.receive(timeout_millis=10_000).data() == f"m{i}".encode()
            total = PEERS * FRAMES_PER_PEER
            wait_until(lambda: b.dropped_from_refused >= total - PEERS,
                       "the broker to drop everything after each peer's first message")
            for peer in peers:
                replies = []
                while peer.sock.poll(100):
                    (message,) = peer.sock.recv_multipart()
                    replies.append(message)
                assert replies and replies[-1] == b"", replies  # the close notice, last
                assert len(replies) <= 2, replies  # at most one ERROR before it
                for message in replies[:-1]:
                    error = decode_message(message, 1 << 20).command
                    assert error.type == T.ERROR, error
                    assert "secret" not in error.error.message
            assert b.call(lambda s: len(b.zmq_sessions)) == 1  # the healthy client's
        finally:
            for peer in peers:
                peer.close()
            healthy.close()
