"""Compaction opens batches (Pulsar's ``RawBatchConverter``): a batch keeps only its surviving
messages, at their batch indexes, the others marked compacted out; a batch with none left is
dropped. In both layouts: pulsarlab's (published over ZeroMQ) and Pulsar's (over pulsar://)."""

from __future__ import annotations

import logging
import struct
from typing import NamedTuple

import pytest

from pulsarlab.broker.entry import MessageMetadata, decode_entry
from pulsarlab.broker.format.batch import OutgoingMessage, encode_batch
from pulsarlab.broker.format.compression import compress, decompress
from pulsarlab.broker.format.metadata import from_pulsar, to_pulsar
from pulsarlab.broker.message_id import MessageId
from pulsarlab.broker.pulsar_protocol.PulsarApi_pb2 import CompressionType, SingleMessageMetadata
from pulsarlab.broker.pulsar_protocol.PulsarApi_pb2 import MessageMetadata as PulsarMetadata
from pulsarlab.broker.raw_batch import read_batch

T = "persistent://public/default/batched-table"


def send_batch(h, messages, *, layout="zmq", codec="NONE"):
    """Publish one batch of ``(key, value)`` (value ``None``: a null-value tombstone) in
    ``layout``, compressed with ``codec``; returns its position."""
    items = [OutgoingMessage(payload=value or b"", partition_key=key, sequence_id=i,
                             null_value=value is None)
             for i, (key, value) in enumerate(messages)]
    payload = encode_batch(items)
    meta = MessageMetadata(num_messages_in_batch=len(items), sequence_id=0,
                           partition_key=items[0].partition_key)
    if layout == "pulsar":  # as the official client lays it out: Pulsar's metadata kept
        raw, payload = to_pulsar(meta, payload)
        if codec != "NONE":
            pm = PulsarMetadata()
            pm.ParseFromString(raw)
            pm.compression = CompressionType.Value(codec)
            pm.uncompressed_size = len(payload)
            raw, payload = pm.SerializeToString(), compress(codec, payload)
        meta = from_pulsar(raw)
    elif codec != "NONE":
        meta.compression, meta.uncompressed_size = codec, len(payload)
        payload = compress(codec, payload)
    producer = h.producer(T, f"p-{layout}")
    position = h.service.send(producer, meta, payload)
    h.commit()
    return position


def send_one(h, key, value):
    return h.publish(T, 1, key=key, payload=value, producer_name="single")[0]


class Log(NamedTuple):
    a: tuple[int, int]
    d: tuple[int, int]
    b: tuple[int, int]
    c: tuple[int, int]
    tomb: tuple[int, int]
    i: tuple[int, int]


def publish_log(h, layout, codec="NONE") -> Log:
    """A: [k1=a, k2=b, k3=c]; k1=d; B: [k2=<null>, k4=e, (no key)=f]; C: [k5=g, k6=h];
    k5=<empty>; k6=i. Survivors: A#2 (k3), k1=d, B#1 (k4), k6=i; C has none left."""
    a = send_batch(h, [("k1", b"a"), ("k2", b"b"), ("k3", b"c")], layout=layout, codec=codec)
    d = send_one(h, "k1", b"d")
    b = send_batch(h, [("k2", None), ("k4", b"e"), (None, b"f")], layout=layout, codec=codec)
    c = send_batch(h, [("k5", b"g"), ("k6", b"h")], layout=layout, codec=codec)
    tomb = send_one(h, "k5", b"")
    i = send_one(h, "k6", b"i")
    return Log(a, d, b, c, tomb, i)


def pulsar_view(data):
    """[(compacted_out, key, payload)] of a compacted entry as a pulsar:// consumer gets it
    (the outer metadata's uncompressed_size checked against the batch's length)."""
    meta, payload = decode_entry(data)
    raw, payload = to_pulsar(meta, payload)
    outer = PulsarMetadata()
    outer.ParseFromString(raw)
    if outer.compression:  # a ZeroMQ batch goes out uncompressed
        payload = decompress(CompressionType.Name(outer.compression), payload,
                             outer.uncompressed_size)
    out, offset = [], 0
    for _ in range(outer.num_messages_in_batch):
        (size,) = struct.unpack_from(">I", payload, offset)
        single = SingleMessageMetadata()
        single.ParseFromString(payload[offset + 4:offset + 4 + size])
        offset += 4 + size
        body = payload[offset:offset + single.payload_size]
        offset += single.payload_size
        out.append((single.compacted_out, single.partition_key or None, body))
    assert offset == len(payload)
    assert outer.uncompressed_size in (0, len(payload))  # set whenever it was before
    return out


