"""The pulsar:// session driven with bytes: handshake, producers, sends, consumers, errors."""

from __future__ import annotations

from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.pulsar_protocol.framing import FrameDecoder, encode_command

from .support import Harness, T, command, send_frame


def test_connect_negotiates_the_protocol_version() -> None:
    h = Harness()
    s = h.session()
    reply = h.connect(s, protocol_version=21)
    assert reply.type == T.CONNECTED
    assert reply.connected.protocol_version == 20
    assert reply.connected.max_message_size == h.settings.max_message_size
    s2 = h.session()
    assert h.connect(s2, protocol_version=13).connected.protocol_version == 13


def test_commands_before_connect_are_refused_and_close_the_connection() -> None:
    h = Harness()
    s = h.session()
    (reply,) = h.run(s, command(T.LOOKUP, "lookupTopic", topic="t", request_id=1))
    assert reply.type == T.ERROR
    assert "before CONNECT" in reply.error.message
    assert s.closed


def test_ping_pong_and_lookup_answers_with_this_broker() -> None:
    h = Harness()
    s = h.session()
    h.connect(s)
    assert [c.type for c in h.run(s, command(T.PING, "ping"))] == [T.PONG]
    (reply,) = h.run(s, command(T.LOOKUP, "lookupTopic", topic="t", request_id=7))
    assert reply.lookupTopicResponse.response == api.CommandLookupTopicResponse.Connect
    assert reply.lookupTopicResponse.authoritative
    assert reply.lookupTopicResponse.brokerServiceUrl == "pulsar://127.0.0.1:6650"
    (reply,) = h.run(s, command(T.PARTITIONED_METADATA, "partitionMetadata", topic="t",
                                request_id=8))
    assert reply.partitionMetadataResponse.partitions == 0
    (reply,) = h.run(s, command(T.LOOKUP, "lookupTopic", topic="bad://x", request_id=9))
    assert reply.lookupTopicResponse.response == api.CommandLookupTopicResponse.Failed
    assert reply.lookupTopicResponse.error == api.InvalidTopicName


def _producer(h: Harness, s, topic: str = "t", producer_id: int = 1, **fields) -> api.BaseCommand:
    (reply,) = h.run(s, command(T.PRODUCER, "producer", topic=topic, producer_id=producer_id,
                                request_id=100 + producer_id, **fields))
    return reply


def test_producer_names_are_assigned_and_sends_get_receipts() -> None:
    h = Harness()
    s = h.session()
    h.connect(s)
    reply = _producer(h, s)
    assert reply.type == T.PRODUCER_SUCCESS
    assert reply.producer_success.producer_name.startswith("standalone-0-")
    assert reply.producer_success.last_sequence_id == -1
    (receipt,) = h.run(s, send_frame(1, 0, b"hello", partition_key="k"))
    assert receipt.type == T.SEND_RECEIPT
    assert receipt.send_receipt.sequence_id == 0
    assert (receipt.send_receipt.message_id.ledgerId, receipt.send_receipt.message_id.entryId) \
        == (0, 0)


def test_a_checksum_mismatch_is_a_send_error_and_stores_nothing() -> None:
    h = Harness()
    s = h.session()
    h.connect(s)
    _producer(h, s)
    frame = bytearray(send_frame(1, 0, b"hello"))
    frame[-1] ^= 0xFF
    (reply,) = h.run(s, bytes(frame))
    assert reply.type == T.SEND_ERROR
    assert reply.send_error.error == api.ChecksumError
    assert h.service.get_topic("t").ledger.number_of_entries == 0
    assert not s.closed


