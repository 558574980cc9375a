"""Batch payload format and the DEFAULT / KEY_BASED batch containers."""

from __future__ import annotations

import gc

import msgpack
import pytest

from pulsarlab.broker.client.batch import (
    DefaultBatchBuilder,
    KeyBasedBatchBuilder,
    OutgoingMessage,
    make_batch_builder,
)
from pulsarlab.broker.format.batch import (
    batch_items,
    decode_batch,
    decode_pulsar_batch,
    encode_batch,
)


def msg(seq: int, payload: bytes = b"x", key: str | None = None,
        okey: bytes | None = None, **kw) -> OutgoingMessage:
    return OutgoingMessage(payload, partition_key=key, ordering_key=okey, sequence_id=seq, **kw)


def test_round_trip_keeps_every_field():
    messages = [
        msg(1, b"a", key="k1", properties={"p": "v"}, event_time=123),
        msg(2, b"", okey=b"\x00\xff", null_value=True),
        msg(3, b"c" * 1000),
    ]
    decoded = decode_batch(encode_batch(messages), 3)
    assert [(m.payload, m.partition_key, m.ordering_key, m.sequence_id) for m in decoded] == [
        (b"a", "k1", None, 1), (b"", None, b"\x00\xff", 2), (b"c" * 1000, None, None, 3)
    ]
    assert decoded[0].properties == {"p": "v"} and decoded[0].event_time == 123
    assert decoded[1].null_value and not decoded[0].null_value


@pytest.mark.parametrize("payload", [b"\xc1garbage", b"\x01", b"\x91\x01"])
def test_malformed_batch_is_a_value_error(payload):
    with pytest.raises(ValueError):
        decode_batch(payload)


def test_count_mismatch_is_a_value_error():
    with pytest.raises(ValueError, match="metadata says 3"):
        decode_batch(encode_batch([msg(1), msg(2)]), 3)


def test_default_batch_takes_the_first_messages_key():
    builder = DefaultBatchBuilder()
    for seq, key in [(5, "b"), (6, "a"), (7, None)]:
        builder.add(msg(seq, key=key))
    (batch,) = builder.flush()
    assert batch.metadata.partition_key == "b"
    assert batch.metadata.sequence_id == 5
    assert batch.metadata.highest_sequence_id == 7
    assert batch.metadata.num_messages_in_batch == 3
    assert [m.sequence_id for m in decode_pulsar_batch(batch.payload, 3)] == [5, 6, 7]
    assert builder.is_empty and builder.flush() == []


def test_default_batch_full_by_count():
    builder = DefaultBatchBuilder(max_messages=3)
    assert builder.add(msg(1)) is False
    assert builder.add(msg(2)) is False
    assert builder.add(msg(3)) is True


def test_default_batch_full_by_bytes_and_space_check():
    builder = DefaultBatchBuilder(max_messages=100, max_bytes=10)
    big = msg(1, b"x" * 20)
    assert builder.has_space_for(big)  # an empty container takes anything
    builder.add(msg(1, b"x" * 6))
    assert not builder.has_space_for(msg(2, b"x" * 5))
    assert builder.has_space_for(msg(2, b"x" * 4))
    assert builder.add(msg(2, b"x" * 4)) is True


def test_key_based_batches_group_by_ordering_key_then_partition_key():
    builder = KeyBasedBatchBuilder()
    builder.add(msg(1, key="a"))
    builder.add(msg(2, key="b"))
    builder.add(msg(3, key="a"))
    builder.add(msg(4, key="a", okey=b"o"))  # the ordering key wins
    builder.add(msg(5, key=None))
    batches = builder.flush()
    assert [b.sequence_id for b in batches] == [1, 2, 4, 5]
    by_first = {b.sequence_id: b for b in batches}
    assert [m.sequence_id for m in by_first[1].messages] == [1, 3]
    assert by_first[1].metadata.partition_key == "a"
    assert by_first[4].metadata.ordering_key == b"o"
    assert by_first[5].metadata.partition_key is None


def test_key_based_limits_count_across_keys():
    builder = make_batch_builder(True, max_messages=2, max_bytes=1000)
    assert builder.add(msg(1, key="a")) is False
    assert builder.add(msg(2, key="b")) is True


def test_invalid_limits():
    with pytest.raises(ValueError):
        DefaultBatchBuilder(max_messages=0)
    with pytest.raises(ValueError):
        KeyBasedBatchBuilder(max_bytes=0)


@pytest.mark.parametrize("key_based", [False, True])
def test_offer_is_has_space_for_add_and_flush_in_one_call(key_based):
    messages = [OutgoingMessage(payload=b"x" * size, partition_key=f"k{i % 2}", sequence_id=i)
                for i, size in enumerate([10, 30, 50, 5, 5, 5, 60, 1])]
    stepwise, offered = (make_batch_builder(key_based, 3, 64) for _ in range(2))
    expected, got = [], []
    for m in messages:
        if not stepwise.has_space_for(m):
            expected.append(stepwise.flush())
        if stepwise.add(m):
            expected.append(stepwise.flush())
        ready = offered.offer(m)
        if ready is not None:
            got.append(ready)
    expected.append(stepwise.flush())
    got.append(offered.flush())

    def batches(runs: list) -> list:
        return [[m.sequence_id for m in b.messages] for batches in runs for b in batches]

    assert batches(got) == batches(expected)


def test_items_without_properties_hold_no_container():
    items = batch_items(encode_batch([msg(1), msg(2, properties={"p": "v"})]), 2)
    assert items[0][0] is None and items[1][0] == {"p": "v"}
    gc.collect()
    assert not gc.is_tracked(items[0])  # nothing for the collector to look at again
    older = msgpack.packb([[{}, None, None, 0, 3, False, b"x"]], use_bin_type=True)
    assert batch_items(older, 1)[0][0] == {}  # an empty map (older producers) still reads
    assert decode_batch(older, 1)[0].properties == {}
