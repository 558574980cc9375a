"""The hand-laid SEND_RECEIPT and MESSAGE commands (and MESSAGE frames) are byte for byte
protobuf's."""

import pytest

from pulsarlab.broker.actions import DeliveredEntry
from pulsarlab.broker.entry import (
    PREFIX_SIZE,
    MessageMetadata,
    encode_entry,
    encode_legacy_entry,
    pulsar_parts,
)
from pulsarlab.broker.format.metadata import from_pulsar
from pulsarlab.broker.pulsar_protocol import FrameDecoder
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.pulsar_protocol.framing import encode_command, encode_payload_frame
from pulsarlab.broker.pulsar_protocol.hot_commands import (
    encode_message_command,
    encode_message_frames,
    encode_send_receipt,
    encode_send_receipts,
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


@pytest.mark.parametrize(("producer_id", "partition", "receipts"), [
    (1, -1, [(0, 0, 0), (1, 0, 1), (127, 0, 127), (128, 0, 128)]),
    (2**64 - 1, 0, [(2**40, 5, 2**63 + 5), (-1, -1, -1), (16384, 6, 0)]),  # ledger changes
    (300, 2**31 - 1, [(5, 9, 3)]),
    (3, -2147483648, [(7, 1, 2), (8, 1, 3), (9, 2, 0), (10, 2, 1)]),
    (0, 4, []),
])
def test_a_run_of_receipts_is_each_receipt(producer_id, partition, receipts):
    frames = encode_send_receipts(producer_id, partition, receipts)
    assert frames == [
        encode_send_receipt(producer_id, sequence_id, ledger_id, entry_id, partition)
        for sequence_id, ledger_id, entry_id in receipts
    ]
    assert frames == [_by_protobuf(producer_id, *receipt, partition, None) for receipt in receipts]


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


def _stored(payload: bytes = b"x" * 100) -> bytes:
    raw = api.MessageMetadata(producer_name="p", sequence_id=4, publish_time=77).SerializeToString()
    return encode_entry(from_pulsar(raw), payload)


def _one_by_one(consumer_id, entry):
    """The MESSAGE frame built the plain way: protobuf's command (pinned above to the
    hand-laid one), the stored parts, the checksum computed over them."""
    (ledger_id, entry_id), partition, redelivery_count, data, _ = entry
    return encode_payload_frame(
        encode_message_command(consumer_id, ledger_id, entry_id, partition, redelivery_count),
        *pulsar_parts(data),
    )


@pytest.mark.parametrize("consumer_id", [0, 5, 300, 2**64 - 1])
def test_message_frames_are_the_plain_frames_of_a_delivery(consumer_id):
    entries = [
        DeliveredEntry((3, 0), -1, 0, _stored(), None),
        DeliveredEntry((3, 127), -1, 1, _stored(b""), None),
        DeliveredEntry((3, 128), -1, 200, _stored(b"y" * 5000), None),
        DeliveredEntry((3, 129), -1, 200, _stored(), None),  # the same shape again
        DeliveredEntry((3, 16383), -1, 0, _stored(), None),
        DeliveredEntry((3, 16384), -1, 0, _stored(), None),
        DeliveredEntry((3, 2**21 - 1), -1, 0, _stored(), None),
        DeliveredEntry((3, 2**21), -1, 0, _stored(), None),
        DeliveredEntry((2**40, 2**33), 0, 0, _stored(), None),  # another ledger
        DeliveredEntry((2**40, 2**33 + 1), 7, 2**32 - 1, _stored(), None),
        DeliveredEntry((-1, -1), -2147483648, 0, _stored(), None),
    ]
    frames = encode_message_frames(consumer_id, entries, lambda e: pytest.fail(str(e)))
    assert frames == [_one_by_one(consumer_id, e) for e in entries]
    decoded = FrameDecoder(1 << 20).feed(b"".join(frames))
    assert [f.checksum_ok for f in decoded] == [True] * len(entries)
    assert [f.command.message.message_id.entryId for f in decoded] == [
        e.position[1] & U64 for e in entries
    ]


def test_message_frames_leave_what_is_not_stored_as_sent_to_the_fallback():
    good = DeliveredEntry((1, 1), -1, 0, _stored(), None)
    data = _stored()
    others = [
        DeliveredEntry((1, 2), -1, 0, data, 0b101),  # an ack set
        DeliveredEntry((1, 3), -1, 0, encode_legacy_entry(MessageMetadata(), b"v"), None),
        DeliveredEntry((1, 4), -1, 0, data[:PREFIX_SIZE + 3], None),  # metadata cut short
        DeliveredEntry((1, 5), -1, 0, data[:5], None),  # shorter than the prefix
    ]
    frames = encode_message_frames(
        9, [good, *others, good], lambda e: f"fallback {e.position[1]}".encode()
    )
    assert frames[1:-1] == [f"fallback {e.position[1]}".encode() for e in others]
    assert frames[0] == frames[-1] == _one_by_one(9, good)
