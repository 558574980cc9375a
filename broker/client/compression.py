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

import cramjam

from .enums import CompressionType

__all__ = ["CODEC_NAMES", "codec_name", "compress", "decompress"]

CODEC_NAMES: dict[CompressionType, str] = {
    CompressionType.NONE: "NONE",
    CompressionType.LZ4: "LZ4",
    CompressionType.ZLib: "ZLIB",
    CompressionType.ZSTD: "ZSTD",
    CompressionType.SNAPPY: "SNAPPY",
}


def codec_name(codec: CompressionType | str) -> str:
    """The metadata name (``"LZ4"``, ``"ZLIB"``, ...) of a codec given by enum or name."""
    if isinstance(codec, CompressionType):
        return CODEC_NAMES[codec]
    name = str(codec).upper()
    if name not in CODEC_NAMES.values():
        raise ValueError(f"unknown compression codec {codec!r}")
    return name


def compress(codec: CompressionType | str, data: bytes) -> bytes:
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


def decompress(codec: CompressionType | str, data: bytes, uncompressed_size: int) -> bytes:
    """Undo :func:`compress`; a result whose length is not ``uncompressed_size`` is an error."""
    name = codec_name(codec)
    if name == "NONE":
        return bytes(data)
    try:
        if name == "ZLIB":
            out = zlib.decompress(data)
        elif name == "LZ4":
            if uncompressed_size == 0:
                return b""
            out = bytes(cramjam.lz4.decompress_block(data, output_len=uncompressed_size))
        elif name == "ZSTD":
            out = bytes(cramjam.zstd.decompress(data))
        else:
            out = bytes(cramjam.snappy.decompress_raw(data))
    except Exception as exc:  # the codecs raise their own error types on corrupt input
        raise ValueError(f"corrupt {name} payload: {exc}") from None
    if len(out) != uncompressed_size:
        raise ValueError(
            f"{name} payload decompressed to {len(out)} bytes, metadata says {uncompressed_size}"
        )
    return out
