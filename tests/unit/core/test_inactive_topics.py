"""Inactive topics are unloaded, never deleted: files closed, memory freed, cursors and
messages kept; the next use reloads them (Pulsar's inactive-topic rules delete instead)."""

from __future__ import annotations

import pytest

from pulsarlab.broker import ManualClock, SubType
from pulsarlab.broker.errors import TopicBusy

T = "persistent://public/default/idle"
_LIMIT_S = 600


def _make(make_harness, durable_storage_factory, **settings):
    return make_harness(storage=durable_storage_factory(), clock=ManualClock(), **settings)


def _open_files_of(h) -> int:
    return len(h.storage.open_files)


def test_a_topic_nobody_uses_is_unloaded_and_reloads_with_its_backlog(
    make_harness, durable_storage_factory
):
    h = _make(make_harness, durable_storage_factory)
    c = h.subscribe(T, "s", "c", SubType.Exclusive, permits=10)
    msgs = h.publish(T, 3)
    assert h.take(c) == msgs
    h.ack(c, [msgs[0]])
    h.close(c)
    h.service.close_producer(next(iter(h.service.topics[T].producers)))
    assert _open_files_of(h) > 0
    for _ in range(_LIMIT_S // 60):  # checked once a minute: first seen inactive at 1:00
        h.advance(60_000)
    assert T in h.service.topics
    h.advance(60_000)  # inactive for the whole duration at the next check
    assert T not in h.service.topics
    assert _open_files_of(h) == 0
    assert h.service.list_topics("public/default") == [T]  # unloaded, not deleted
    c2 = h.subscribe(T, "s", "c2", SubType.Exclusive, permits=10)
    assert T in h.service.topics
    assert h.take(c2) == msgs[1:]


def test_a_topic_with_a_consumer_or_producer_stays_loaded(make_harness, durable_storage_factory):
    h = _make(make_harness, durable_storage_factory)
    h.subscribe(T, "s", "c", SubType.Shared)
    other = "persistent://public/default/produced"
    h.publish(other, 1)
    for _ in range(2 * _LIMIT_S // 60):
        h.advance(60_000)
    assert {T, other} <= set(h.service.topics)
    with pytest.raises(TopicBusy):
        h.service.unload_topic(T)


def test_activity_restarts_the_inactive_clock_and_the_rule_can_be_off(
    make_harness, durable_storage_factory
):
    h = _make(make_harness, durable_storage_factory,
              broker_unload_inactive_topics_max_inactive_duration_seconds=120)
    c = h.subscribe(T, "s", "c", SubType.Shared)
    h.advance(60_000)
    h.close(c)
    h.advance(60_000)  # first seen inactive here
    h.advance(60_000)
    assert T in h.service.topics
    h.advance(60_000)
    assert T not in h.service.topics
    off = _make(make_harness, durable_storage_factory,
                broker_unload_inactive_topics_enabled=False)
    off.publish(T, 1)
    for _ in range(3):
        off.advance(3_600_000)
    assert T in off.service.topics


def test_memory_storage_never_unloads(make_harness):
    h = make_harness()
    h.publish(T, 1)
    for _ in range(3):
        h.advance(3_600_000)
    assert T in h.service.topics


@pytest.mark.parametrize("durable", [True, False])
def test_forced_unload_disconnects_clients_and_redelivers_unacked(
    make_harness, durable_storage_factory, durable
):
    """Admin unload (Pulsar's ``PersistentTopic.close``): producers and consumers are told
    to close, the topic reloads on next use and unacked messages are delivered again."""
    storage = durable_storage_factory() if durable else None
    h = make_harness(storage=storage, clock=ManualClock())
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=10)
    msgs = h.publish(T, 3)
    assert h.take(c) == msgs
    h.ack(c, [msgs[0]])
    h.service.unload_topic(T, force=True)
    h.drain()
    assert [a.consumer_id for a in h.consumers_closed] == [c.consumer_id]
    assert len(h.producers_closed) == 1 and h.producers_closed[0].reason == "unloaded"
    assert (T in h.service.topics) is not durable  # memory storage keeps it loaded
    assert not h.service.topics.get(T, None) or not h.service.topics[T].producers
    c2 = h.subscribe(T, "s", "c2", SubType.Shared, permits=10)
    assert h.take(c2) == msgs[1:]
