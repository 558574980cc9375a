"""Pulsar frames: cut a byte stream into commands, lay out outgoing commands.

A simple command is ``[total_size u32][command_size u32][BaseCommand]``; a payload command
(SEND, MESSAGE) continues after the command with ``[magic 0x0e01 u16][CRC32C u32]
[metadata_size u32][MessageMetadata][payload]``, the checksum covering everything from
``metadata_size`` to the end. Sizes are big-endian. The decoder is sans-I/O: feed it bytes
as they arrive, take the complete frames; a frame that cannot be valid raises
:class:`FrameError` and the connection is closed (Pulsar does the same).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import google_crc32c
from google.protobuf.message import DecodeError

from .PulsarApi_pb2 import BaseCommand

MAGIC_CRC32C = 0x0E01
MAX_FRAME_OVERHEAD = 10 * 1024  # Pulsar allows max_message_size + 10 KiB per frame
# Before CONNECT succeeds: room for a CONNECT with a large token, not for a message.
MAX_HANDSHAKE_FRAME = 64 * 1024

_U32 = struct.Struct(">I")
_HEAD = struct.Struct(">II")
_U16 = struct.Struct(">H")
_CHECKSUM_HEAD = struct.Struct(">HI")
_PAYLOAD_HEAD = struct.Struct(">HII")  # magic, checksum, metadata size
_crc32c = google_crc32c.value
_new_tuple = tuple.__new__

__all__ = [
    "MAGIC_CRC32C",
    "MAX_HANDSHAKE_FRAME",
    "Frame",
    "FrameDecoder",
    "FrameError",
    "decode_message",
    "encode_command",
    "encode_payload_command",
    "encode_payload_frame",
]


class FrameError(Exception):
    """A frame that breaks the framing rules: the connection cannot continue."""


class Frame(NamedTuple):
    """One decoded frame: the command and, for payload commands, what follows it."""

    command: BaseCommand
    metadata: bytes | None = None  # serialized MessageMetadata
    payload: bytes | None = None
    checksum_ok: bool = True


class FrameDecoder:
    """Reassembles frames from a TCP byte stream."""

    def __init__(self, max_frame_size: int, checksum_optional: bool = False) -> None:
        self.max_frame_size = max_frame_size
        # Pulsar's framing makes the magic and checksum optional (brokers such as
        # pulsar-lite leave them out of MESSAGE): the client accepts both forms.
        self.checksum_optional = checksum_optional
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Frame]:
        """Add received bytes; return every frame now complete (in order)."""
        buffer = self._buffer
        if buffer:
            buffer += data
            data = bytes(buffer)  # frames are cut from one immutable copy
        elif type(data) is not bytes:
            data = bytes(data)
        frames: list[Frame] = []
        offset = 0
        end = len(data)
        checksum_optional = self.checksum_optional
        while end - offset >= 4:
            (total,) = _U32.unpack_from(data, offset)
            if total < 4 or total > self.max_frame_size:
                raise FrameError(
                    f"frame size {total} is outside 4..{self.max_frame_size} bytes"
                )
            if end - offset - 4 < total:
                break
            start = offset + 4
            offset = start + total
            frames.append(_decode_frame(data, start, offset, checksum_optional))
        if offset < end:  # an incomplete frame waits for its next bytes
            if buffer:
                del buffer[:offset]
            else:
                buffer += data[offset:]
        elif buffer:
            buffer.clear()
        return frames


def decode_message(data: bytes, max_frame_size: int, checksum_optional: bool = False
                   ) -> Frame:
    """The one frame a whole message carries (ZeroMQ: one message is one frame, byte for
    byte as on TCP, size fields included); a message that is not exactly one valid frame
    raises :class:`FrameError`."""
    size = len(data)
    if size < 8:
        raise FrameError(f"a {size}-byte message is shorter than a frame's 8-byte header")
    (total,) = _U32.unpack_from(data, 0)
    if total != size - 4:
        raise FrameError(
            f"frame size {total} does not match the {size}-byte message that carries it "
            "(one message is one whole frame)"
        )
    if total > max_frame_size:
        raise FrameError(f"frame size {total} is outside 4..{max_frame_size} bytes")
    return _decode_frame(data, 4, size, checksum_optional)


def _decode_frame(data: bytes, start: int, end: int, checksum_optional: bool = False) -> Frame:
    """The frame in ``data[start:end]`` (after its total size), sliced out of ``data``."""
    (command_size,) = _U32.unpack_from(data, start)
    rest = start + 4 + command_size
    if command_size == 0 or rest > end:
        raise FrameError(
            f"command size {command_size} does not fit a {end - start}-byte frame"
        )
    command = BaseCommand()
    try:
        command.ParseFromString(data[start + 4 : rest])
    except DecodeError as exc:
        raise FrameError(f"the command is not a valid BaseCommand: {exc}") from None
    if rest == end:
        return Frame(command)
    if end - rest >= 10:  # the usual payload command: magic, checksum, metadata size
        magic, checksum, metadata_size = _PAYLOAD_HEAD.unpack_from(data, rest)
        if magic == MAGIC_CRC32C:
            body = rest + 6
            metadata_end = body + 4 + metadata_size
            if metadata_end > end:
                raise FrameError(f"metadata size {metadata_size} runs past the frame")
            return _new_tuple(Frame, (  # Frame(...) without its Python-level __new__
                command, data[body + 4 : metadata_end], data[metadata_end:end],
                _crc32c(data[body:end]) == checksum,
            ))
    return _decode_payload(command, data, rest, end, checksum_optional)


def _decode_payload(
    command: BaseCommand, data: bytes, rest: int, end: int, checksum_optional: bool
) -> Frame:
    """A payload command without the magic (where the checksum is optional), or one that
    breaks the rules."""
    if checksum_optional and (end - rest < 2 or _U16.unpack_from(data, rest)[0]
                              != MAGIC_CRC32C):
        if end - rest < 4:
            raise FrameError("a payload command is too short for its metadata size")
        (metadata_size,) = _U32.unpack_from(data, rest)
        metadata_end = rest + 4 + metadata_size
        if metadata_end > end:
            raise FrameError(f"metadata size {metadata_size} runs past the frame")
        return Frame(command, data[rest + 4 : metadata_end], data[metadata_end:end], True)
    if end - rest < 10:
        raise FrameError("a payload command is too short for its checksum and metadata size")
    magic = _U16.unpack_from(data, rest)[0]
    raise FrameError(f"payload magic is {magic:#06x}, not {MAGIC_CRC32C:#06x}")


def encode_command(command: BaseCommand) -> bytes:
    """A simple command frame."""
    body = command.SerializeToString()
    size = len(body)
    return _HEAD.pack(size + 4, size) + body


def encode_payload_command(command: BaseCommand, metadata: bytes, payload: bytes) -> bytes:
    """A payload command frame (MESSAGE, SEND) with its CRC32C checksum."""
    return encode_payload_frame(command.SerializeToString(), metadata, payload)


def encode_payload_frame(body: bytes, metadata: bytes, payload: bytes) -> bytes:
    """A payload command frame of a serialized ``BaseCommand``, with its CRC32C checksum."""
    size = len(body)
    checked = b"".join((_U32.pack(len(metadata)), metadata, payload))
    return b"".join((
        _HEAD.pack(size + 4 + 6 + len(checked), size),
        body,
        _CHECKSUM_HEAD.pack(MAGIC_CRC32C, _crc32c(checked)),
        checked,
    ))
