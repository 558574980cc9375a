"""The namespace ``encryption_required`` policy: unencrypted producers and messages are
refused with Pulsar's MetadataError, nothing is stored."""

import pytest

from pulsarlab.broker import MessageMetadata
from pulsarlab.broker.errors import InvalidArgument, MetadataError

T = "persistent://public/default/secret"


def test_an_unencrypted_producer_is_refused(harness):
    h = harness
    h.service.set_namespace_policy("public/default", "encryption_required", True)
    with pytest.raises(MetadataError, match=f"Encryption is required in {T}"):
        h.service.create_producer(T, "plain")
    assert h.service.topics[T].producers == {}
    assert h.service.create_producer(T, "sealed", encrypted=True).producer_name == "sealed"


def test_an_unencrypted_message_is_refused_and_nothing_is_stored(harness):
    h = harness
    producer = h.service.create_producer(T, "p", encrypted=True)
    h.service.set_namespace_policy("public/default", "encryption_required", True)
    with pytest.raises(MetadataError, match="Messages must be encrypted"):
        h.service.send(producer.producer_id, MessageMetadata(sequence_id=1), b"clear")
    position = h.service.send(
        producer.producer_id, MessageMetadata(sequence_id=2), b"sealed", encrypted=True
    )
    h.commit()
    assert h.service.topics[T].ledger.number_of_entries == 1 and position is not None


def test_switching_the_policy_off_lets_everyone_in_again(harness):
    h = harness
    h.service.set_namespace_policy("public/default", "encryption_required", True)
    h.service.set_namespace_policy("public/default", "encryption_required", False)
    assert h.publish(T, 1)


def test_a_non_boolean_policy_value_is_a_clear_error(harness):
    with pytest.raises(InvalidArgument, match="encryption_required must be a bool"):
        harness.service.set_namespace_policy("public/default", "encryption_required", "yes")
