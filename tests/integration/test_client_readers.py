"""R-READER end to end: start ids, inclusivity, has_message_available, seek, key ranges."""

from __future__ import annotations

import pytest

from pulsarlab.broker.client import MessageId, Timeout
from pulsarlab.broker.selectors.hashing import murmur3_32_hash

from .client_support import QUIET_MS, WAIT_MS, read_all, unique


def fill(client, topic, n, batching=False):
    producer = client.create_producer(topic, batching_enabled=batching,
                                      batching_max_publish_delay_ms=100)
    if batching:
        ids = [None] * n

        def make(i):
            def callback(res, mid):
                ids[i] = mid
            return callback

        for i in range(n):
            producer.send_async(f"m{i}".encode(), make(i))
        producer.flush()
    else:
        ids = [producer.send(f"m{i}".encode()) for i in range(n)]
    producer.close()
    return ids


def datas(messages):
    return [m.data() for m in messages]


def test_earliest_reads_everything(client):
    topic = unique("r-earliest")
    fill(client, topic, 5)
    reader = client.create_reader(topic, MessageId.earliest)
    assert reader.topic() == f"persistent://public/default/{topic}"
    assert datas(read_all(reader)) == [f"m{i}".encode() for i in range(5)]


def test_latest_reads_only_new_messages(client):
    topic = unique("r-latest")
    fill(client, topic, 3)
    reader = client.create_reader(topic, MessageId.latest)
    assert not reader.has_message_available()
    with pytest.raises(Timeout):
        reader.read_next(QUIET_MS)
    producer = client.create_producer(topic)
    producer.send(b"new")
    assert reader.has_message_available()
    assert reader.read_next(WAIT_MS).data() == b"new"
    assert not reader.has_message_available()


@pytest.mark.parametrize("inclusive", [False, True])
def test_start_at_an_id(client, inclusive):
    topic = unique("r-id")
    ids = fill(client, topic, 6)
    reader = client.create_reader(topic, ids[2], start_message_id_inclusive=inclusive)
    first = 2 if inclusive else 3
    assert datas(read_all(reader)) == [f"m{i}".encode() for i in range(first, 6)]


@pytest.mark.parametrize("inclusive", [False, True])
def test_start_inside_a_batch(client, inclusive):
    topic = unique("r-batch")
    ids = fill(client, topic, 10, batching=True)
    assert ids[4].batch_index() >= 0
    reader = client.create_reader(topic, ids[4], start_message_id_inclusive=inclusive)
    first = 4 if inclusive else 5
    assert datas(read_all(reader)) == [f"m{i}".encode() for i in range(first, 10)]


def test_has_message_available_tracks_progress(client):
    topic = unique("r-available")
    empty = client.create_reader(topic, MessageId.earliest)
    assert not empty.has_message_available()
    fill(client, topic, 3)
    reader = client.create_reader(topic, MessageId.earliest)
    seen = []
    while reader.has_message_available():
        seen.append(reader.read_next(WAIT_MS).data())
    assert seen == [b"m0", b"m1", b"m2"]
    ids = fill(client, topic, 1)
    at_last = client.create_reader(topic, ids[0])
    assert not at_last.has_message_available()
    at_last_incl = client.create_reader(topic, ids[0], start_message_id_inclusive=True)
    assert at_last_incl.has_message_available()


def test_seek_by_id_and_time(client):
    topic = unique("r-seek")
    ids = fill(client, topic, 5)
    reader = client.create_reader(topic, MessageId.earliest)
    msgs = read_all(reader)
    reader.seek(ids[1])  # what followed the id comes next
    assert reader.read_next(WAIT_MS).data() == b"m2"
    reader.seek(msgs[3].publish_timestamp())
    assert reader.read_next(WAIT_MS).publish_timestamp() <= msgs[3].publish_timestamp()
    reader.close()
    assert not reader.is_connected()


def test_reader_listener(client):
    import threading

    topic = unique("r-listener")
    got = []
    done = threading.Event()

    def listener(reader, msg):
        got.append(msg.data())
        if len(got) == 4:
            done.set()

    client.create_reader(topic, MessageId.earliest, reader_listener=listener)
    fill(client, topic, 4)
    assert done.wait(WAIT_MS / 1000)
    assert got == [b"m0", b"m1", b"m2", b"m3"]


def test_reader_key_hash_ranges(client):
    topic = unique("r-ranges")
    producer = client.create_producer(topic)
    keys = [f"key-{i}" for i in range(40)]
    for k in keys:
        producer.send(k.encode(), partition_key=k)
    reader = client.create_reader(topic, MessageId.earliest, key_hash_ranges=[(0, 32767)])
    first = reader.read_next(WAIT_MS)  # a message must arrive; then "nothing more" is quick
    got = [m.partition_key() for m in [first, *read_all(reader)]]
    expected = [k for k in keys if murmur3_32_hash(k) % 65536 <= 32767]
    assert got == expected and 0 < len(got) < 40


# -- deliver_entries (bulk readers) ---------------------------------------------------------


def test_entry_reader_hands_out_whole_entries_from_a_batched_start(client):
    topic = unique("entries")
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=4,
                                      batching_max_publish_delay_ms=60_000)
    ids = []
    for i in range(10):
        producer.send_async(f"m{i}".encode(), lambda res, mid: ids.append(mid),
                            properties={"i": str(i)})
    producer.flush()
    client.create_producer(topic).send(b"single")  # an entry of one message, not a batch
    ids.sort()
    start = ids[5]  # inside the second batch: read from index 2 of it (exclusive start)
    reader = client.create_reader(topic, start, deliver_entries=True)
    with pytest.raises(Exception, match="delivers entries: use read_entry"):
        reader.read_next(QUIET_MS)
    first = reader.read_entry(WAIT_MS)
    assert (first.ledger_id, first.entry_id) == start.position
    assert first.count == 2 and list(first.batch_indexes()) == [2, 3]
    assert [r[6] for r in first.rows()] == [b"m6", b"m7"]
    assert [r[0] for r in first.rows()] == [{"i": "6"}, {"i": "7"}]
    assert first.message_id() == ids[7]
    second = reader.read_entry(WAIT_MS)
    assert second.count == 2 and second.batch_size == 2
    assert [r[4] for r in second.rows()] == [8, 9]  # each message's sequence id
    last = reader.read_entry(WAIT_MS)
    assert last.items is None and last.batch_size == 0 and list(last.batch_indexes()) == [-1]
    assert [r[6] for r in last.rows()] == [b"single"]
    assert not reader.has_message_available()
    with pytest.raises(Timeout):
        reader.read_entry(QUIET_MS)
    reader.close()


def test_plain_reader_refuses_read_entry(client):
    topic = unique("no-entries")
    fill(client, topic, 1)
    reader = client.create_reader(topic, MessageId.earliest)
    with pytest.raises(Exception, match="needs a reader made with deliver_entries=True"):
        reader.read_entry(QUIET_MS)
    assert reader.read_next(WAIT_MS).data() == b"m0"
    reader.close()
