"""Unacked-message limits on Shared and Key_Shared subscriptions, as Pulsar 3.3 applies them."""

import pytest

from pulsarlab.broker import SubType

T = "limits"
SHARED_TYPES = [SubType.Shared, SubType.Key_Shared]


def consumer_stats(harness, name):
    sub = harness.service.topic_stats(T)["subscriptions"]["s"]
    return next(c for c in sub["consumers"] if c["consumerName"] == name)


@pytest.mark.parametrize("sub_type", SHARED_TYPES)
def test_consumer_limit_caps_every_send_not_only_the_first(make_harness, sub_type):
    """``PersistentDispatcherMultipleConsumers.trySendMessagesToConsumers`` (and Key_Shared's
    ``getAvailablePermits``) cut a consumer's permits to ``max - unacked`` on every send;
    ``Consumer.incrementUnackedMessages`` blocks at ``unacked >= max`` and
    ``Consumer.updateBlockedConsumerOnUnackedMsgs`` unblocks at ``unacked <= max / 2``."""
    harness = make_harness(max_unacked_messages_per_consumer=10)
    c = harness.subscribe(T, "s", "c", sub_type, permits=1000)
    msgs = harness.publish(T, 40)
    assert harness.take(c) == msgs[:10]
    assert consumer_stats(harness, "c")["blockedConsumerOnUnackedMsgs"] is True
    harness.ack(c, msgs[:4])  # 6 unacked: still above half the limit
    assert harness.take(c) == []
    assert consumer_stats(harness, "c")["blockedConsumerOnUnackedMsgs"] is True
    harness.ack(c, msgs[4:5])  # 5 unacked = max / 2: unblocked, 5 more fit
    assert harness.take(c) == msgs[10:15]
    stats = consumer_stats(harness, "c")
    assert stats["unackedMessages"] == 10 and stats["blockedConsumerOnUnackedMsgs"] is True


def test_shared_limit_passes_the_rest_to_another_consumer(make_harness):
    """A blocked consumer is skipped by ``getNextConsumer`` (``isConsumerAvailable``)."""
    harness = make_harness(max_unacked_messages_per_consumer=3)
    a = harness.subscribe(T, "s", "A", SubType.Shared, permits=1000)
    b = harness.subscribe(T, "s", "B", SubType.Shared, permits=1000)
    harness.publish(T, 8)
    got_a, got_b = harness.take(a), harness.take(b)
    assert len(got_a) == len(got_b) == 3  # both capped; two entries wait for an ack
    sub = harness.service.topic_stats(T)["subscriptions"]["s"]
    assert sub["msgBacklog"] == 8 and sub["unackedMessages"] == 6


@pytest.mark.parametrize("sub_type", SHARED_TYPES)
def test_permits_granted_while_blocked_are_held_until_unblocked(make_harness, sub_type):
    """``Consumer.flowPermits`` keeps permits received while blocked aside
    (``permitsReceivedWhileConsumerBlocked``); ``flowConsumerBlockedPermits`` hands them
    over on unblocking."""
    harness = make_harness(max_unacked_messages_per_consumer=4)
    c = harness.subscribe(T, "s", "c", sub_type, permits=4)
    msgs = harness.publish(T, 10)
    assert harness.take(c) == msgs[:4]
    harness.flow(c, 6)
    assert consumer_stats(harness, "c")["availablePermits"] == 0  # held, not granted
    assert c.permits_received_while_blocked == 6
    harness.ack(c, msgs[:2])
    assert harness.take(c) == msgs[4:6]  # 2 unacked + 2 more = the limit again
    assert c.permits == 4 and c.permits_received_while_blocked == 0


def test_exclusive_and_non_durable_consumers_are_not_limited(make_harness):
    """``Consumer.getMaxUnackedMessages`` is 0 on a non-durable subscription, and only
    individual-ack (Shared/Key_Shared) consumers are ever blocked."""
    harness = make_harness(max_unacked_messages_per_consumer=2)
    ex = harness.subscribe(T, "ex", "e", SubType.Exclusive, permits=100)
    nd = harness.subscribe(T, "nd", "n", SubType.Shared, permits=100, durable=False)
    harness.publish(T, 6)
    assert len(harness.take(ex)) == 6
    assert len(harness.take(nd)) == 6


def test_limit_zero_means_no_limit(make_harness):
    harness = make_harness(max_unacked_messages_per_consumer=0)
    c = harness.subscribe(T, "s", "c", SubType.Shared, permits=1000)
    harness.publish(T, 50)
    assert len(harness.take(c)) == 50


