"""Helpers for the security tests: a raw Pulsar-frame DEALER (one ZeroMQ message is one
Pulsar frame, as the integration tests' :mod:`integration.zmq_pulsar.dealer` sends them) and
a condition wait."""

from __future__ import annotations

from integration.zmq_pulsar.dealer import (
    CLOSED,
    QUIET_MS,
    PulsarDealer,
    T,
    api,
    command,
    send_frame,
    wait_until,
)

__all__ = [
    "CLOSED", "QUIET_MS", "PulsarDealer", "T", "api", "command", "send_frame", "token_connect",
    "wait_until",
]


def token_connect(dealer: PulsarDealer, token: str) -> api.BaseCommand:
    """CONNECT with a token (``auth_method_name`` "token"); the broker's answer."""
    return dealer.connect(auth_method_name="token", auth_data=token.encode())
