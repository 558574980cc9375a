"""Pulsar frames over ZeroMQ with the broker's security on: token CONNECT and the
AUTH_CHALLENGE refresh as on pulsar://, a session tied to its TCP socket, CurveZMQ, and
max_connections counted across every transport."""

from __future__ import annotations

import contextlib

import msgpack
import pytest
import zmq

from pulsarlab import Broker
from pulsarlab.broker import curve
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api

from .dealer import CLOSED, QUIET_MS, PulsarDealer, T, command, wait_until

pulsar = pytest.importorskip("pulsar", reason="the official pulsar-client (dev extra) is needed")


def _token_connect(dealer: PulsarDealer, token: str, refresh: bool = False) -> api.BaseCommand:
    return dealer.connect(auth_method_name="token", auth_data=token.encode(),
                          feature_flags=api.FeatureFlags(supports_auth_refresh=refresh))


def test_token_connect_is_required_and_a_refused_id_is_dropped() -> None:
    with Broker(storage="memory", authentication_enabled=True) as b:
        good = PulsarDealer(b.service_url)
        bad = PulsarDealer(b.service_url)
        none = PulsarDealer(b.service_url)
        try:
            assert _token_connect(good, b.create_token("alice")).type == T.CONNECTED
            assert good.producer("persistent://public/default/auth").producer_name
            reply = bad.connect(auth_method_name="token", auth_data=b"not-a-token")
            assert reply.type == T.ERROR
            assert reply.error.error == api.AuthenticationError
            assert bad.recv() == CLOSED
            bad.send(command(T.PING, "ping"))  # dropped, unanswered
            assert bad.recv(QUIET_MS) is None
            assert none.connect().type == T.ERROR  # no credentials at all
            assert none.recv() == CLOSED
        finally:
            for d in (good, bad, none):
                d.close()


def test_expired_tokens_are_refreshed_with_auth_challenge_over_zeromq() -> None:
    """Issue 28 listed "ZeroMQ connections are not re-authenticated on token expiry": a
    Pulsar-frame peer gets AUTH_CHALLENGE as on pulsar://, keeps its session when it
    answers with the same role, and is closed when it cannot refresh."""
    with Broker(storage="memory", authentication_enabled=True,
                authentication_refresh_check_seconds=1) as b:
        refresher = PulsarDealer(b.service_url)
        stale = PulsarDealer(b.service_url)
        try:
            assert _token_connect(refresher, b.create_token("r", 1), refresh=True).type == (
                T.CONNECTED)
            assert _token_connect(stale, b.create_token("r", 1)).type == T.CONNECTED
            challenge = refresher.expect(T.AUTH_CHALLENGE).authChallenge
            assert challenge.challenge.auth_method_name == "token"
            refresher.send(command(T.AUTH_RESPONSE, "authResponse", response=api.AuthData(
                auth_method_name="token", auth_data=b.create_token("r", 3600).encode())))
            assert stale.recv() == CLOSED  # it cannot refresh: disconnected
            # The refreshed session is still served after later checks.
            refresher.send(command(T.PING, "ping"))
            refresher.expect(T.PONG)
            period = b.call(lambda s: b.zmq_sessions[next(iter(b.zmq_sessions))]
                            .auth_state.role)
            assert period == "r"
        finally:
            refresher.close()
            stale.close()


