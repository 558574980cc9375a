"""A peer cannot borrow an authenticated connection by claiming its ZeroMQ routing id.

ZeroMQ lets a DEALER choose its routing id, and a ROUTER's own ids are predictable, so a
broker keyed by routing id must tie a connection's role to its TCP socket: with
authentication on, ZeroMQ ignores a second peer claiming a live id (no handover), and the
broker ends a session as soon as its socket closes, before any later peer with the same id
is read.
"""

from __future__ import annotations

from pulsarlab import Broker

from .support import CLOSED, QUIET_MS, PulsarDealer, T, api, command, token_connect, wait_until

NAMESPACE = "secret/ns"


def _list_topics(dealer: PulsarDealer) -> None:
    dealer.send(command(T.GET_TOPICS_OF_NAMESPACE, "getTopicsOfNamespace", namespace=NAMESPACE,
                        request_id=dealer.request_id()))


def test_a_spoofed_routing_id_gets_no_authenticated_session():
    with Broker(storage="memory", authentication_enabled=True) as b:
        b.call(lambda s: s.get_topic("persistent://secret/ns/topic"))
        victim = PulsarDealer(b.service_url, identity=b"victim")
        assert token_connect(victim, b.create_token("root")).type == T.CONNECTED

        # While the victim is connected, a peer claiming its id is not even read.
        live = PulsarDealer(b.service_url, identity=b"victim")
        _list_topics(live)
        _list_topics(victim)
        topics = victim.expect(T.GET_TOPICS_OF_NAMESPACE_RESPONSE).getTopicsOfNamespaceResponse
        assert list(topics.topics) == ["persistent://secret/ns/topic"]
        assert live.recv(QUIET_MS) is None
        live.close()

        # Once the victim's socket closes its session goes with it (no heart-beat wait) ...
        victim.close()
        wait_until(lambda: b.call(lambda s: b"victim" not in b.zmq_sessions),
                   "the broker to end the closed connection's session")

        # ... so a peer that takes the id afterwards starts unauthenticated and is refused.
        late = PulsarDealer(b.service_url, identity=b"victim")
        try:
            _list_topics(late)
            error = late.expect(T.ERROR).error
            assert "before CONNECT" in error.message and "secret" not in error.message
            assert late.recv() == CLOSED
        finally:
            late.close()


def test_a_closed_clients_consumers_are_released_at_once():
    """The same mechanism frees a vanished client's consumers without the heart-beat wait."""
    with Broker(storage="memory", authentication_enabled=True) as b:
        token = b.create_token("r")
        first = PulsarDealer(b.service_url)
        assert token_connect(first, token).type == T.CONNECTED
        first.subscribe("t", "s", consumer_id=1, sub_type=api.CommandSubscribe.Exclusive)
        first.close()
        second = PulsarDealer(b.service_url)
        try:
            assert token_connect(second, token).type == T.CONNECTED

            def subscribed() -> bool:
                second.send(command(T.SUBSCRIBE, "subscribe", topic="t", subscription="s",
                                    consumer_id=2, request_id=second.request_id(),
                                    subType=api.CommandSubscribe.Exclusive))
                return second.recv().command.type == T.SUCCESS

            wait_until(subscribed, "the exclusive subscription to be free again")
        finally:
            second.close()
