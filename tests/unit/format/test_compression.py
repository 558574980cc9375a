"""Each codec round-trips; bad input is a clear error."""

from __future__ import annotations

import tracemalloc

import pytest

from pulsarlab.broker.client import CompressionType
from pulsarlab.broker.format.compression import codec_name, compress, decompress

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
    with pytest.raises(ValueError, match="99"):
        decompress("ZLIB", packed, 99)


@pytest.mark.parametrize("name", ["LZ4", "ZLIB", "ZSTD", "SNAPPY"])
def test_corrupt_payload_is_a_value_error(name):
    with pytest.raises(ValueError):
        decompress(name, b"\xff\x00\x13definitely not compressed", 1000)


_BOMB_SIZE = 64 << 20


@pytest.mark.parametrize("name", ["LZ4", "ZLIB", "ZSTD", "SNAPPY"])
def test_a_bomb_never_inflates_past_its_declared_size(name):
    bomb = compress(name, bytes(_BOMB_SIZE))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError):
            decompress(name, bomb, 1000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"{name}: {peak} bytes allocated for a 1000-byte message"


@pytest.mark.parametrize("name", ["LZ4", "ZLIB", "ZSTD", "SNAPPY"])
def test_a_declared_size_over_max_size_is_refused_before_allocating(name):
    packed = compress(name, b"x" * 100)
    with pytest.raises(ValueError, match="max_message_size"):
        decompress(name, packed, 1 << 40, max_size=5 << 20)
    with pytest.raises(ValueError, match="outside"):
        decompress(name, packed, -1)
    assert decompress(name, packed, 100, max_size=100) == b"x" * 100


@pytest.mark.parametrize("name", ["LZ4", "ZSTD", "SNAPPY"])
def test_a_size_no_payload_could_hold_is_refused_before_allocating(name):
    """A client gets no max_message_size bound for what it receives (a compressed message
    may inflate past it): a few bytes claiming 4 GiB are refused, not decoded into 4 GiB."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="cannot hold"):
            decompress(name, b"\x1f" * 30, (1 << 32) - 1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"{name}: {peak} bytes allocated"


@pytest.mark.parametrize("name", ["LZ4", "ZLIB", "ZSTD", "SNAPPY"])
def test_the_most_compressible_payload_still_decodes(name):
    """The ratio bounds are each format's real maxima: all-zero data (the best case of every
    codec) decodes at its full size."""
    data = bytes(32 << 20)
    assert decompress(name, compress(name, data), len(data)) == data


def test_the_broker_relays_bound_a_batch_by_max_message_size():
    """A batch stored in pulsarlab's layout, re-laid for a Pulsar consumer on the broker
    thread, is decompressed no further than max_message_size, whatever its metadata
    declares."""
    from pulsarlab.broker.entry import MessageMetadata
    from pulsarlab.broker.format.metadata import to_pulsar

    bomb = compress("ZLIB", bytes(_BOMB_SIZE))
    lying = MessageMetadata(producer_name="p", publish_time=1, num_messages_in_batch=1,
                            compression="ZLIB", uncompressed_size=_BOMB_SIZE)
    with pytest.raises(ValueError, match="max_message_size"):
        to_pulsar(lying, bomb, 5 << 20)
