"""An ACK over pulsar://: its ack sets applied when the broker enables batch-index acks
(a pulsar:// consumer always does), ignored otherwise — the entry is acked whole."""

from __future__ import annotations

import pytest

from .support import Harness, T, api, command, send_frame

TOPIC = "persistent://public/default/t"


@pytest.mark.parametrize("enabled", [False, True])
def test_an_ack_set_counts_only_with_batch_index_acks(enabled: bool) -> None:
    h = Harness(acknowledgment_at_batch_index_level_enabled=enabled)
    s = h.session()
    h.connect(s)
    h.run(s, command(T.PRODUCER, "producer", topic=TOPIC, producer_id=1, request_id=1))
    h.run(s, command(T.SUBSCRIBE, "subscribe", topic=TOPIC, subscription="s", consumer_id=3,
                     request_id=2, subType=1))
    h.run(s, send_frame(1, 0, b"batch", num_messages_in_batch=4))
    (message,) = [c for c in h.run(s, command(T.FLOW, "flow", consumer_id=3, messagePermits=9))
                  if c.type == T.MESSAGE]
    mid = message.message.message_id
    # Indexes 0 and 1 acknowledged: bits 2 and 3 still set.
    h.run(s, command(T.ACK, "ack", consumer_id=3, ack_type=api.CommandAck.Individual,
                     message_id=[api.MessageIdData(ledgerId=mid.ledgerId, entryId=mid.entryId,
                                                   ack_set=[0b1100], batch_size=4)]))
    cursor = h.service.subscription(TOPIC, "s").cursor
    position = (mid.ledgerId, mid.entryId)
    assert cursor.is_deleted(position) is not enabled
    assert cursor.batch_deleted.get(position) == (0b1100 if enabled else None)


@pytest.mark.parametrize("ids", [(2**64 - 1, 2**64 - 1), (0, 2**64 - 1)])
def test_an_id_of_2_to_the_64_minus_1_is_pulsars_minus_1(ids: tuple[int, int]) -> None:
    """uint64 on the wire: -1 (Pulsar's "none") is not an entry beyond the last one."""
    h = Harness()
    s = h.session()
    h.connect(s)
    h.run(s, command(T.PRODUCER, "producer", topic=TOPIC, producer_id=1, request_id=1))
    h.run(s, command(T.SUBSCRIBE, "subscribe", topic=TOPIC, subscription="s", consumer_id=3,
                     request_id=2, subType=0))
    h.run(s, send_frame(1, 0, b"m"))
    replies = h.run(s, command(T.ACK, "ack", consumer_id=3, ack_type=api.CommandAck.Individual,
                               message_id=[api.MessageIdData(ledgerId=0, entryId=0),
                                           api.MessageIdData(ledgerId=ids[0], entryId=ids[1])],
                               request_id=7))
    assert [r.type for r in replies] == [T.ACK_RESPONSE]
    assert not replies[0].ackResponse.HasField("error")
    assert h.service.subscription(TOPIC, "s").cursor.mark_delete_position == (0, 0)
