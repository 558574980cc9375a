"""A Pulsar session over a sans-I/O core on a manual clock, driven with bytes."""

from __future__ import annotations

from typing import Any

from pulsarlab.broker import BrokerService, BrokerSettings, ManualClock
from pulsarlab.broker.admin_handler import AdminHandler
from pulsarlab.broker.pulsar_protocol import FrameDecoder, PulsarSession
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.pulsar_protocol.framing import encode_command, encode_payload_command
from pulsarlab.broker.security import Authenticator
from pulsarlab.broker.storage import MemoryStorage

T = api.BaseCommand


def command(type_: int, field: str, **fields: Any) -> bytes:
    """A simple command frame."""
    cmd = T(type=type_)
    getattr(cmd, field).CopyFrom(type(getattr(cmd, field))(**fields))
    return encode_command(cmd)


def send_frame(producer_id: int, sequence_id: int, payload: bytes, **metadata: Any) -> bytes:
    """A SEND frame with its metadata and checksum, as the official client lays it out."""
    md = api.MessageMetadata(producer_name="p", sequence_id=sequence_id, publish_time=1,
                             **metadata)
    cmd = T(type=T.SEND, send=api.CommandSend(producer_id=producer_id, sequence_id=sequence_id))
    return encode_payload_command(cmd, md.SerializeToString(), payload)


class Buffered:
    """A transport that leaves what a session queued in place (tests read it)."""

    def flush(self, session: PulsarSession) -> None:
        pass


class Harness:
    """One core; sessions on it; what each session wrote, decoded."""

    def __init__(self, storage: Any = None, **settings: Any) -> None:
        self.clock = ManualClock()
        self.settings = BrokerSettings.from_kwargs(**settings)
        self.service = BrokerService(
            MemoryStorage() if storage is None else storage, self.clock, self.settings
        )
        self.authenticator = Authenticator(self.settings)
        self.admin = AdminHandler(self.service)
        self.schemas = self.service.schemas

    def session(self) -> PulsarSession:
        return PulsarSession(
            self.service, settings=self.settings, authenticator=self.authenticator,
            service_url="pulsar://127.0.0.1:6650",
            now_ms=self.clock.now_ms, sender=Buffered(),
        )

    def run(self, session: PulsarSession, data: bytes = b"") -> list[api.BaseCommand]:
        """Feed bytes, commit, hand the core's actions out; the commands written back."""
        if data:
            session.receive_data(data)
        self.service.commit()
        for action in self.service.take_actions():
            action.conn.handle_action(action)
        return [frame.command for frame in self.frames(session)]

    def frames(self, session: PulsarSession) -> list:
        return FrameDecoder(1 << 30).feed(session.data_to_send())

    def connect(self, session: PulsarSession, **fields: Any) -> api.BaseCommand:
        fields.setdefault("client_version", "test")
        fields.setdefault("protocol_version", 20)
        (reply,) = self.run(session, command(T.CONNECT, "connect", **fields))
        return reply
