"""pulsarlab's client keep-alive, as Pulsar's clients: it PINGs each connection every
``keep_alive_interval_seconds`` and closes one that sent nothing since its last PING, so a
silently dead broker is noticed and the producers on it reconnect. The broker here is a raw
socket server speaking just enough of Pulsar's protocol; it can stop answering one
connection without closing it (a peer that died with the network): :mod:`.fake_pulsar_broker`."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from pulsarlab.broker.client import Client, ConnectError

from .fake_pulsar_broker import FakeBroker, serve

GENEROUS_S = 30  # "eventually": far beyond the intervals the tests use, even under load

@pytest.fixture
def answering() -> Iterator[FakeBroker]:
    yield from serve(FakeBroker())


@pytest.fixture
def dying() -> Iterator[FakeBroker]:
    yield from serve(FakeBroker(silence_first=True))


def test_an_answering_broker_is_pinged_and_kept(answering: FakeBroker) -> None:
    client = Client(answering.url, operation_timeout_seconds=10, keep_alive_interval_seconds=0.05)
    try:
        producer = client.create_producer("kept")
        assert answering.five_pings.wait(GENEROUS_S)
        producer.send(b"still here")
        assert answering.connections == 1  # PONGs kept the one connection open
        assert answering.stored == [(0, b"still here")]
    finally:
        client.close()


def test_a_silent_broker_is_dropped_and_the_producer_reconnects(
    dying: FakeBroker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pulsarlab.client")
    client = Client(dying.url, operation_timeout_seconds=10, keep_alive_interval_seconds=0.2)
    try:
        producer = client.create_producer("dying")
        assert dying.silenced == {0}
        # The SEND goes into the silent connection; the keep-alive closes it, the producer
        # is created again on a new connection and sends it there.
        producer.send(b"after the silence")
        assert dying.stored == [(1, b"after the silence")]
        assert dying.connections == 2
        assert dying.pings[0] >= 1  # the silent peer was PINGed before it was given up
        warned = [r.getMessage() for r in caplog.records if "answered no PING" in r.getMessage()]
        assert warned == [f"{dying.url} answered no PING within 0.2 s: closing the connection"]
    finally:
        client.close()


def test_a_broker_that_never_completes_the_handshake_is_dropped() -> None:
    for mute in serve(FakeBroker(mute=True)):
        client = Client(mute.url, connection_timeout_ms=GENEROUS_S * 1000,
                        keep_alive_interval_seconds=0.2)
        try:
            with pytest.raises(ConnectError, match=r"completed no handshake within 0\.2 s"):
                client.create_producer("mute")
        finally:
            client.close()


def test_the_keep_alive_interval_is_checked() -> None:
    with pytest.raises(ValueError, match="keep_alive_interval_seconds"):
        Client("pulsar://127.0.0.1:6650", keep_alive_interval_seconds=0)
    with pytest.raises(ValueError, match="keep_alive_interval_seconds"):
        Client("pulsar://127.0.0.1:6650", keep_alive_interval_seconds="30")
