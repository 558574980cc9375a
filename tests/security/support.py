"""Helpers for the security tests: a raw wire-v1 DEALER and a condition wait."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any, TypeVar

import zmq

from pulsarlab.broker import wire

T = TypeVar("T")


class Raw:
    """One DEALER speaking wire v1 by hand (optionally as a CURVE client)."""

    def __init__(self, service_url: str, curve_server_key: bytes | None = None) -> None:
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.linger = 0
        if curve_server_key is not None:
            from pulsarlab.broker.curve import apply_client

            apply_client(self.sock, curve_server_key)
        self.sock.connect(service_url.replace("zmq://", "tcp://"))
        self._ids = itertools.count(1)

    def send(self, name: str, request_id: int = 0, payloads=(), **fields: Any) -> None:
        self.sock.send_multipart(wire.encode(name, request_id, payloads, **fields))

    def recv(self, timeout_ms: int = 10_000) -> wire.Command:
        """The next message other than PING (a PING is answered)."""
        while True:
            if not self.sock.poll(timeout_ms):
                raise TimeoutError("no reply from the broker")
            cmd = wire.decode(self.sock.recv_multipart(), wire.BROKER_COMMANDS)
            if cmd.name != "PING":
                return cmd
            self.send("PONG")

    def request(self, name: str, payloads=(), **fields: Any) -> wire.Command:
        rid = next(self._ids)
        self.send(name, rid, payloads, **fields)
        while True:
            cmd = self.recv()
            if cmd.request_id == rid:
                return cmd

    def close(self) -> None:
        self.sock.close(linger=0)


def wait_until(predicate: Callable[[], T], what: str, timeout: float = 20.0) -> T:
    """Poll ``predicate`` until truthy; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.01)
