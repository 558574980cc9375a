"""The hand-laid SEND_RECEIPT and MESSAGE commands are byte for byte protobuf's."""

import pytest

from pulsarlab.broker.pulsar_protocol import FrameDecoder
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.pulsar_protocol.framing import encode_command
from pulsarlab.broker.pulsar_protocol.hot_commands import (
    encode_message_command,
    encode_send_receipt,
)

U64 = (1 << 64) - 1
T = api.BaseCommand


def _by_protobuf(producer_id, sequence_id, ledger_id, entry_id, partition, highest):
    command = T(type=T.SEND_RECEIPT)
    receipt = command.send_receipt
    receipt.producer_id = producer_id & U64
    receipt.sequence_id = sequence_id & U64
    receipt.message_id.ledgerId = ledger_id & U64
    receipt.message_id.entryId = entry_id & U64
    receipt.message_id.partition = partition
    if highest is not None:
        receipt.highest_sequence_id = highest & U64
    return encode_command(command)


@pytest.mark.parametrize("fields", [
    (1, 0, 0, 0, -1, None),
    (0, 127, 128, 300, 0, None),
    (7, 2**40, 5, 2**63 + 5, 3, 2**40 + 9),
    (2**64 - 1, -1, -1, -1, 2**31 - 1, 0),  # -1 as the client's uint64 (Pulsar's -1:-1)
    (3, 16384, 99, 1, -2147483648, 16385),
])
def test_the_frame_is_protobufs(fields):
    frame = encode_send_receipt(*fields)
    assert frame == _by_protobuf(*fields)
    (decoded,) = FrameDecoder(1 << 20).feed(frame)
    receipt = decoded.command.send_receipt
    assert decoded.command.type == T.SEND_RECEIPT
    assert receipt.sequence_id == fields[1] & U64
    assert receipt.message_id.partition == fields[4]
    assert receipt.HasField("highest_sequence_id") == (fields[5] is not None)


@pytest.mark.parametrize("fields", [
    (5, 0, 0, -1, 0),
    (2**64 - 1, 128, 2**63 + 1, 7, 3),
    (1, -1, -1, 2**31 - 1, 2**32 - 1),
    (300, 16383, 16384, -2147483648, 200),
])
def test_the_message_command_is_protobufs(fields):
    consumer_id, ledger_id, entry_id, partition, redelivery_count = fields
    message = api.CommandMessage(
        consumer_id=consumer_id,
        message_id=api.MessageIdData(
            ledgerId=ledger_id & U64, entryId=entry_id & U64, partition=partition
        ),
        redelivery_count=redelivery_count,
    )
    expected = T(type=T.MESSAGE, message=message).SerializeToString()
    assert encode_message_command(*fields) == expected
