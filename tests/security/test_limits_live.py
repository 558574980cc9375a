"""Limits against abuse on a real broker: each refuses with a clear error, others go on."""

from __future__ import annotations

import msgpack
import pytest

import pulsarlab
from pulsarlab import Admin, Broker, Client
from pulsarlab.broker import errors, wire

from .support import Raw


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
        kept = Raw(b.service_url)
        extra = Raw(b.service_url)
        try:
            assert kept.request("CONNECT", client_version="t").name == "CONNECTED"
            error = extra.request("CONNECT", client_version="t")
            assert (error.name, error["code"]) == ("ERROR", "ConnectError")
            extra.send("CONNECT", 5, client_version="t")
            assert kept.request("GET_TOPICS", namespace="public/default").name == "SUCCESS"
            assert extra.sock.poll(200) == 0
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
        raw = Raw(b.service_url)
        try:
            raw.request("CONNECT", client_version="t")
            assert raw.request("PRODUCER", topic="big", producer_id=1).name == "PRODUCER_SUCCESS"
            raw.send("SEND", 3, [b"x" * 2048], producer_id=1, sequence_id=0, metadata={})
            error = raw.recv()
            assert (error.name, error["code"]) == ("SEND_ERROR", "MessageTooBig")
        finally:
            raw.close()
        _served(b)


def test_an_oversized_header_is_invalid_message():
    with Broker(storage="memory") as b:
        raw = Raw(b.service_url)
        try:
            raw.request("CONNECT", client_version="t")
            header = msgpack.packb({"v": 1, "cmd": "PING", "rid": 4,
                                    "pad": b"x" * wire.MAX_HEADER_SIZE})
            raw.sock.send_multipart([header])
            error = raw.recv()
            assert error["code"] == "InvalidMessage" and "exceeds" in error["message"]
        finally:
            raw.close()
        _served(b)


def test_a_frame_over_the_socket_limit_drops_only_that_peer():
    """ZeroMQ's MAXMSGSIZE (max_message_size + 1 MiB) cuts the sender off before the
    broker reads a byte; everyone else is served and the peer may reconnect afresh."""
    with Broker(storage="memory", max_message_size=1024) as b:
        raw = Raw(b.service_url)
        try:
            raw.request("CONNECT", client_version="t")
            raw.sock.send_multipart([wire.encode("PING", 9)[0], b"x" * (3 << 20)])
            _served(b)
            # The DEALER reconnects by itself; the broker sees a new peer.
            assert raw.request("CONNECT", client_version="t").name == "CONNECTED"
        finally:
            raw.close()
