"""Limits against abuse on a real broker: each refuses with a clear error, others go on."""

from __future__ import annotations

import pytest

import pulsarlab
from pulsarlab import Admin, Broker, Client
from pulsarlab.broker import errors

from .support import CLOSED, QUIET_MS, PulsarDealer, T, command, send_frame


def _served(broker: Broker, topic: str = "healthy") -> None:
    """A fresh client still gets its message through."""
    client = Client(broker.service_url)
    try:
        consumer = client.subscribe(topic, "s")
        client.create_producer(topic).send(b"still here")
        assert consumer.receive(timeout_millis=10_000).data() == b"still here"
    finally:
        client.close()


def test_max_connections_refuses_one_more_with_connect_error():
    with Broker(storage="memory", max_connections=2) as b:
        first, second = Client(b.service_url), Client(b.service_url)
        third = Client(b.service_url)
        try:
            first.create_producer("a")
            second.create_producer("b")
            with pytest.raises(pulsarlab.ConnectError, match="max_connections=2"):
                third.create_producer("c")
            first.create_producer("a2").send(b"the admitted ones go on")
        finally:
            for c in (first, second, third):
                c.close()


def test_a_refused_raw_peer_gets_exactly_one_error():
    with Broker(storage="memory", max_connections=1) as b:
        kept = PulsarDealer(b.service_url)
        extra = PulsarDealer(b.service_url)
        try:
            assert kept.connect().type == T.CONNECTED
            error = extra.connect()
            assert error.type == T.ERROR and "max_connections=1" in error.error.message
            assert extra.recv() == CLOSED
            extra.send(command(T.CONNECT, "connect", client_version="t", protocol_version=20))
            kept.send(command(T.GET_TOPICS_OF_NAMESPACE, "getTopicsOfNamespace",
                              namespace="public/default", request_id=1))
            kept.expect(T.GET_TOPICS_OF_NAMESPACE_RESPONSE)
            assert extra.recv(QUIET_MS) is None
        finally:
            kept.close()
            extra.close()


def test_max_producers_per_connection():
    with Broker(storage="memory", max_producers_per_connection=2) as b:
        client = Client(b.service_url)
        try:
            p1 = client.create_producer("p1")
            client.create_producer("p2")
            with pytest.raises(pulsarlab.ProducerBusy, match="max_producers_per_connection"):
                client.create_producer("p3")
            p1.close()
            client.create_producer("p3").send(b"a closed producer frees its slot")
            with Admin(b.web_url) as admin:
                admin.topics.create_partitioned_topic("parted", 2)
            other = Client(b.service_url)
            try:
                other.create_producer("one")
                with pytest.raises(pulsarlab.ProducerBusy):
                    other.create_producer("parted")  # two more partition producers
            finally:
                other.close()
        finally:
            client.close()


def test_max_consumers_per_connection():
    with Broker(storage="memory", max_consumers_per_connection=1) as b:
        client = Client(b.service_url)
        try:
            c1 = client.subscribe("c1", "s")
            with pytest.raises(pulsarlab.ConsumerBusy, match="max_consumers_per_connection"):
                client.subscribe("c2", "s")
            c1.close()
            client.subscribe("c2", "s")
        finally:
            client.close()


def test_max_topics():
    with Broker(storage="memory", max_topics=3) as b:
        client = Client(b.service_url)
        try:
            for name in ("t1", "t2", "t3"):
                client.create_producer(name)
            with pytest.raises(pulsarlab.NotAllowedError, match="max_topics is 3"):
                client.create_producer("t4")
            with pytest.raises(pulsarlab.NotAllowedError, match="max_topics"):
                client.subscribe("t5", "s")
            client.create_producer("t1").send(b"existing topics are served")
            with (
                Admin(b.web_url) as admin,
                pytest.raises(errors.NotAllowed, match="max_topics"),
            ):
                admin.topics.create_partitioned_topic("p", 2)
        finally:
            client.close()


def test_max_topics_per_namespace():
    with Broker(storage="memory", max_topics_per_namespace=1) as b:
        client = Client(b.service_url)
        try:
            client.create_producer("team-a/ns/t1")
            with pytest.raises(pulsarlab.NotAllowedError, match="namespace team-a/ns has 1"):
                client.create_producer("team-a/ns/t2")
            client.create_producer("team-b/ns/t1")
        finally:
            client.close()


def test_a_payload_over_max_message_size_is_message_too_big():
    with Broker(storage="memory", max_message_size=1024) as b:
        raw = PulsarDealer(b.service_url)
        try:
            raw.connect()
            raw.producer("big")
            raw.send(send_frame(1, 0, b"x" * 2048))
            error = raw.expect(T.SEND_ERROR).send_error
            assert error.sequence_id == 0 and "max_message_size" in error.message
        finally:
            raw.close()
        _served(b)


def test_a_frame_over_the_frame_limit_closes_that_peer_with_a_reason():
    """A Pulsar frame may be max_message_size plus Pulsar's overhead: one declaring more gets
    an ERROR naming the frame size and the connection closes; everyone else is served."""
    with Broker(storage="memory", max_message_size=1024) as b:
        raw = PulsarDealer(b.service_url)
        try:
            raw.connect()
            raw.send((1 << 20).to_bytes(4, "big") + b"\x00" * 8)
            error = raw.expect(T.ERROR).error
            assert "frame size" in error.message
            assert raw.recv() == CLOSED
        finally:
            raw.close()
        _served(b)


def test_a_frame_over_the_socket_limit_drops_only_that_peer():
    """ZeroMQ's MAXMSGSIZE (max_message_size + 1 MiB) cuts the sender off before the
    broker reads a byte; everyone else is served and the peer may reconnect afresh."""
    with Broker(storage="memory", max_message_size=1024) as b:
        raw = PulsarDealer(b.service_url)
        try:
            raw.connect()
            raw.send(command(T.PING, "ping"), b"x" * (3 << 20))
            _served(b)
            # The DEALER reconnects by itself; the broker sees a new peer.
            assert raw.connect().type == T.CONNECTED
        finally:
            raw.close()
