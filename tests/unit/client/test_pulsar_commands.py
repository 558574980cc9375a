"""The pure half of the client's Pulsar connection: URLs, ack sets, ids, commands."""

from __future__ import annotations

import pytest

from pulsarlab.broker.client.exceptions import InvalidUrl
from pulsarlab.broker.client.pulsar_commands import (
    bits_to_words,
    is_tls_url,
    parse_pulsar_url,
    signed,
    subscribe_command,
    words_to_bits,
)


def test_pulsar_urls():
    assert parse_pulsar_url("pulsar://broker-1:6650/") == ("broker-1", 6650)
    assert parse_pulsar_url("pulsar://a:6650,b:6650") == ("a", 6650)
    assert parse_pulsar_url("pulsar+ssl://broker-1:6651") == ("broker-1", 6651)
    assert is_tls_url(" pulsar+ssl://a:6651") and not is_tls_url("pulsar://a:6650")
    for bad in ("zmq://a:1", "pulsar://a", "pulsar://:6650", "pulsar://a:x", "pulsar+ssl://a",
                "https://a:443"):
        with pytest.raises(InvalidUrl):
            parse_pulsar_url(bad)


@pytest.mark.parametrize(("bits", "size"), [(0, 1), (0b1011, 4), ((1 << 63) | 1, 64),
                                            ((1 << 100) | (1 << 63), 130)])
def test_ack_sets_are_javas_signed_bitset_words(bits, size):
    words = bits_to_words(bits, size)
    assert len(words) == max(1, (size + 63) // 64)
    assert all(-(1 << 63) <= w < (1 << 63) for w in words)
    assert words_to_bits(words) == bits


def test_uint64_ids_read_as_signed_longs():
    assert signed((1 << 64) - 1) == -1 and signed(5) == 5


def test_a_readers_key_hash_ranges_go_as_sticky_key_shared_meta():
    command = subscribe_command({
        "topic": "t", "subscription": "r", "sub_type": "Exclusive", "consumer_id": 1,
        "consumer_name": "c", "durable": False, "key_hash_ranges": [[0, 32767]],
        "start_message_id": [3, 4, -1, -1], "initial_position": "earliest",
    })
    s = command.subscribe
    assert s.subType == s.Exclusive and not s.durable and s.initialPosition == s.Earliest
    assert s.keySharedMeta.keySharedMode == 1  # STICKY
    assert [(r.start, r.end) for r in s.keySharedMeta.hashRanges] == [(0, 32767)]
    assert (s.start_message_id.ledgerId, s.start_message_id.entryId) == (3, 4)
