"""Sticky keys, the 31-bit murmur hash, Java's String.hashCode and producer partition routing."""

from __future__ import annotations

import base64

import pytest

from pulsarlab.broker.selectors import (
    NONE_KEY,
    RANGE_SIZE,
    HashingScheme,
    java_string_hash,
    java_string_hash_code,
    murmur3_32_hash,
    partition_for_key,
    slot,
    sticky_key,
    sticky_key_hash,
)


def test_spec_example_order_3459134() -> None:
    import mmh3

    assert mmh3.hash(b"Order-3459134", 0, signed=False) == 3112179635  # the seed's number
    assert sticky_key_hash(b"Order-3459134") == 964695987  # what Pulsar uses
    assert murmur3_32_hash("Order-3459134") == 964695987
    assert slot(964695987) == slot(3112179635) == 6067
    assert RANGE_SIZE == 65536


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        # Published MurmurHash3_x86_32 seed-0 vectors (all below 2**31, so unmasked).
        (b"", 0),
        (b"hello", 0x248BFA47),
        (b"The quick brown fox jumps over the lazy dog", 0x2E4FF723),
    ],
)
def test_murmur_known_vectors(data: bytes, expected: int) -> None:
    assert murmur3_32_hash(data) == expected
    assert murmur3_32_hash(data.decode()) == expected


def test_murmur_is_masked_to_31_bits() -> None:
    # NONE_KEY's unsigned murmur is 2652225187 (> 2**31): Pulsar clears the top bit.
    assert murmur3_32_hash(NONE_KEY) == 2652225187 - 2**31
    assert all(0 <= murmur3_32_hash(f"key-{i}") < 2**31 for i in range(1000))


def test_sticky_key_precedence() -> None:
    assert sticky_key(b"ord", "part") == b"ord"
    assert sticky_key(None, "part") == b"part"
    assert sticky_key(None, None) == NONE_KEY == b"NONE_KEY"
    assert sticky_key(b"", "part") == b""  # a present, empty ordering key still wins
    assert sticky_key(None, "ключ") == "ключ".encode()


def test_sticky_key_base64_partition_key() -> None:
    raw = b"\x00\xffbinary"
    encoded = base64.b64encode(raw).decode()
    assert sticky_key(None, encoded, partition_key_b64_encoded=True) == raw
    assert sticky_key(None, encoded) == encoded.encode()
    with pytest.raises(ValueError):
        sticky_key(None, "not base64!", partition_key_b64_encoded=True)


@pytest.mark.parametrize(
    ("text", "hash_code"),
    [
        ("", 0),
        ("a", 97),
        ("ab", 97 * 31 + 98),  # 3105
        ("hello", 99162322),
        # U+1F600 is the surrogate pair D83D DE00: 0xD83D * 31 + 0xDE00.
        ("\U0001f600", 0xD83D * 31 + 0xDE00),
        ("polygenelubricants", -(2**31)),  # the famous Integer.MIN_VALUE hashCode
    ],
)
def test_java_string_hash_code(text: str, hash_code: int) -> None:
    assert java_string_hash_code(text) == hash_code
    assert java_string_hash(text) == hash_code & 0x7FFFFFFF


def test_java_string_hash_masks_negative_codes() -> None:
    assert java_string_hash("polygenelubricants") == 0
    # "hellohellohello" overflows: check the signed wrap against a direct computation.
    h = 0
    for ch in "hellohellohello":
        h = (31 * h + ord(ch)) % 2**32
    signed = h - 2**32 if h >= 2**31 else h
    assert java_string_hash_code("hellohellohello") == signed
    assert java_string_hash("hellohellohello") == h & 0x7FFFFFFF


def test_partition_for_key_schemes() -> None:
    # 99162322 % 3 == 1 (digit sum 34); 964695987 % 4 == 3 (87 % 4).
    assert partition_for_key("hello", 3) == 1
    assert partition_for_key("hello", 3, HashingScheme.JavaStringHash) == 1
    assert partition_for_key("Order-3459134", 4, HashingScheme.Murmur3_32Hash) == 3
    assert partition_for_key("polygenelubricants", 7) == 0
    assert partition_for_key("anything", 1) == 0
    with pytest.raises(ValueError):
        partition_for_key("k", 0)


def test_hashing_scheme_names_match_the_java_enum() -> None:
    assert HashingScheme("JavaStringHash") is HashingScheme.JavaStringHash
    assert HashingScheme.Murmur3_32Hash.value == "Murmur3_32Hash"
    assert HashingScheme.Murmur3_32Hash.hash("hello") == 0x248BFA47
