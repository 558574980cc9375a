"""R-RETENTION backlog quota: producer_exception, producer_request_hold and eviction."""

import pytest

from pulsarlab.broker import MessageMetadata, SubType
from pulsarlab.broker.errors import ProducerBlockedQuotaExceeded
from pulsarlab.broker.events import EventType

T = "quota"
NS = "public/default"
PAYLOAD = b"x" * 1000


def _quota(h, policy, limit=2500):
    h.service.set_namespace_policy(NS, "backlog_quota", {"limitSize": limit, "policy": policy})


def test_producer_exception_refuses_sends_over_quota(harness):
    h = harness
    _quota(h, "producer_exception")
    c = h.subscribe(T, "s", "c", SubType.Exclusive, permits=100)
    msgs = h.publish(T, 3, payload=PAYLOAD)
    producer = h.producer(T)
    with pytest.raises(ProducerBlockedQuotaExceeded, match="backlog quota of 2500 bytes"):
        h.service.send(producer, MessageMetadata(), PAYLOAD)
    h.ack(c, [msgs[-1]], cumulative=True)
    h.publish(T, 1, payload=PAYLOAD)  # accepted again once consumed


def test_producer_request_hold_holds_until_backlog_shrinks(harness):
    h = harness
    _quota(h, "producer_request_hold")
    c = h.subscribe(T, "s", "c", SubType.Exclusive, permits=100)
    msgs = h.publish(T, 3, payload=PAYLOAD)
    producer = h.producer(T)
    assert h.service.send(producer, MessageMetadata(sequence_id=9), PAYLOAD) is None
    h.commit()
    assert [r.sequence_id for r in h.receipts].count(9) == 0
    assert h.events_of(EventType.BACKLOG_QUOTA_EXCEEDED)
    received = h.take(c)
    assert received == msgs
    h.ack(c, [msgs[-1]], cumulative=True)
    h.commit()
    assert [r.sequence_id for r in h.receipts].count(9) == 1
    assert len(h.take(c)) == 1


def test_consumer_backlog_eviction_skips_the_oldest(harness):
    h = harness
    _quota(h, "consumer_backlog_eviction")
    h.subscribe(T, "slow", "c", SubType.Exclusive)
    msgs = [h.publish(T, 1, payload=PAYLOAD)[0] for _ in range(6)]
    topic = h.service.topics[f"persistent://{NS}/{T}"]
    assert topic.backlog_size_bytes() <= 2500 + 2 * (len(PAYLOAD) + 100)
    cursor = topic.subscriptions["slow"].cursor
    assert cursor.is_deleted(msgs[0])
    assert not cursor.is_deleted(msgs[-1])