def test_a_peer_reusing_a_live_routing_id_is_not_served() -> None:
    with Broker(storage="memory", authentication_enabled=True) as b:
        victim = PulsarDealer(b.service_url, identity=b"victim-id")
        assert _token_connect(victim, b.create_token("root")).type == T.CONNECTED
        spoofer = PulsarDealer(b.service_url, identity=b"victim-id")
        spoofer.send(command(T.PARTITIONED_METADATA, "partitionMetadata",
                             topic="secret", request_id=1))
        assert spoofer.recv(QUIET_MS) is None  # never read while the victim is connected
        spoofer.close()
        victim.send(command(T.PING, "ping"))
        victim.expect(T.PONG)
        victim.close()
        wait_until(lambda: b.call(lambda s: b"victim-id" not in b.zmq_sessions),
                   "the broker to end the closed socket's session")
        late = PulsarDealer(b.service_url, identity=b"victim-id")
        try:
            late.send(command(T.PARTITIONED_METADATA, "partitionMetadata",
                              topic="secret", request_id=1))
            error = late.expect(T.ERROR).error
            assert "before CONNECT" in error.message
            assert late.recv() == CLOSED
        finally:
            late.close()


def test_curve_carries_pulsar_frames(tmp_path) -> None:
    _public, secret = curve.create_keypair_files(tmp_path, "server")
    with Broker(storage="memory", curve_secret_key_file=str(secret)) as b:
        assert b.curve_public_key is not None
        good = PulsarDealer(b.service_url, curve_server_key=b.curve_public_key.encode())
        plain = PulsarDealer(b.service_url)
        try:
            assert good.connect().type == T.CONNECTED
            good.producer("persistent://public/default/curve")
            with contextlib.suppress(zmq.Again):  # no handshake: maybe not even queued
                plain.sock.send(command(T.CONNECT, "connect", client_version="x",
                                        protocol_version=20), zmq.NOBLOCK)
            assert plain.recv(QUIET_MS) is None  # no CURVE handshake, no session
            assert b.call(lambda s: len(b.zmq_sessions)) == 1
        finally:
            good.close()
            plain.close()


def test_max_connections_counts_zeromq_and_pulsar_tcp_together() -> None:
    with Broker(storage="memory", max_connections=2) as b:
        official = pulsar.Client(b.pulsar_url, operation_timeout_seconds=5,
                                 logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        first = PulsarDealer(b.service_url)
        third = PulsarDealer(b.service_url)
        try:
            official.create_producer("persistent://public/default/limits")
            assert first.connect().type == T.CONNECTED
            error = third.connect()
            assert error.type == T.ERROR and "max_connections=2" in error.error.message
            assert third.recv() == CLOSED
            # One of two pulsar:// connections gone frees a place for a ZeroMQ one.
            first.send(b"")
            wait_until(lambda: b.call(lambda s: not b.zmq_sessions),
                       "the hang-up to free its place")
            fourth = PulsarDealer(b.service_url)
            try:
                assert fourth.connect().type == T.CONNECTED
                # Full again: the official client cannot open a second connection.
                other = pulsar.Client(b.pulsar_url, operation_timeout_seconds=3,
                                      logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
                try:
                    with pytest.raises(pulsar.PulsarException):
                        other.create_producer("persistent://public/default/limits")
                finally:
                    other.close()
            finally:
                fourth.close()
        finally:
            official.close()
            first.close()
            third.close()


def test_a_peer_closed_for_another_protocol_cannot_start_over_with_pulsar_frames() -> None:
    """With authentication on, a routing id closed for a first message that is not a
    Pulsar frame (the old msgpack wire's) stays dropped, even with a valid token next."""
    with Broker(storage="memory", authentication_enabled=True) as b:
        peer = PulsarDealer(b.service_url)
        try:
            peer.send(msgpack.packb({"v": 1, "cmd": "GET_TOPICS", "rid": 1,
                                     "namespace": "public/default"}))
            assert peer.recv() == CLOSED  # no answer that could leak anything, just closed
            before = b.dropped_from_refused
            peer.send(command(T.CONNECT, "connect", client_version="x", protocol_version=20,
                              auth_method_name="token",
                              auth_data=b.create_token("r").encode()))
            assert peer.recv(QUIET_MS) is None
            wait_until(lambda: b.call(lambda s: b.dropped_from_refused) == before + 1,
                       "the message to be dropped")
            assert b.call(lambda s: len(b.zmq_sessions)) == 0
        finally:
            peer.close()
