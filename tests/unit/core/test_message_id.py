"""R-MSG: MessageId ordering, string form and serialisation."""

import pytest

from pulsarlab.broker import MessageId


def test_orders_by_ledger_entry_partition_batch():
    ids = [
        MessageId(0, 5, 10, 2),
        MessageId(0, 5, 10, -1),
        MessageId(0, 4, 99, -1),
        MessageId(0, 5, 9, 0),
        MessageId(1, 5, 10, -1),
    ]
    assert sorted(ids) == [
        MessageId(0, 4, 99, -1),
        MessageId(0, 5, 9, 0),
        MessageId(0, 5, 10, -1),
        MessageId(0, 5, 10, 2),
        MessageId(1, 5, 10, -1),
    ]


def test_non_batched_sorts_before_batched_of_same_entry():
    assert MessageId(-1, 3, 7, -1) < MessageId(-1, 3, 7, 0)


def test_string_form_is_pulsar_python_style():
    assert str(MessageId(2, 12, 34, 5)) == "(12,34,2,5)"


def test_serialize_round_trip():
    original = MessageId(3, 123456789012, 42, 7, 10)
    copy = MessageId.deserialize(original.serialize())
    assert copy == original
    assert copy.batch_size() == 10
    assert copy.partition() == 3 and copy.ledger_id() == 123456789012


def test_earliest_and_latest_bound_everything():
    mid = MessageId(0, 1, 1)
    assert MessageId.earliest < mid < MessageId.latest


def test_bad_serialized_bytes_is_clear_error():
    with pytest.raises(ValueError, match="28 bytes"):
        MessageId.deserialize(b"abc")


def test_wrong_type_argument_is_value_error_like_pulsar_client():
    with pytest.raises(ValueError, match="ledger_id is expected to be of type 'int'"):
        MessageId(0, "1", 2)  # type: ignore[arg-type]
