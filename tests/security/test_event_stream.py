"""The event stream with authentication on: loopback only, and a token in the handshake."""

from __future__ import annotations

import msgpack
import pytest
import zmq

from pulsarlab import Admin, AuthenticationToken, Broker, Client
from pulsarlab.broker.zap import EVENTS_DOMAIN, ZapHandler, subscriber_login

from .support import wait_until


def _subscriber(url: str, token: str | None) -> zmq.Socket:
    sock = zmq.Context.instance().socket(zmq.SUB)
    sock.linger = 0
    if token is not None:
        subscriber_login(sock, token)
    sock.setsockopt(zmq.SUBSCRIBE, b"")
    sock.connect(url)
    return sock


def _topics_seen(sock: zmq.Socket) -> set[str]:
    seen = set()
    while sock.poll(0):
        _type, body = sock.recv_multipart()
        topic = msgpack.unpackb(body, raw=False).get("topic")
        if topic:
            seen.add(topic)
    return seen


@pytest.mark.parametrize("authorization", [False, True])
def test_only_subscribers_with_an_accepted_token_get_events(authorization):
    settings = {"authentication_enabled": True}
    if authorization:
        settings |= {"authorization_enabled": True, "super_user_roles": "root"}
    with Broker(storage="memory", **settings) as b:
        good = _subscriber(b.events_url, b.create_token("root"))
        anonymous = _subscriber(b.events_url, None)
        wrong = _subscriber(b.events_url, "not-a-token")
        plain_role = _subscriber(b.events_url, b.create_token("someone"))
        client = Client(b.service_url, authentication=AuthenticationToken(b.create_token("root")))
        try:
            seen: set[str] = set()

            def produced_and_seen() -> bool:
                client.create_producer("persistent://secret/ns/events").send(b"x")
                seen.update(_topics_seen(good))
                return "persistent://secret/ns/events" in seen

            wait_until(produced_and_seen, "the authenticated subscriber to see the topic")
            assert anonymous.poll(200) == 0
            assert wrong.poll(0) == 0
            if authorization:  # events name every topic: superusers only
                assert plain_role.poll(0) == 0
            else:
                wait_until(lambda: plain_role.poll(50), "a plain role to get events")
        finally:
            client.close()
            for sock in (good, anonymous, wrong, plain_role):
                sock.close(linger=0)


def test_without_authentication_the_stream_is_open():
    with Broker(storage="memory") as b:
        sub = _subscriber(b.events_url, None)
        client = Client(b.service_url)
        try:
            def seen() -> bool:
                client.create_producer("open-events").send(b"x")
                return bool(sub.poll(50))

            wait_until(seen, "an event")
        finally:
            client.close()
            sub.close(linger=0)


def test_the_zap_handler_answers_each_case():
    ctx = zmq.Context()
    handler = ZapHandler(ctx, lambda token: (token == "ok", "bad token", "role"))
    try:
        def ask(*frames: bytes) -> list[bytes]:
            return handler.answer(list(frames))

        base = (b"1.0", b"7")
        assert ask(*base, EVENTS_DOMAIN, b"addr", b"", b"PLAIN", b"token", b"ok")[2:5] == [
            b"200", b"OK", b"role"]
        assert ask(*base, EVENTS_DOMAIN, b"addr", b"", b"PLAIN", b"token", b"no")[2:4] == [
            b"400", b"bad token"]
        assert ask(*base, EVENTS_DOMAIN, b"addr", b"", b"NULL")[2] == b"400"
        assert ask(*base, EVENTS_DOMAIN, b"addr", b"", b"PLAIN", b"u", b"\xff")[2] == b"400"
        assert ask(*base, b"", b"addr", b"", b"CURVE", b"k" * 32)[2] == b"200"  # the ROUTER
        assert ask(b"2.0", b"7", b"", b"a", b"", b"NULL")[2] == b"500"
        assert ask(b"1.0")[2] == b"500"
    finally:
        handler.close()
        ctx.term()


def test_live_widgets_follow_a_locked_broker_with_its_token_and_key(tmp_path):
    from pulsarlab.broker import curve
    from pulsarlab.widgets import LiveBinding

    public_path, secret_path = curve.create_keypair_files(tmp_path)
    with Broker(storage="memory", authentication_enabled=True, authorization_enabled=True,
                super_user_roles="root", curve_secret_key_file=str(secret_path)) as b:
        security = {"authentication": AuthenticationToken(b.create_token("root")),
                    "curve_server_key": str(public_path)}
        client = Client(b.service_url, **security)
        try:
            consumer = client.subscribe("watched", "s")
            producer = client.create_producer("watched")
            with (
                LiveBinding(b.service_url, b.events_url, "watched", "s",
                            security=security) as binding,
                LiveBinding(b.service_url, b.events_url, "watched", "s",
                            admin=Admin(b.web_url, **security)) as outsider,
            ):
                def seen() -> bool:
                    producer.send(b"x")
                    consumer.acknowledge(consumer.receive(timeout_millis=10_000))
                    return len(binding.events) > 0 and binding.snapshot() is not None

                wait_until(seen, "the live binding to get events and stats")
                wait_until(lambda: outsider.snapshot() is not None, "the outsider's stats")
                assert outsider.running
                assert len(outsider.events) == 0  # no token: its SUB never logs in
        finally:
            client.close()
