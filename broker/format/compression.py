"""Payload compression codecs: NONE, LZ4, ZLIB, ZSTD and SNAPPY, named as Pulsar names them.

The producer compresses a whole entry payload (a single message or a batch) and records the
codec name and the uncompressed size in the entry metadata (``compression``,
``uncompressed_size``); consumers decompress transparently. The framings follow Pulsar's
codecs: LZ4 is a raw block without a size prefix (the size comes from the metadata), ZLIB
the zlib format, ZSTD a zstd frame, SNAPPY raw (unframed) snappy. zlib comes from the
standard library, the others from cramjam.
"""

from __future__ import annotations

import zlib
from typing import Any

import cramjam

__all__ = ["CODEC_NAMES", "codec_name", "compress", "decompress"]

CODEC_NAMES = ("NONE", "LZ4", "ZLIB", "ZSTD", "SNAPPY")  # Pulsar's CompressionType order
# The most bytes one compressed byte can become, from each format's layout: an LZ4 match
# length grows by 255 per extra byte; a 3-byte snappy copy emits at most 64 bytes; a 4-byte
# zstd RLE block emits at most 128 KiB. A declared size beyond that (plus headers) is a lie,
# refused before a buffer of that size is allocated (LZ4, ZSTD and SNAPPY decode into one).
_MAX_RATIO = {"LZ4": 255, "SNAPPY": 22, "ZSTD": 32_768}
_HEADER_SLACK = 64


def codec_name(codec: Any) -> str:
    """The metadata name (``"LZ4"``, ``"ZLIB"``, ...) of a codec given by name or by an enum
    member named after it (the client's ``CompressionType.ZLib`` is ``"ZLIB"``)."""
    name = str(getattr(codec, "name", codec)).upper()
    if name not in CODEC_NAMES:
        raise ValueError(f"unknown compression codec {codec!r}")
    return name


def compress(codec: Any, data: bytes) -> bytes:
    """Compress ``data`` with ``codec``; ``NONE`` returns it unchanged."""
    name = codec_name(codec)
    if name == "NONE":
        return bytes(data)
    if name == "ZLIB":
        return zlib.compress(data)
    if name == "LZ4":
        return bytes(cramjam.lz4.compress_block(data, store_size=False))
    if name == "ZSTD":
        return bytes(cramjam.zstd.compress(data))
    return bytes(cramjam.snappy.compress_raw(data))


def decompress(
    codec: Any,
    data: bytes,
    uncompressed_size: int,
    max_size: int | None = None,
) -> bytes:
    """Undo :func:`compress`; a result whose length is not ``uncompressed_size`` is an error.

    Never inflates past the declared ``uncompressed_size`` (a payload that would, a
    decompression bomb, is a ``ValueError`` once that many bytes are out), and with
    ``max_size`` (the broker passes ``max_message_size``) a declared size above it is refused
    before anything is allocated.
    """
    name = codec_name(codec)
    if name == "NONE":
        return bytes(data)
    if uncompressed_size < 0 or (max_size is not None and uncompressed_size > max_size):
        raise ValueError(
            f"{name} payload declares {uncompressed_size} uncompressed bytes, outside "
            f"0..{max_size} (max_message_size)"
        )
    if uncompressed_size == 0 and name == "LZ4":
        return b""
    ratio = _MAX_RATIO.get(name)
    if ratio is not None and uncompressed_size > (len(data) + _HEADER_SLACK) * ratio:
        raise ValueError(
            f"{name} payload of {len(data)} bytes cannot hold the {uncompressed_size} "
            "uncompressed bytes its metadata declares"
        )
    try:
        out = _inflate(name, data, uncompressed_size)
    except ValueError:
        raise
    except Exception as exc:  # the codecs raise their own error types on corrupt input
        raise ValueError(f"corrupt {name} payload: {exc}") from None
    if len(out) != uncompressed_size:
        raise ValueError(
            f"{name} payload decompressed to {len(out)} bytes, metadata says {uncompressed_size}"
        )
    return out


def _inflate(name: str, data: bytes, size: int) -> bytes:
    """Decompress into at most ``size`` bytes (+1 to notice more): bounded whatever the
    payload claims inside (a zstd frame's or snappy's own length header)."""
    if name == "ZLIB":
        inflater = zlib.decompressobj()
        out = inflater.decompress(data, size + 1)  # max_length: never more than this
        if len(out) > size or inflater.unconsumed_tail:
            raise ValueError(f"ZLIB payload inflates past its declared {size} bytes")
        if not inflater.eof:
            raise ValueError("corrupt ZLIB payload: the stream is incomplete")
        return out
    if name == "LZ4":
        return bytes(cramjam.lz4.decompress_block(data, output_len=size))
    buffer = bytearray(size)
    into = cramjam.zstd.decompress_into if name == "ZSTD" else cramjam.snappy.decompress_raw_into
    written = into(data, buffer)
    return bytes(buffer) if written == size else bytes(buffer[:written])