@pytest.mark.parametrize("sub_type", SHARED_TYPES)
def test_redelivery_request_unblocks_the_consumer(make_harness, sub_type):
    """``Consumer.redeliverUnacknowledgedMessages(List<MessageIdData>)`` lowers the unacked
    count, sets ``blockedConsumerOnUnackedMsgs = false`` and flows the permits received
    while blocked: the nacked messages come back at once."""
    harness = make_harness(max_unacked_messages_per_consumer=10)
    c = harness.subscribe(T, "s", "c", sub_type, permits=1000)
    msgs = harness.publish(T, 12)
    assert harness.take(c) == msgs[:10]
    harness.flow(c, 5)  # held while blocked
    harness.service.redeliver_unacknowledged(c.consumer_id, msgs[3:5])
    harness.drain()
    assert harness.take(c) == msgs[3:5]  # back to 10 unacked: blocked again
    stats = consumer_stats(harness, "c")
    assert stats["unackedMessages"] == 10 and stats["blockedConsumerOnUnackedMsgs"] is True
    assert c.permits == 1000 - 12 + 5


@pytest.mark.parametrize("sub_type", SHARED_TYPES)
def test_redeliver_all_unblocks_the_consumer(make_harness, sub_type):
    """``Consumer.redeliverUnacknowledgedMessages(long consumerEpoch)``: every pending
    message goes back, the unacked count is cleared and the consumer unblocked."""
    harness = make_harness(max_unacked_messages_per_consumer=4)
    c = harness.subscribe(T, "s", "c", sub_type, permits=100)
    msgs = harness.publish(T, 6)
    assert harness.take(c) == msgs[:4]
    harness.service.redeliver_unacknowledged(c.consumer_id)
    harness.drain()
    assert harness.take(c) == msgs[:4]
    assert consumer_stats(harness, "c")["blockedConsumerOnUnackedMsgs"] is True


def sub_stats(harness):
    return harness.service.topic_stats(T)["subscriptions"]["s"]


@pytest.mark.parametrize("sub_type", SHARED_TYPES)
def test_subscription_limit_stops_reads_until_half_is_acked(make_harness, sub_type):
    """``PersistentDispatcherMultipleConsumers.addUnAckedMessages`` blocks the dispatcher
    when the subscription's unacked total reaches ``maxUnackedMessagesPerSubscription``
    (``blockedSubscriptionOnUnackedMsgs``); ``readMoreEntries`` then reads nothing new, and
    the dispatcher is unblocked once the total falls below half the limit."""
    harness = make_harness(max_unacked_messages_per_subscription=8)
    a = harness.subscribe(T, "s", "A", sub_type, permits=1000)
    msgs = harness.publish(T, 8)
    assert harness.take(a) == msgs  # 8 unacked: blocked
    assert sub_stats(harness)["blockedSubscriptionOnUnackedMsgs"] is True
    msgs += harness.publish(T, 12)
    assert harness.take(a) == []  # no new reads
    harness.ack(a, msgs[:4])  # 4 unacked: not below 8 / 2
    assert harness.take(a) == []
    assert sub_stats(harness)["blockedSubscriptionOnUnackedMsgs"] is True
    harness.ack(a, msgs[4:5])  # 3 < 4: unblocked; the next read takes all 12 entries
    assert harness.take(a) == msgs[8:]
    stats = sub_stats(harness)
    assert stats["unackedMessages"] == 15 and stats["blockedSubscriptionOnUnackedMsgs"] is True


def test_subscription_limit_holds_new_reads_for_every_consumer(make_harness):
    """The block is the dispatcher's: a consumer joining with permits gets nothing new."""
    harness = make_harness(max_unacked_messages_per_subscription=4)
    a = harness.subscribe(T, "s", "A", SubType.Shared, permits=1000)
    harness.publish(T, 4)
    assert len(harness.take(a)) == 4
    harness.publish(T, 3)
    b = harness.subscribe(T, "s", "B", SubType.Shared, permits=1000)
    assert harness.take(a) + harness.take(b) == []


def test_subscription_limit_lets_replays_through(make_harness):
    """While blocked, ``readMoreEntries`` still replays: redelivered messages go out."""
    harness = make_harness(max_unacked_messages_per_subscription=4)
    a = harness.subscribe(T, "s", "A", SubType.Shared, permits=1000)
    msgs = harness.publish(T, 4)
    assert harness.take(a) == msgs
    harness.publish(T, 2)
    harness.service.redeliver_unacknowledged(a.consumer_id, msgs[:1])
    harness.drain()
    assert harness.take(a) == msgs[:1]
    assert sub_stats(harness)["blockedSubscriptionOnUnackedMsgs"] is True


def test_subscription_limit_zero_never_blocks(make_harness):
    harness = make_harness(max_unacked_messages_per_subscription=0)
    a = harness.subscribe(T, "s", "A", SubType.Shared, permits=1000)
    harness.publish(T, 30)
    assert len(harness.take(a)) == 30
    assert sub_stats(harness)["blockedSubscriptionOnUnackedMsgs"] is False
