"""A raw wire-protocol client for the server tests (no client library involved)."""

from __future__ import annotations

import itertools
from typing import Any

import zmq

from pulsarlab.broker import wire


class RawClient:
    """One DEALER socket speaking wire v1 by hand."""

    def __init__(self, service_url: str, connect: bool = True) -> None:
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.linger = 0
        self.sock.connect(service_url.replace("zmq://", "tcp://"))
        self._ids = itertools.count(1)
        self.pushed: list[wire.Command] = []
        self._unpacked: list[wire.Command] = []  # receipts of a SEND_RECEIPTS not yet read
        self.answer_pings = True
        if connect:
            reply = self.request("CONNECT", client_version="test")
            assert reply.name == "CONNECTED", reply

    def send_raw(self, frames: list[bytes]) -> None:
        self.sock.send_multipart(frames)

    def send(self, name: str, request_id: int = 0, payloads=(), **fields: Any) -> None:
        self.sock.send_multipart(wire.encode(name, request_id, payloads, **fields))

    def recv(self, timeout_ms: int = 10_000) -> wire.Command:
        if self._unpacked:
            return self._unpacked.pop(0)
        while True:
            if not self.sock.poll(timeout_ms):
                raise TimeoutError("no reply from the broker")
            cmd = wire.decode(self.sock.recv_multipart(), wire.BROKER_COMMANDS)
            if cmd.name == "PING":
                if self.answer_pings:
                    self.send("PONG")
                continue
            if cmd.name == "SEND_RECEIPTS":  # one SEND_RECEIPT each, in order
                first, *rest = wire.split_receipts(cmd)
                self._unpacked.extend(rest)
                return first
            return cmd

    def request(self, name: str, payloads=(), timeout_ms: int = 10_000, **fields: Any):
        request_id = next(self._ids)
        self.send(name, request_id, payloads, **fields)
        while True:
            cmd = self.recv(timeout_ms)
            if cmd.request_id == request_id and cmd.name not in ("MESSAGE", "SEND_RECEIPT"):
                return cmd
            self.pushed.append(cmd)

    def wait_for(self, name: str, timeout_ms: int = 10_000) -> wire.Command:
        for i, cmd in enumerate(self.pushed):
            if cmd.name == name:
                return self.pushed.pop(i)
        while True:
            cmd = self.recv(timeout_ms)
            if cmd.name == name:
                return cmd
            self.pushed.append(cmd)

    def close(self) -> None:
        self.sock.close(linger=0)
