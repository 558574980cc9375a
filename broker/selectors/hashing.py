"""The hash functions Pulsar 3.3 uses for Key_Shared sticky keys and producer routing.

* Key_Shared: the sticky key of an entry (ordering key, else partition key, else the literal
  ``NONE_KEY``) is hashed with ``Murmur3_32Hash.makeHash`` — MurmurHash3_x86_32, seed 0,
  masked to 31 bits. The auto-split and sticky selectors reduce that to a slot with
  ``hash % 65536``; the 3.x consistent-hashing selector uses the 31-bit value directly.
* Producers: ``partition = hash(key) % num_partitions`` with the Java client's
  ``HashingScheme`` — ``JavaStringHash`` (the default: ``String.hashCode() & MAX``) or
  ``Murmur3_32Hash`` (the murmur above over the key's UTF-8 bytes).

Strings are encoded as Java's ``String.getBytes(UTF_8)`` does: an unpaired surrogate becomes
``?``.
"""

from __future__ import annotations

import base64
import enum
import sys

import mmh3

__all__ = [
    "INT_MAX",
    "NONE_KEY",
    "RANGE_SIZE",
    "HashingScheme",
    "java_string_hash",
    "java_string_hash_code",
    "murmur3_32_hash",
    "partition_for_key",
    "slot",
    "sticky_key",
    "sticky_key_hash",
]

NONE_KEY = b"NONE_KEY"
"""Sticky key of a message with neither ordering key nor partition key (Pulsar ≤ 3.3)."""

RANGE_SIZE = 65536
"""``StickyKeyConsumerSelector.DEFAULT_RANGE_SIZE`` (``2 << 15``): the slots of the key space."""

INT_MAX = 0x7FFFFFFF
"""Java's ``Integer.MAX_VALUE``; every Pulsar hash is masked with it."""

_UINT32 = 0xFFFFFFFF
_UTF16_NATIVE = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"


def _utf8(data: bytes | str) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8", errors="replace")
    return bytes(data)


def sticky_key(
    ordering_key: bytes | None,
    partition_key: str | None,
    partition_key_b64_encoded: bool = False,
) -> bytes:
    """The bytes Key_Shared hashes for a message (``Commands.peekStickyKey``, Pulsar ≤ 3.3).

    The ordering key wins; else the partition key (Base64-decoded when the producer set it
    with ``key_bytes``, i.e. ``partition_key_b64_encoded``); else :data:`NONE_KEY`, so every
    key-less message lands on one consumer. A present-but-empty key counts as present, as a
    protobuf field does. A flagged partition key that is not valid Base64 raises
    ``ValueError``.
    """
    if ordering_key is not None:
        return bytes(ordering_key)
    if partition_key is not None:
        if partition_key_b64_encoded:
            return base64.b64decode(partition_key, validate=True)
        return _utf8(partition_key)
    return NONE_KEY


def murmur3_32_hash(data: bytes | str) -> int:
    """``Murmur3_32Hash.makeHash``: MurmurHash3_x86_32 (seed 0) ``& 0x7fffffff``.

    A ``str`` is hashed as its UTF-8 bytes. The result is in ``[0, 2**31 - 1]``.
    """
    return mmh3.hash(_utf8(data), 0, signed=False) & INT_MAX


def sticky_key_hash(key: bytes) -> int:
    """``StickyKeyConsumerSelector.makeStickyKeyHash`` of Pulsar 3.x: the 31-bit murmur hash."""
    return mmh3.hash(key, 0, signed=False) & INT_MAX


def slot(hash: int) -> int:
    """The hash-range slot of a 31-bit sticky-key hash: ``hash % 65536``."""
    return hash % RANGE_SIZE


def java_string_hash_code(s: str) -> int:
    """Java's ``String.hashCode()``: ``31*h + c`` over UTF-16 code units, as a signed int."""
    h = 0
    units = s.encode(_UTF16_NATIVE, errors="surrogatepass")
    for unit in memoryview(units).cast("H"):
        h = (31 * h + unit) & _UINT32
    return h - (1 << 32) if h & 0x80000000 else h


def java_string_hash(s: str) -> int:
    """The Java client's ``JavaStringHash``: ``s.hashCode() & Integer.MAX_VALUE``."""
    return java_string_hash_code(s) & INT_MAX


class HashingScheme(enum.Enum):
    """The Java client's ``HashingScheme`` for routing keyed messages to partitions."""

    JavaStringHash = "JavaStringHash"
    Murmur3_32Hash = "Murmur3_32Hash"

    def hash(self, key: str) -> int:
        """Hash ``key`` (the partition key string) with this scheme; non-negative."""
        if self is HashingScheme.JavaStringHash:
            return java_string_hash(key)
        return murmur3_32_hash(key)


def partition_for_key(
    key: str,
    num_partitions: int,
    scheme: HashingScheme = HashingScheme.JavaStringHash,
) -> int:
    """``MessageRouterBase``: ``signSafeMod(scheme.hash(key), num_partitions)``.

    ``key`` is the partition key string (for ``key_bytes``, its Base64 form); the ordering
    key is never used for routing.
    """
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be >= 1, got {num_partitions}")
    return scheme.hash(key) % num_partitions
