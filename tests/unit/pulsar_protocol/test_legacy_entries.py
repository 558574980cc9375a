"""Entries written in the first layout (version 1: msgpack metadata) stay readable: a broker
that wrote them is reopened with today's code and serves them through the core and over
pulsar://, beside entries written since in the stored layout (issue 24). Nothing is
rewritten on disk, so there is no migration a crash could cut in half."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pulsarlab.broker import MessageMetadata, SubType
from pulsarlab.broker.actions import Deliver
from pulsarlab.broker.entry import (
    FLAG_PULSAR_BATCH,
    LEGACY_FORMAT_VERSION,
    decode_entry,
    encode_legacy_entry,
    pulsar_parts,
    read_header,
)
from pulsarlab.broker.format.batch import (
    OutgoingMessage,
    encode_batch,
    encode_pulsar_batch,
    pulsar_batch_items,
)
from pulsarlab.broker.format.compression import compress, decompress
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.storage import DurableStorage

from .support import Harness, T, command, send_frame

TOPIC = "persistent://public/default/old"


def test_a_first_layout_entry_reads_as_it_did():
    meta = MessageMetadata(producer_name="p", sequence_id=-3, publish_time=5,
                           properties={"a": "b"}, partition_key="k",
                           num_messages_in_batch=2, compacted_out=b"\x01")
    data = encode_legacy_entry(meta, b"body")
    assert data[0] == LEGACY_FORMAT_VERSION
    assert pulsar_parts(data) is None  # converted by the reader, not sent as stored
    header = read_header(data)
    assert (header.num_messages, header.batched, header.publish_time) == (2, True, 5)
    assert decode_entry(data) == (meta, b"body")


def _old_broker_writes(tmp_path, monkeypatch) -> dict[str, bytes]:
    """Today's layout on disk, as the broker before issue 24 wrote it: a pulsar://
    single message and batch (the client's metadata inside msgpack), a ZeroMQ batch in
    pulsarlab's first layout (ZLIB) and a REST-style message. Returns what was sent."""
    monkeypatch.setattr("pulsarlab.broker.topic.encode_entry", encode_legacy_entry)
    h = Harness(storage=DurableStorage(tmp_path / "data"))
    s = h.session()
    h.connect(s)
    h.run(s, command(T.PRODUCER, "producer", topic=TOPIC, producer_id=1, request_id=1,
                     producer_name="p"))
    single = send_frame(1, 0, b"one", partition_key="k1",
                        properties=[api.KeyValue(key="a", value="b")])
    batch_body = encode_pulsar_batch([OutgoingMessage(b"b0", sequence_id=1),
                                      OutgoingMessage(b"b1", partition_key="k2")])
    batch = send_frame(1, 1, batch_body, num_messages_in_batch=2)
    h.run(s, single)
    h.run(s, batch)
    zmq_body = encode_batch([OutgoingMessage(b"z0", {"z": "1"}, partition_key="k3"),
                             OutgoingMessage(b"z1", ordering_key=b"o")])
    producer = h.service.create_producer(TOPIC, "zmq").producer_id
    h.service.send(producer, MessageMetadata(
        producer_name="zmq", sequence_id=7, num_messages_in_batch=2, compression="ZLIB",
        uncompressed_size=len(zmq_body)), compress("ZLIB", zmq_body))
    h.service.send(producer, MessageMetadata(producer_name="zmq", sequence_id=8,
                                             properties={"r": "s"}), b"rest")
    h.service.commit()
    h.service.take_actions()
    stored = h.service.get_topic(TOPIC).ledger.read_entries((0, 0), 10)
    assert [data[0] for _, data in stored] == [LEGACY_FORMAT_VERSION] * 4
    assert [bool(data[1] & FLAG_PULSAR_BATCH) for _, data in stored] == [
        False, True, False, False]
    monkeypatch.undo()
    # Abandoned without close(), as a crash leaves it.
    return {"single": single, "batch": batch}


def _delivered(h: Harness) -> list[tuple[tuple[int, int], bytes]]:
    out = []
    for action in h.service.take_actions():
        if isinstance(action, Deliver):
            out += [(e.position, e.data) for e in action.entries]
    return out


def test_reopened_first_layout_entries_reach_a_consumer_of_the_core(tmp_path, monkeypatch):
    _old_broker_writes(tmp_path, monkeypatch)
    h = Harness(storage=DurableStorage(tmp_path / "data"))
    consumer = h.service.subscribe(TOPIC, "core", "c", SubType.Shared,
                                   initial_position_earliest=True)
    h.service.flow(consumer.consumer_id, 100)
    producer = h.service.create_producer(TOPIC, "new").producer_id
    h.service.send(producer, MessageMetadata(producer_name="new", sequence_id=9), b"new")
    h.service.commit()
    entries = _delivered(h)
    assert len(entries) == 5
    decoded = [decode_entry(data) for _, data in entries]
    assert [md.num_messages for md, _ in decoded] == [1, 2, 2, 1, 1]
    assert decoded[0][0].partition_key == "k1" and decoded[0][1] == b"one"
    assert decoded[2][0].compression == "ZLIB"
    assert decoded[3][0].properties == {"r": "s"} and decoded[3][1] == b"rest"
    assert [data[0] for _, data in entries] == [1, 1, 1, 1, 2]  # nothing rewritten
    # Acknowledged, they are gone like any other.
    h.service.ack(consumer.consumer_id, [position for position, _ in entries])
    assert h.service.subscription(TOPIC, "core").cursor.number_of_entries_in_backlog() == 0


def test_reopened_first_layout_entries_reach_a_pulsar_consumer(tmp_path, monkeypatch):
    from pulsarlab.broker.pulsar_protocol import FrameDecoder

    sent = _old_broker_writes(tmp_path, monkeypatch)
    h = Harness(storage=DurableStorage(tmp_path / "data"))
    s = h.session()
    h.connect(s)
    h.run(s, command(T.SUBSCRIBE, "subscribe", topic=TOPIC, subscription="pulsar",
                     subType=api.CommandSubscribe.Shared, consumer_id=5, request_id=2,
                     initialPosition=api.CommandSubscribe.Earliest))
    s.receive_data(command(T.FLOW, "flow", consumer_id=5, messagePermits=100))
    h.service.commit()
    for action in h.service.take_actions():
        action.conn.handle_action(action)
    messages = [f for f in h.frames(s) if f.command.type == T.MESSAGE]
    assert [(m.command.message.message_id.ledgerId, m.command.message.message_id.entryId)
            for m in messages] == [(0, 0), (0, 1), (0, 2), (0, 3)]
    # pulsar:// publishes go back exactly as the client sent them.
    for name, message in zip(("single", "batch"), messages, strict=False):
        [frame] = FrameDecoder(1 << 20).feed(sent[name])
        assert (message.metadata, message.payload) == (frame.metadata, frame.payload)
    # The ZeroMQ batch is re-laid in Pulsar's layout, the REST message gets its metadata.
    pm = api.MessageMetadata.FromString(messages[2].metadata)
    assert pm.num_messages_in_batch == 2 and pm.producer_name == "zmq"
    items = pulsar_batch_items(messages[2].payload, 2)
    assert [(i[0], i[1], i[2], i[6]) for i in items] == [
        ({"z": "1"}, "k3", None, b"z0"), (None, None, b"o", b"z1")]
    rest = api.MessageMetadata.FromString(messages[3].metadata)
    assert [(kv.key, kv.value) for kv in rest.properties] == [("r", "s")]
    assert messages[3].payload == b"rest"


def test_compaction_of_first_layout_batches_writes_the_stored_layout(tmp_path, monkeypatch):
    """A batch rebuilt by compaction is written in the stored layout, its slots kept."""
    from pulsarlab.broker.raw_batch import read_batch, rebatch

    meta = MessageMetadata(producer_name="z", num_messages_in_batch=3, compression="ZLIB")
    body = encode_batch([OutgoingMessage(b"a", partition_key="k"),
                         OutgoingMessage(b"b", partition_key="k"),
                         OutgoingMessage(b"c", partition_key="j")])
    old = encode_legacy_entry(replace(meta, uncompressed_size=len(body)),
                              compress("ZLIB", body))
    assert [m.key for m in read_batch(old)] == ["k", "k", "j"]
    rebuilt = rebatch(old, [1, 2])
    raw, payload = pulsar_parts(rebuilt)
    pm = api.MessageMetadata.FromString(raw)
    gone: list[int] = []
    items = pulsar_batch_items(decompress("ZLIB", payload, pm.uncompressed_size), 3, gone)
    assert gone == [0] and [i[6] for i in items][1:] == [b"b", b"c"]
    assert [m.compacted_out for m in read_batch(rebuilt)] == [True, False, False]


@pytest.mark.parametrize("sequence_id", [0, 41])
def test_deduplication_recovers_from_first_layout_entries(tmp_path, monkeypatch, sequence_id):
    monkeypatch.setattr("pulsarlab.broker.topic.encode_entry", encode_legacy_entry)
    h = Harness(storage=DurableStorage(tmp_path / "data"), broker_deduplication_enabled=True)
    producer = h.service.create_producer(TOPIC, "dd").producer_id
    h.service.send(producer, MessageMetadata(producer_name="dd", sequence_id=sequence_id), b"x")
    h.service.commit()
    monkeypatch.undo()
    h2 = Harness(storage=DurableStorage(tmp_path / "data"), broker_deduplication_enabled=True)
    producer = h2.service.create_producer(TOPIC, "dd").producer_id
    h2.service.send(producer, MessageMetadata(producer_name="dd", sequence_id=sequence_id),
                    b"x")
    h2.service.commit()
    consumer = h2.service.subscribe(TOPIC, "s", "c", SubType.Shared,
                                    initial_position_earliest=True)
    h2.service.flow(consumer.consumer_id, 100)
    # The resend was a duplicate of the first-layout entry: one message in all.
    assert [p for p, _ in _delivered(h2)] == [(0, 0)]
