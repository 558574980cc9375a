"""The core's answers about one consumer that the faces send on (GetLastMessageId,
ConsumerStats), so no face reads the core's consumers, cursors or ledgers itself."""

import pytest

from pulsarlab.broker import SubType
from pulsarlab.broker.errors import ConsumerNotFound

T = "persistent://public/default/t"


def test_last_message_id_of_a_consumer_with_its_batch_index_and_mark_delete(harness):
    h = harness
    consumer = h.subscribe(T, "s", "c", SubType.Shared, permits=10)
    assert h.service.consumer_last_message_id(consumer.consumer_id)[1:4] == (-1, -1, -1)
    first, last = h.publish(T, 2, batch=4)
    h.ack(consumer, [first])
    answer = h.service.consumer_last_message_id(consumer.consumer_id)
    assert (answer.ledger_id, answer.entry_id, answer.batch_index) == (*last, 3)
    assert answer.mark_delete_position == first


def test_consumer_stats_have_pulsars_field_names(harness):
    h = harness
    consumer = h.subscribe(T, "s", "c", SubType.Shared, permits=5)
    h.publish(T, 3)
    stats = h.service.consumer_stats(consumer.consumer_id)
    assert (stats["consumerName"], stats["type"], stats["unackedMessages"],
            stats["availablePermits"], stats["msgBacklog"]) == ("c", "Shared", 3, 2, 3)


def test_an_unknown_consumer_is_not_found(harness):
    with pytest.raises(ConsumerNotFound):
        harness.service.consumer_last_message_id(99)
    with pytest.raises(ConsumerNotFound):
        harness.service.consumer_stats(99)


@pytest.mark.parametrize(("broker_flag", "consumer_flag"), [
    (False, False), (False, True), (True, False), (True, True),
])
def test_ack_sets_are_honoured_only_when_broker_and_consumer_enable_batch_index_acks(
    make_harness, broker_flag, consumer_flag
):
    """A face reads an ACK's ack sets only when they count (reading them costs per id)."""
    h = make_harness(acknowledgment_at_batch_index_level_enabled=broker_flag)
    c = h.subscribe(T, "s", "c", SubType.Shared, permits=1,
                    batch_index_ack_enabled=consumer_flag)
    assert h.service.honours_ack_sets(c.consumer_id) is (broker_flag and consumer_flag)
    with pytest.raises(ConsumerNotFound):
        h.service.honours_ack_sets(99)
