"""A raw ZeroMQ DEALER speaking Pulsar frames to the broker's ROUTER (one message = one
frame), built with the broker's own framing module: what a Pulsar-over-ZeroMQ client does,
without any client library in between."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any, TypeVar

import zmq

from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.pulsar_protocol.framing import (
    Frame,
    decode_message,
    encode_command,
    encode_payload_command,
)

T = api.BaseCommand
V = TypeVar("V")
WAIT_MS = 10_000  # bound for an answer that must come
QUIET_MS = 300  # how long "nothing comes" is checked for
CLOSED = "closed"  # what recv returns for the broker's empty close notice


def command(type_: int, field: str, **fields: Any) -> bytes:
    """A simple command frame."""
    cmd = T(type=type_)
    getattr(cmd, field).CopyFrom(type(getattr(cmd, field))(**fields))
    return encode_command(cmd)


def send_frame(producer_id: int, sequence_id: int, payload: bytes, **metadata: Any) -> bytes:
    """A SEND frame with its metadata and checksum."""
    md = api.MessageMetadata(producer_name="p", sequence_id=sequence_id, publish_time=1,
                             **metadata)
    cmd = T(type=T.SEND, send=api.CommandSend(producer_id=producer_id, sequence_id=sequence_id))
    return encode_payload_command(cmd, md.SerializeToString(), payload)


class PulsarDealer:
    """One Pulsar connection over a DEALER socket."""

    def __init__(self, service_url: str, *, identity: bytes | None = None,
                 curve_server_key: bytes | None = None) -> None:
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.linger = 0
        if identity is not None:
            self.sock.setsockopt(zmq.ROUTING_ID, identity)
        if curve_server_key is not None:
            public, secret = zmq.curve_keypair()
            self.sock.curve_publickey = public
            self.sock.curve_secretkey = secret
            self.sock.curve_serverkey = curve_server_key
        self.sock.connect(service_url.replace("zmq://", "tcp://"))
        self._ids = itertools.count(1)

    def close(self) -> None:
        self.sock.close(linger=0)

    def send(self, *parts: bytes) -> None:
        self.sock.send_multipart(list(parts))

    def recv(self, timeout_ms: int = WAIT_MS) -> Frame | str | None:
        """The next frame (PINGs answered and skipped), ``CLOSED`` for the broker's close
        notice, ``None`` if nothing came within ``timeout_ms``."""
        while True:
            if not self.sock.poll(timeout_ms):
                return None
            (message,) = self.sock.recv_multipart()
            if not message:
                return CLOSED
            frame = decode_message(message, 1 << 30)
            if frame.command.type == T.PING:
                self.send(command(T.PONG, "pong"))
                continue
            return frame

    def expect(self, type_: int, timeout_ms: int = WAIT_MS) -> Any:
        """The next frame, which must be of ``type_``: its command."""
        frame = self.recv(timeout_ms)
        assert isinstance(frame, Frame), f"expected {T.Type.Name(type_)}, got {frame!r}"
        assert frame.command.type == type_, (
            f"expected {T.Type.Name(type_)}, got {frame.command}"
        )
        return frame.command

    def request_id(self) -> int:
        return next(self._ids)

    def connect(self, **fields: Any) -> Any:
        fields.setdefault("client_version", "raw-dealer")
        fields.setdefault("protocol_version", 20)
        self.send(command(T.CONNECT, "connect", **fields))
        frame = self.recv()
        assert isinstance(frame, Frame), f"no answer to CONNECT: {frame!r}"
        return frame.command

    def producer(self, topic: str, producer_id: int = 1, **fields: Any) -> Any:
        self.send(command(T.PRODUCER, "producer", topic=topic, producer_id=producer_id,
                          request_id=self.request_id(), **fields))
        return self.expect(T.PRODUCER_SUCCESS).producer_success

    def subscribe(self, topic: str, subscription: str, consumer_id: int = 1,
                  sub_type: int = api.CommandSubscribe.Exclusive, permits: int = 1000,
                  **fields: Any) -> None:
        self.send(command(T.SUBSCRIBE, "subscribe", topic=topic, subscription=subscription,
                          consumer_id=consumer_id, request_id=self.request_id(),
                          subType=sub_type, **fields))
        self.expect(T.SUCCESS)
        if permits:
            self.send(command(T.FLOW, "flow", consumer_id=consumer_id,
                              messagePermits=permits))


def wait_until(predicate: Callable[[], V], what: str, timeout: float = 20.0) -> V:
    """Poll ``predicate`` until truthy; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.01)
