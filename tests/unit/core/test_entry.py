"""Entry layout: hot-path header, metadata round trip, sticky key hash at publish."""

import contextlib
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.broker.entry import (
    _INT_LIMITS,
    PREFIX_SIZE,
    MessageMetadata,
    check_ranges,
    decode_entry,
    encode_entry,
    read_header,
)


def test_round_trip_and_header():
    meta = MessageMetadata(
        producer_name="p",
        sequence_id=7,
        publish_time=123,
        properties={"a": "b"},
        partition_key="Order-3459134",
        num_messages_in_batch=5,
        deliver_at_time=999,
    )
    data = encode_entry(meta, b"payload")
    header = read_header(data)
    assert header.num_messages == 5 and header.batched
    assert header.sticky_key_hash == 964695987
    assert header.deliver_at_time == 999 and header.publish_time == 123
    decoded, payload = decode_entry(data)
    assert payload == b"payload"
    # Stored as Pulsar's MessageMetadata, which decodes back to the same fields.
    assert decoded.pulsar_metadata is not None
    assert replace(decoded, pulsar_metadata=None) == meta


def test_ordering_key_wins_and_none_key_fallback():
    meta = MessageMetadata(partition_key="a", ordering_key=b"b")
    with_ordering = read_header(encode_entry(meta, b""))
    only_b = read_header(encode_entry(MessageMetadata(partition_key="b"), b""))
    assert with_ordering.sticky_key_hash == only_b.sticky_key_hash
    keyless = read_header(encode_entry(MessageMetadata(), b""))
    none_key = read_header(encode_entry(MessageMetadata(partition_key="NONE_KEY"), b""))
    assert keyless.sticky_key_hash == none_key.sticky_key_hash
    assert not keyless.batched and keyless.num_messages == 1


def test_short_entry_is_a_clear_error():
    with pytest.raises(ValueError, match="shorter than"):
        read_header(b"abc")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"nope": 1}, "unknown metadata field"),
        ({"deliver_at_time": 2**63}, "out of range"),
        ({"publish_time": "soon"}, "must be an int"),
        ({"num_messages_in_batch": 0}, "out of range"),
        ({"partition_key": 7}, "must be str"),
        ({"ordering_key": "text"}, "must be bytes"),
        ({"properties": {"a": 1}}, "strings to strings"),
        ({"null_value": 1}, "must be bool"),
    ],
)
def test_metadata_from_the_wire_is_checked(data, message):
    with pytest.raises(ValueError, match=message):
        MessageMetadata.from_dict(data)


def test_partition_limit(harness):
    from pulsarlab.broker.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="max_num_partitions_per_partitioned_topic"):
        harness.service.create_partitioned_topic("huge", 2**63 - 1)


def test_to_dict_leaves_out_exactly_the_defaults_of_every_field():
    # to_dict is spelled out field by field for speed; this catches a field it forgets.
    from dataclasses import fields

    defaults = MessageMetadata()
    assert defaults.to_dict() == {}
    samples = {int: 5, str: "s", bool: True, bytes: b"k", dict: {"a": "b"}}
    for f in fields(MessageMetadata):
        kind = type(getattr(defaults, f.name))
        value = samples.get(kind, 7 if f.default is None else None)
        if f.name in ("ordering_key", "schema_version"):
            value = b"k"
        elif f.name in ("partition_key", "uuid"):
            value = "s"
        meta = MessageMetadata(**{f.name: value})
        assert meta.to_dict() == {f.name: value}, f.name


# -- issue 23: what is stored always decodes ------------------------------------------------

U64_MAX = (1 << 64) - 1


def test_pulsars_uint64_fields_round_trip_at_their_maximum():
    meta = MessageMetadata(producer_name="p", sequence_id=U64_MAX, event_time=U64_MAX,
                           highest_sequence_id=U64_MAX, publish_time=(1 << 63) - 1)
    check_ranges(meta)
    decoded, _ = decode_entry(encode_entry(meta, b"x"))
    assert replace(decoded, pulsar_metadata=None) == meta


@pytest.mark.parametrize("field, value", [
    ("chunk_id", -1), ("total_chunk_msg_size", -1), ("num_chunks_from_msg", 1 << 31),
    ("publish_time", 1 << 63), ("deliver_at_time", -1), ("num_messages_in_batch", 0),
    ("sequence_id", 1 << 64), ("uncompressed_size", 1 << 32),
])
def test_check_ranges_names_the_field_out_of_range(field, value):
    with pytest.raises(ValueError, match=f"'{field}' is out of range"):
        check_ranges(MessageMetadata(**{field: value}))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_a_damaged_entry_is_a_value_error(tail):
    good = encode_entry(MessageMetadata(producer_name="p", publish_time=1), b"x")
    damaged = good[:PREFIX_SIZE - 4] + len(tail).to_bytes(4, "big") + tail
    with contextlib.suppress(ValueError):  # and never another exception type
        decode_entry(damaged)


def test_the_fast_range_test_agrees_with_every_fields_limits():
    """check_ranges' one chained test and its per-field loop must never disagree."""
    for name, (low, high) in _INT_LIMITS.items():
        for value, ok in ((low, True), (high, True), (low - 1, False), (high + 1, False)):
            if ok:
                check_ranges(MessageMetadata(**{name: value}))
            else:
                with pytest.raises(ValueError, match=name):
                    check_ranges(MessageMetadata(**{name: value}))