@pytest.mark.parametrize("codec", ["NONE", "LZ4"])
@pytest.mark.parametrize("layout", ["zmq", "pulsar"])
def test_a_batch_keeps_only_its_survivors_at_their_indexes(harness, layout, codec):
    h = harness
    log = publish_log(h, layout, codec)
    a, b = log.a, log.b
    assert h.service.compact_topic(T)["status"] == "SUCCESS"
    compacted = h.service.topics[T].compacted
    entries = dict(compacted.entries)
    assert list(entries) == [a, log.d, b, log.i]  # C has no survivor: left out
    assert compacted.compacted_out == {a: [0, 1], b: [0, 2]}
    assert compacted.removed == 2  # C and the tombstone; the batches stay, rebuilt
    # A consumer sees the survivors with their own batch index, the rest compacted out.
    assert pulsar_view(entries[a]) == [(True, None, b""), (True, None, b""),
                                       (False, "k3", b"c")]
    assert pulsar_view(entries[b]) == [(True, None, b""), (False, "k4", b"e"),
                                       (True, None, b"")]
    # The entry keeps its batch size (the dispatcher's permits count all its slots).
    assert decode_entry(entries[a])[0].num_messages_in_batch == 3


@pytest.mark.parametrize("layout", ["zmq", "pulsar"])
def test_read_compacted_consumer_gets_the_rebuilt_batches_then_the_tail(harness, layout):
    h = harness
    a, d, b, c, tomb, i = publish_log(h, layout)
    h.service.compact_topic(T)
    tail = send_batch(h, [("k1", b"z")], layout=layout)
    reader = h.subscribe(T, "s", "c", permits=100, initial_position_earliest=True,
                         read_compacted=True)
    assert h.take(reader) == [a, d, b, i, tail]
    full = h.subscribe(T, "full", "f", permits=100, initial_position_earliest=True)
    assert h.take(full) == [a, d, b, c, tomb, i, tail]


def test_recompaction_takes_more_out_of_a_rebuilt_batch_and_drops_it_when_empty(harness):
    h = harness
    log = publish_log(h, "pulsar")
    a, b = log.a, log.b
    h.service.compact_topic(T)
    send_one(h, "k4", b"newer")  # B's last survivor is superseded
    h.service.compact_topic(T)
    compacted = h.service.topics[T].compacted
    assert b not in dict(compacted.entries)
    assert compacted.compacted_out == {a: [0, 1]}
    send_one(h, "k3", b"")  # A's last survivor is tombstoned: A goes too
    h.service.compact_topic(T)
    assert a not in dict(compacted.entries)
    assert read_batch(h.service.topics[T].ledger.read_entry(a)) is not None  # the log keeps it


def test_internal_stats_name_what_compaction_left_out(harness):
    h = harness
    log = publish_log(h, "zmq")
    a, b, tomb = log.a, log.b, log.tomb
    h.service.compact_topic(T)
    stats = h.service.internal_stats(T)["compactedLedger"]
    assert stats["compactedOutEntries"] == f"[({b[0]}:{b[1]}..{tomb[0]}:{tomb[1]}]]"
    assert stats["compactedOutBatchIndexes"] == {
        f"{a[0]}:{a[1]}": "0b11", f"{b[0]}:{b[1]}": "0b101"}


def test_last_message_id_for_a_compacted_reader_is_the_last_survivor(harness):
    h = harness
    send_one(h, "k1", b"a")
    last = send_batch(h, [("k2", b"b"), ("k3", b"c"), ("k2", b"d"), ("k3", b"")])
    h.service.compact_topic(T)
    reader = h.subscribe(T, "r", "r", durable=False, is_reader=True,
                         start_message_id=MessageId.earliest, read_compacted=True)
    # index 3 (a tombstone) and 1 (tombstoned) are out, 0 superseded: 2 is the last left
    assert h.service.topics[T].last_message_id_for(reader) == (*last, 2)


def test_a_batch_that_cannot_be_opened_is_kept_whole(harness, caplog):
    caplog.set_level(logging.INFO, logger="pulsarlab.broker.compaction")
    h = harness
    producer = h.producer(T, "garbage")
    meta = MessageMetadata(num_messages_in_batch=2, partition_key="k1")
    garbage = h.service.send(producer, meta, b"\xc1 not msgpack")
    h.commit()
    send_one(h, "k1", b"later")
    h.service.compact_topic(T)
    compacted = h.service.topics[T].compacted
    assert compacted.entries[0][0] == garbage
    assert compacted.status == "SUCCESS"
    (line,) = [r.getMessage() for r in caplog.records if "cannot open" in r.getMessage()]
    assert line.startswith(f"compaction keeps entry {garbage[0]}:{garbage[1]} whole")


def test_the_compacted_out_marks_survive_a_restart(durable_storage_factory, make_harness):
    h = make_harness(storage=durable_storage_factory())
    log = publish_log(h, "zmq")
    a, b, tomb = log.a, log.b, log.tomb
    h.service.compact_topic(T)
    h.service.close()
    h2 = make_harness(storage=durable_storage_factory())
    compacted = h2.service.get_topic(T).compacted
    assert compacted.compacted_out == {a: [0, 1], b: [0, 2]}
    assert str(compacted.removed_entries) == f"[({b[0]}:{b[1]}..{tomb[0]}:{tomb[1]}]]"
    h2.service.close()
