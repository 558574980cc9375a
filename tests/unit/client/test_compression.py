"""Each codec round-trips; bad input is a clear error."""

from __future__ import annotations

import pytest

from pulsarlab.broker.client import CompressionType
from pulsarlab.broker.client.compression import codec_name, compress, decompress

CODECS = list(CompressionType)
PAYLOADS = [b"", b"a", b"hello pulsar " * 500, bytes(range(256)) * 40]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda p: f"{len(p)}B")
def test_round_trip(codec, payload):
    packed = compress(codec, payload)
    assert decompress(codec_name(codec), packed, len(payload)) == payload


@pytest.mark.parametrize("codec", [c for c in CODECS if c is not CompressionType.NONE],
                         ids=lambda c: c.name)
def test_compressible_data_shrinks(codec):
    payload = b"abc" * 10_000
    assert len(compress(codec, payload)) < len(payload) // 10


def test_metadata_names():
    assert [codec_name(c) for c in CODECS] == ["NONE", "LZ4", "ZLIB", "ZSTD", "SNAPPY"]
    assert codec_name("zlib") == "ZLIB"
    with pytest.raises(ValueError):
        codec_name("gzip")


def test_wrong_uncompressed_size_is_an_error():
    packed = compress(CompressionType.ZLib, b"x" * 100)
    with pytest.raises(ValueError, match="metadata says 99"):
        decompress("ZLIB", packed, 99)


@pytest.mark.parametrize("name", ["LZ4", "ZLIB", "ZSTD", "SNAPPY"])
def test_corrupt_payload_is_a_value_error(name):
    with pytest.raises(ValueError):
        decompress(name, b"\xff\x00\x13definitely not compressed", 1000)
