"""A consumer's seek, the core's rule for every face (Pulsar's ``ServerCnx.handleSeek`` →
``PersistentSubscription.resetCursor``): the subscription's consumers are disconnected,
then its cursor moves; the clients subscribe again."""

from pulsarlab.broker import SubType
from pulsarlab.broker.message_id import MessageId

T = "persistent://public/default/t"


def test_seek_disconnects_every_consumer_of_the_subscription_then_moves_the_cursor(harness):
    h = harness
    a = h.subscribe(T, "s", "a", SubType.Shared, permits=10)
    b = h.subscribe(T, "s", "b", SubType.Shared, permits=10)
    other = h.subscribe(T, "other", "o", SubType.Shared, permits=10)
    positions = h.publish(T, 4)
    h.ack(a, h.take(a))
    h.ack(b, h.take(b))
    h.delivered.clear()
    assert h.service.seek(a.consumer_id, message_id=MessageId(-1, *positions[1])) == positions[1]
    h.drain()
    assert {(c.consumer_id, c.reason) for c in h.consumers_closed} == {
        (a.consumer_id, "seek"), (b.consumer_id, "seek")}
    assert other.consumer_id in h.service.consumers
    assert not h.delivered  # nothing went to the disconnected consumers
    again = h.subscribe(T, "s", "a", SubType.Shared, permits=10)
    assert h.take(again) == positions[1:]


def test_seek_by_publish_time_answers_the_position_read_next(harness):
    h = harness
    c = h.subscribe(T, "s", "c", SubType.Exclusive, permits=10)
    h.clock.advance(1000)
    positions = h.publish(T, 1)
    h.clock.advance(1000)
    later = h.publish(T, 1)
    h.ack(c, positions + later)
    publish_time = h.clock.now_ms() - 500
    assert h.service.seek(c.consumer_id, publish_time=publish_time) == later[0]


def test_a_readers_subscription_goes_with_it_and_comes_back_at_the_position(harness):
    h = harness
    reader = h.subscribe(T, "reader-1", "r", SubType.Exclusive, permits=10, durable=False,
                         is_reader=True)
    positions = h.publish(T, 3)
    position = h.service.seek(reader.consumer_id, message_id=MessageId.earliest)
    assert position == positions[0]
    assert "reader-1" not in h.service.get_topic(T).subscriptions
    again = h.subscribe(T, "reader-1", "r", SubType.Exclusive, permits=10, durable=False,
                        is_reader=True, start_message_id=MessageId(-1, *position),
                        start_message_id_inclusive=True)
    assert h.take(again) == positions
