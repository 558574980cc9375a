"""Chunk splitting and the consumer's chunk reassembly (interleaving, limits, expiry)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pulsarlab.broker.client.chunking import (
    ChunkedMessageCollector,
    chunk_metadata,
    split_payload,
)


def test_split_payload():
    assert split_payload(b"abcdefg", 3) == [b"abc", b"def", b"g"]
    assert split_payload(b"abc", 3) == [b"abc"]
    assert split_payload(b"", 3) == [b""]
    with pytest.raises(ValueError):
        split_payload(b"x", 0)


def test_chunk_metadata_fields():
    assert chunk_metadata("p-1", 2, 5, 100) == {
        "uuid": "p-1", "chunk_id": 2, "num_chunks_from_msg": 5, "total_chunk_msg_size": 100
    }


META = SimpleNamespace(publish_time=0)


def feed(collector, uuid, chunk_id, parts, position, now=0, meta=META):
    return collector.add(uuid, chunk_id, len(parts), sum(map(len, parts)), parts[chunk_id],
                         position, meta, now)


def test_reassembles_in_order():
    c = ChunkedMessageCollector()
    parts = [b"ab", b"cd", b"e"]
    assert feed(c, "u", 0, parts, (1, 0)).message is None
    assert feed(c, "u", 1, parts, (1, 1)).message is None
    done = feed(c, "u", 2, parts, (1, 2)).message
    assert done.payload == b"abcde"
    assert done.chunk_ids == [(1, 0), (1, 1), (1, 2)]
    assert c.pending == 0


def test_interleaved_chunks_from_two_producers():
    c = ChunkedMessageCollector()
    a, b = [b"A1", b"A2", b"A3"], [b"B1", b"B2"]
    out = [
        feed(c, "a", 0, a, (1, 0)), feed(c, "b", 0, b, (1, 1)), feed(c, "a", 1, a, (1, 2)),
        feed(c, "b", 1, b, (1, 3)), feed(c, "a", 2, a, (1, 4)),
    ]
    done = [o.message for o in out if o.message is not None]
    assert [m.payload for m in done] == [b"B1B2", b"A1A2A3"]
    assert done[0].chunk_ids == [(1, 1), (1, 3)]


def test_lost_first_chunk_discards_without_ack_until_expired():
    c = ChunkedMessageCollector(expire_time_of_incomplete_chunked_message=1000)
    parts = [b"a", b"b"]
    outcome = feed(c, "u", 1, parts, (1, 5), now=500)
    assert outcome.message is None and outcome.ack == []
    outcome = feed(c, "u", 1, parts, (1, 6), now=5000)  # published long ago: ack it
    assert outcome.ack == [(1, 6)]


def test_out_of_order_chunk_drops_the_message():
    c = ChunkedMessageCollector()
    parts = [b"a", b"b", b"c"]
    feed(c, "u", 0, parts, (1, 0))
    assert feed(c, "u", 2, parts, (1, 1)).message is None
    assert c.pending == 0


def test_duplicate_chunk_is_acked_and_ignored():
    c = ChunkedMessageCollector()
    parts = [b"a", b"b", b"c"]
    feed(c, "u", 0, parts, (1, 0))
    feed(c, "u", 1, parts, (1, 1))
    assert feed(c, "u", 1, parts, (1, 2)).ack == [(1, 2)]
    assert feed(c, "u", 2, parts, (1, 3)).message.payload == b"abc"


@pytest.mark.parametrize("auto_ack", [True, False])
def test_max_pending_drops_the_oldest(auto_ack):
    c = ChunkedMessageCollector(max_pending_chunked_message=2,
                                auto_ack_oldest_chunked_message_on_queue_full=auto_ack)
    parts = [b"a", b"b"]
    feed(c, "u1", 0, parts, (1, 0))
    feed(c, "u2", 0, parts, (1, 1))
    outcome = feed(c, "u3", 0, parts, (1, 2))
    assert c.pending_uuids() == ["u2", "u3"]
    assert outcome.ack == ([(1, 0)] if auto_ack else [])
    # The rest of the dropped message cannot complete any more.
    assert feed(c, "u1", 1, parts, (1, 3)).message is None


def test_expiry_acks_incomplete_messages():
    c = ChunkedMessageCollector(expire_time_of_incomplete_chunked_message=100)
    parts = [b"a", b"b"]
    feed(c, "old", 0, parts, (1, 0), now=0)
    feed(c, "new", 0, parts, (1, 1), now=80)
    assert c.next_expiry() == 101
    assert c.expire(100) == []
    assert c.expire(101) == [(1, 0)]
    assert c.pending_uuids() == ["new"]
    assert c.expire(1000) == [(1, 1)]
    assert c.next_expiry() is None


def test_expiry_disabled():
    c = ChunkedMessageCollector(expire_time_of_incomplete_chunked_message=0)
    feed(c, "u", 0, [b"a", b"b"], (1, 0))
    assert c.expire(10**12) == [] and c.next_expiry() is None
