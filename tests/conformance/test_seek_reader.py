"""Seek, readers and ``has_message_available``: real Pulsar and pulsarlab compared."""

from __future__ import annotations

import time

import pulsar
import pytest

from .conftest import QUIET_MS, admin_path, drain, produce, receive_n, values


# SubscriptionSeekTest.testSeek (seek to a message id: that message is the next one)
@pytest.mark.parametrize("sub_type", ["Exclusive", "Shared"])
def test_seek_to_a_message_id(compare, sub_type) -> None:
    def scenario(s):
        t = s.topic("seek")
        c = s.client.subscribe(t, "s", consumer_type=getattr(pulsar.ConsumerType, sub_type))
        ids = produce(s, t, 10)
        receive_n(c, 10)
        c.seek(ids[4])
        return values(drain(c))

    compare(scenario)


# SubscriptionSeekTest.testSeekToEarliest / testSeekToLatest (MessageId.earliest / latest)
@pytest.mark.parametrize("where", ["earliest", "latest"])
def test_seek_to_earliest_or_latest(compare, where) -> None:
    def scenario(s):
        t = s.topic("seekel")
        c = s.client.subscribe(t, "s")
        produce(s, t, 5)
        receive_n(c, 2)
        c.seek(getattr(pulsar.MessageId, where))
        return values(drain(c))

    compare(scenario)


# SubscriptionSeekTest.testSeekTime (seek by publish time)
def test_seek_by_publish_time(compare) -> None:
    def scenario(s):
        t = s.topic("seektime")
        c = s.client.subscribe(t, "s")
        p = s.client.create_producer(t)
        for i in range(3):
            p.send(f"old{i}".encode())
        time.sleep(0.3)  # publish times either side of the seek point
        middle = int(time.time() * 1000)
        time.sleep(0.3)
        for i in range(3):
            p.send(f"new{i}".encode())
        receive_n(c, 6)
        c.seek(middle)
        return values(drain(c))

    compare(scenario)


# SubscriptionSeekTest.testSeekForBatch: seek to a message inside a batch
def test_seek_inside_a_batch(compare) -> None:
    def scenario(s):
        t = s.topic("seekbatch")
        c = s.client.subscribe(t, "s")
        p = s.client.create_producer(t, batching_enabled=True, batching_max_messages=5,
                                     batching_max_publish_delay_ms=60_000)
        for i in range(5):
            p.send_async(f"m{i}".encode(), None)
        p.flush()
        got = receive_n(c, 5)
        c.seek(got[2].message_id())
        return values(drain(c))

    compare(scenario)


# ReaderTest.testReadMessageWithoutBatching... (reader from earliest / latest)
@pytest.mark.parametrize("start", ["earliest", "latest"])
def test_reader_from_earliest_or_latest(compare, start) -> None:
    def scenario(s):
        t = s.topic("reader")
        produce(s, t, 3, "before")
        r = s.client.create_reader(t, getattr(pulsar.MessageId, start))
        produce(s, t, 2, "after")
        out = []
        while True:
            try:
                out.append(r.read_next(timeout_millis=QUIET_MS).data().decode())
            except pulsar.Timeout:
                return out

    compare(scenario)


# ReaderTest.testReaderStartMessageIdInclusive / exclusive start at a message id
@pytest.mark.parametrize("inclusive", [False, True])
def test_reader_from_a_message_id(compare, inclusive) -> None:
    def scenario(s):
        t = s.topic("readerid")
        ids = produce(s, t, 6)
        r = s.client.create_reader(t, ids[2], start_message_id_inclusive=inclusive)
        out = []
        while r.has_message_available():
            out.append(r.read_next(timeout_millis=10_000).data().decode())
        return out

    compare(scenario)


# ReaderTest.testHasMessageAvailable (empty topic, after produce, after reading everything)
def test_has_message_available_through_a_topic(compare) -> None:
    def scenario(s):
        t = s.topic("hma")
        r = s.client.create_reader(t, pulsar.MessageId.earliest)
        seen = [r.has_message_available()]
        produce(s, t, 3)
        seen.append(r.has_message_available())
        for _ in range(3):
            r.read_next(timeout_millis=10_000)
        seen.append(r.has_message_available())
        return seen

    compare(scenario)


# ReaderTest.testHasMessageAvailableWithLatest... (a reader at latest on a non-empty topic)
def test_has_message_available_for_a_latest_reader(compare) -> None:
    def scenario(s):
        t = s.topic("hmalatest")
        produce(s, t, 3)
        r = s.client.create_reader(t, pulsar.MessageId.latest)
        before = r.has_message_available()
        produce(s, t, 1, "new")
        after = r.has_message_available()
        return [before, after, r.read_next(timeout_millis=10_000).data().decode()]

    compare(scenario)


# ReaderTest.testReaderSeek (a reader seeks back)
def test_reader_seek_back(compare) -> None:
    def scenario(s):
        t = s.topic("readerseek")
        ids = produce(s, t, 5)
        r = s.client.create_reader(t, pulsar.MessageId.earliest)
        for _ in range(5):
            r.read_next(timeout_millis=10_000)
        r.seek(ids[1])
        out = []
        while r.has_message_available():
            out.append(r.read_next(timeout_millis=10_000).data().decode())
        return out

    compare(scenario)


# ReaderTest: a reader's subscription is non-durable; it leaves no backlog behind
def test_reader_leaves_no_subscription(compare) -> None:
    def scenario(s):
        t = s.topic("readernosub")
        produce(s, t, 2)
        r = s.client.create_reader(t, pulsar.MessageId.earliest)
        r.read_next(timeout_millis=10_000)
        r.close()
        return s.rest_ok("GET", f"{admin_path(t)}/subscriptions")

    compare(scenario)


# SubscriptionSeekTest.testSeekOnPartitionedTopic is out; seek with a consumer that leaves
# unacked messages behind (the seek clears them: everything after the point comes again)
def test_seek_clears_unacked_messages(compare) -> None:
    def scenario(s):
        t = s.topic("seekunacked")
        c = s.client.subscribe(t, "s", consumer_type=pulsar.ConsumerType.Shared)
        ids = produce(s, t, 6)
        receive_n(c, 6, ack=False)
        c.seek(ids[3])
        return [(m.data().decode(), m.redelivery_count()) for m in drain(c)]

    compare(scenario)