def test_subscribe_flow_message_and_ack() -> None:
    h = Harness()
    s = h.session()
    h.connect(s)
    _producer(h, s)
    (reply,) = h.run(s, command(
        T.SUBSCRIBE, "subscribe", topic="t", subscription="sub",
        subType=api.CommandSubscribe.Shared, consumer_id=5, request_id=2,
        initialPosition=api.CommandSubscribe.Earliest,
    ))
    assert reply.type == T.SUCCESS
    h.run(s, send_frame(1, 0, b"one", properties=[api.KeyValue(key="a", value="b")]))
    s.receive_data(command(T.FLOW, "flow", consumer_id=5, messagePermits=10))
    h.service.commit()
    for action in h.service.take_actions():
        action.conn.handle_action(action)
    (frame,) = FrameDecoder(1 << 20).feed(s.data_to_send())
    assert frame.command.type == T.MESSAGE
    assert frame.command.message.consumer_id == 5
    assert frame.checksum_ok
    assert frame.payload == b"one"
    metadata = api.MessageMetadata.FromString(frame.metadata)
    assert metadata.properties[0].value == "b"
    ack = command(T.ACK, "ack", consumer_id=5, ack_type=api.CommandAck.Individual,
                  message_id=[api.MessageIdData(ledgerId=0, entryId=0)], request_id=9)
    (reply,) = h.run(s, ack)
    assert reply.type == T.ACK_RESPONSE
    assert reply.ackResponse.request_id == 9
    sub = h.service.subscription("t", "sub")
    assert sub.cursor.number_of_entries_in_backlog() == 0


def test_cumulative_ack_on_shared_is_ignored_as_pulsar_does() -> None:
    h = Harness()
    s = h.session()
    h.connect(s)
    _producer(h, s)
    h.run(s, command(T.SUBSCRIBE, "subscribe", topic="t", subscription="sub",
                     subType=api.CommandSubscribe.Shared, consumer_id=5, request_id=2))
    h.run(s, send_frame(1, 0, b"x"))
    (reply,) = h.run(s, command(
        T.ACK, "ack", consumer_id=5, ack_type=api.CommandAck.Cumulative,
        message_id=[api.MessageIdData(ledgerId=0, entryId=0)], request_id=3,
    ))
    assert reply.type == T.ACK_RESPONSE
    assert h.service.subscription("t", "sub").cursor.number_of_entries_in_backlog() == 1


def test_transactions_get_an_error_naming_them() -> None:
    h = Harness()
    s = h.session()
    h.connect(s)
    cmd = T(type=T.NEW_TXN)
    cmd.newTxn.request_id = 42
    (reply,) = h.run(s, encode_command(cmd))
    assert reply.type == T.ERROR
    assert reply.error.request_id == 42
    assert "transactions are not supported" in reply.error.message
    assert not s.closed


def test_token_authentication() -> None:
    h = Harness(authentication_enabled=True)
    token = h.authenticator.create_token("alice")
    good = h.session()
    assert h.connect(good, auth_method_name="token", auth_data=token.encode()).type \
        == T.CONNECTED
    assert good.role == "alice"
    bad = h.session()
    reply = h.connect(bad, auth_method_name="token", auth_data=b"nope")
    assert reply.type == T.ERROR
    assert reply.error.error == api.AuthenticationError
    assert bad.closed
    missing = h.session()
    assert h.connect(missing).error.error == api.AuthenticationError


def test_frames_may_arrive_in_pieces() -> None:
    h = Harness()
    s = h.session()
    data = command(T.CONNECT, "connect", client_version="x", protocol_version=20) \
        + command(T.PING, "ping")
    for i in range(len(data)):
        s.receive_data(data[i : i + 1])
    assert [f.command.type for f in h.frames(s)] == [T.CONNECTED, T.PONG]


def test_an_oversized_frame_closes_the_connection_with_a_reason() -> None:
    h = Harness(max_message_size=1024)
    s = h.session()
    h.connect(s)
    (reply,) = h.run(s, (10**9).to_bytes(4, "big") + b"\0" * 8)
    assert reply.type == T.ERROR
    assert "frame size" in reply.error.message
    assert s.closed


def test_seek_disconnects_the_consumer_so_it_resubscribes() -> None:
    h = Harness()
    s = h.session()
    h.connect(s)
    h.run(s, command(T.SUBSCRIBE, "subscribe", topic="t", subscription="sub",
                     subType=api.CommandSubscribe.Exclusive, consumer_id=5, request_id=2))
    replies = h.run(s, command(T.SEEK, "seek", consumer_id=5, request_id=3,
                               message_publish_time=0))
    assert [r.type for r in replies] == [T.CLOSE_CONSUMER, T.SUCCESS]
    assert 5 not in s.consumers
