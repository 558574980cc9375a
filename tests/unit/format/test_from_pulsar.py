"""from_pulsar's short cut (metadata of exactly producer name, sequence id, publish time and
uncompressed size) must read what the full field-by-field path reads, for any metadata."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsarlab.broker.entry import check_ranges
from pulsarlab.broker.format.metadata import from_pulsar, read_pulsar_metadata
from pulsarlab.broker.pulsar_protocol.PulsarApi_pb2 import KeyValue
from pulsarlab.broker.pulsar_protocol.PulsarApi_pb2 import MessageMetadata as PulsarMetadata

U64 = st.integers(0, (1 << 64) - 1)
I32 = st.integers(0, (1 << 31) - 1)
OPTIONAL = {  # fields that may be set beside the usual four (values small and large)
    "compression": st.sampled_from([0, 1, 2, 3, 4]),
    "num_messages_in_batch": st.integers(1, 1000),
    "event_time": U64,
    "partition_key": st.text(max_size=5),
    "ordering_key": st.binary(max_size=5),
    "deliver_at_time": st.integers(0, 1 << 62),
    "marker_type": st.integers(0, 3),
    "null_value": st.booleans(),
    "uuid": st.text(max_size=5),
    "highest_sequence_id": U64,
    "schema_version": st.binary(max_size=3),
    "chunk_id": I32,
}


@st.composite
def metadata(draw: st.DrawFn) -> bytes:
    pm = PulsarMetadata()
    if draw(st.integers(0, 4)):
        pm.producer_name = draw(st.text(max_size=140))  # past 127 bytes: a longer length
    for name in ("sequence_id", "publish_time", "uncompressed_size"):
        if draw(st.integers(0, 4)):  # mostly there; sometimes left out (or zero)
            setattr(pm, name, draw(U64 if name != "uncompressed_size"
                                   else st.integers(0, (1 << 32) - 1)))
    for name in draw(st.sets(st.sampled_from(sorted(OPTIONAL)), max_size=3)):
        setattr(pm, name, draw(OPTIONAL[name]))
    if draw(st.integers(0, 5)) == 0:
        pm.properties.append(KeyValue(key="k", value="v"))
    return pm.SerializePartialToString()


def _full_path(raw: bytes) -> bytes:
    """The same metadata, encoded one byte longer than canonical (a sequence id field
    repeated: the last one counts), so that only the field-by-field path can read it."""
    pm = PulsarMetadata()
    pm.ParseFromString(raw)
    # Concatenated messages merge: the field appended last wins (the same value here).
    return raw + PulsarMetadata(sequence_id=pm.sequence_id).SerializePartialToString()


# Deterministic examples, no time limits: under a loaded CI input generation is slow.
@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(metadata())
def test_the_short_cut_reads_what_the_full_path_reads(raw: bytes) -> None:
    fast, full = from_pulsar(raw), from_pulsar(_full_path(raw))
    assert dataclasses.replace(fast, pulsar_metadata=None) == dataclasses.replace(
        full, pulsar_metadata=None)
    assert fast.pulsar_metadata == raw
    md, in_range = read_pulsar_metadata(raw)
    if in_range:  # the core skips its range check for such metadata: nothing to find
        check_ranges(md)


def test_the_usual_metadata_is_in_range_unless_its_publish_time_is_not() -> None:
    usual = PulsarMetadata(producer_name="p", sequence_id=3, publish_time=7)
    assert read_pulsar_metadata(usual.SerializeToString())[1] is True
    usual.publish_time = 1 << 63  # protobuf's uint64, past the stored int64
    md, in_range = read_pulsar_metadata(usual.SerializeToString())
    assert in_range is False and md.publish_time == 1 << 63
    other = PulsarMetadata(producer_name="p", sequence_id=3, publish_time=7, event_time=9)
    assert read_pulsar_metadata(other.SerializeToString())[1] is False


def test_a_missing_name_is_not_mistaken_for_another_two_byte_field() -> None:
    # No producer name (2 bytes less) and compression LZ4 (2 bytes more): as long as the
    # usual four; the compression must still be read.
    pm = PulsarMetadata(sequence_id=5, publish_time=7, uncompressed_size=3, compression=1)
    md = from_pulsar(pm.SerializePartialToString())
    assert md.compression == "LZ4"


def test_a_missing_sequence_id_is_not_mistaken_for_another_field() -> None:
    # sequence id 0 left out (2 bytes less) and LZ4 (2 bytes more).
    pm = PulsarMetadata(producer_name="p", publish_time=7, compression=1)
    assert from_pulsar(pm.SerializePartialToString()).compression == "LZ4"
