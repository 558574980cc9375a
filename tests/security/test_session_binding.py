"""A peer cannot borrow an authenticated connection by claiming its ZeroMQ routing id.

ZeroMQ lets a DEALER choose its routing id, and a ROUTER's own ids are predictable, so a
broker keyed by routing id must tie a connection's role to its TCP socket: with
authentication on, ZeroMQ ignores a second peer claiming a live id (no handover), and the
broker drops an authenticated connection as soon as its socket closes, before any later
peer with the same id is read.
"""

from __future__ import annotations

import zmq

from pulsarlab import Broker

from .support import Raw, wait_until


def _spoofer(url: str, identity: bytes) -> Raw:
    raw = Raw.__new__(Raw)
    raw.sock = zmq.Context.instance().socket(zmq.DEALER)
    raw.sock.linger = 0
    raw.sock.setsockopt(zmq.ROUTING_ID, identity)
    raw.sock.connect(url.replace("zmq://", "tcp://"))
    raw._ids = iter(range(1, 1000))
    return raw


def test_a_spoofed_routing_id_gets_no_authenticated_session():
    with Broker(storage="memory", authentication_enabled=True) as b:
        b.call(lambda s: s.get_topic("persistent://secret/ns/topic"))
        victim = Raw(b.service_url)
        reply = victim.request("CONNECT", client_version="v", auth_token=b.create_token("root"))
        assert reply.name == "CONNECTED"
        (identity,) = b.call(lambda s: list(b.connections))

        # While the victim is connected, a peer claiming its id is not even read.
        live = _spoofer(b.service_url, identity)
        live.send("GET_TOPICS", 1, namespace="secret/ns")
        assert victim.request("GET_TOPICS", namespace="secret/ns")["result"] == [
            "persistent://secret/ns/topic"
        ]
        assert live.sock.poll(300) == 0
        live.close()

        # Once the victim's socket closes its session goes with it (no heart-beat wait) ...
        victim.close()
        wait_until(lambda: b.call(lambda s: identity not in b.connections),
                   "the broker to drop the closed connection")

        # ... so a peer that takes the id afterwards starts unauthenticated and is refused.
        late = _spoofer(b.service_url, identity)
        try:
            error = late.request("GET_TOPICS", namespace="secret/ns")
            assert (error.name, error["code"]) == ("ERROR", "AuthenticationError")
            assert "secret" not in error["message"]
        finally:
            late.close()


def test_a_closed_clients_consumers_are_released_at_once():
    """The same mechanism frees a vanished client's consumers without the heart-beat wait."""
    with Broker(storage="memory", authentication_enabled=True) as b:
        token = b.create_token("r")
        first = Raw(b.service_url)
        assert first.request("CONNECT", client_version="v", auth_token=token).name == "CONNECTED"
        reply = first.request("SUBSCRIBE", topic="t", subscription="s", consumer_id=1,
                              sub_type="Exclusive")
        assert reply.name == "SUCCESS"
        first.close()
        second = Raw(b.service_url)
        try:
            assert second.request("CONNECT", client_version="v", auth_token=token).name == (
                "CONNECTED"
            )
            wait_until(
                lambda: second.request("SUBSCRIBE", topic="t", subscription="s", consumer_id=2,
                                       sub_type="Exclusive").name == "SUCCESS"
                or None,
                "the exclusive subscription to be free again",
            )
        finally:
            second.close()

