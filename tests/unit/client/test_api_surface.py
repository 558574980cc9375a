"""The official names: enums, exceptions, argument checks, policies, top-level exports."""

from __future__ import annotations

import pytest

import pulsarlab
from pulsarlab.broker.client import (
    BatchingType,
    Client,
    CompressionType,
    ConsumerBatchReceivePolicy,
    ConsumerDeadLetterPolicy,
    ConsumerKeySharedPolicy,
    ConsumerType,
    InitialPosition,
    KeySharedMode,
    Message,
    MessageId,
    PartitionsRoutingMode,
    Result,
)
from pulsarlab.broker.client import exceptions as exc
from pulsarlab.broker.client.checks import check_type, check_type_or_none
from pulsarlab.broker.client.connection import parse_service_url


def test_enum_member_names():
    assert [m.name for m in ConsumerType] == ["Exclusive", "Shared", "Failover", "KeyShared"]
    assert [m.name for m in InitialPosition] == ["Latest", "Earliest"]
    assert [m.name for m in KeySharedMode] == ["AutoSplit", "Sticky"]
    assert [m.name for m in PartitionsRoutingMode] == [
        "UseSinglePartition", "RoundRobinDistribution", "CustomPartition"
    ]
    assert [m.name for m in BatchingType] == ["Default", "KeyBased"]
    assert [m.name for m in CompressionType] == ["NONE", "LZ4", "ZLib", "ZSTD", "SNAPPY"]
    assert Result.Ok.value == 0 and Result.Interrupted.value == 45


def test_key_shared_goes_on_the_wire_as_key_shared():
    assert ConsumerType.KeyShared.wire_name == "Key_Shared"
    assert ConsumerType.Failover.wire_name == "Failover"


OFFICIAL_EXCEPTIONS = [
    "Timeout", "AlreadyClosed", "ConsumerBusy", "NotConnected", "TopicNotFound",
    "SubscriptionNotFound", "CumulativeAcknowledgementNotAllowedError", "ProducerQueueIsFull",
    "MessageTooBig", "InvalidConfiguration", "ConsumerAssignError", "TopicTerminated",
    "Interrupted", "ProducerBusy", "NotAllowedError", "InvalidTopicName", "UnknownError",
    "ConnectError", "LookupError", "BrokerPersistenceError", "InvalidMessage",
]


@pytest.mark.parametrize("name", OFFICIAL_EXCEPTIONS)
def test_exception_names(name):
    cls = getattr(exc, name)
    assert issubclass(cls, exc.PulsarException)
    assert cls.result is Result[name]
    assert getattr(pulsarlab.broker.client, name) is cls


def test_every_result_but_ok_has_an_exception():
    for result in Result:
        if result is not Result.Ok:
            assert type(exc.exception_for_result(result)).__name__ == result.name


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        ("ConsumerBusy", exc.ConsumerBusy),
        ("ConsumerAssignError", exc.ConsumerAssignError),
        ("CumulativeAcknowledgementNotAllowedError", exc.CumulativeAcknowledgementNotAllowedError),
        ("InvalidTopicName", exc.InvalidTopicName),
        ("TopicNotFound", exc.TopicNotFound),
        ("SubscriptionNotFound", exc.SubscriptionNotFound),
        ("MessageTooBig", exc.MessageTooBig),
        ("NotAllowedError", exc.NotAllowedError),
        ("InvalidConfiguration", exc.InvalidConfiguration),
        ("PersistenceError", exc.BrokerPersistenceError),
        ("ConsumerNotFound", exc.ConsumerNotFound),
        ("ProducerNotFound", exc.ProducerNotInitialized),
        ("TopicAlreadyExists", exc.NotAllowedError),
        ("NoSuchCode", exc.UnknownError),
        ("Ok", exc.UnknownError),
    ],
)
def test_broker_codes_map_to_exceptions(code, cls):
    error = exc.exception_for(code, "why")
    assert type(error) is cls and str(error) == "why"


def test_result_of():
    assert exc.result_of(exc.Timeout()) is Result.Timeout
    assert exc.result_of(RuntimeError()) is Result.UnknownError


def test_type_check_messages_match_the_official_client():
    with pytest.raises(ValueError) as info:
        check_type(str, 3, "topic")
    assert str(info.value) == "Argument topic is expected to be of type 'str' and not 'int'"
    with pytest.raises(ValueError, match="either None or of type 'str'"):
        check_type_or_none(str, 3, "producer_name")
    check_type_or_none(str, None, "producer_name")


def test_client_argument_checks_happen_before_any_connection():
    with pytest.raises(ValueError, match="Argument service_url is expected"):
        Client(6650)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Argument operation_timeout_seconds"):
        Client("zmq://127.0.0.1:1", operation_timeout_seconds="30")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Logger"):
        Client("zmq://127.0.0.1:1", logger="nope")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("url", "endpoint"),
    [("zmq://127.0.0.1:6650", "tcp://127.0.0.1:6650"), ("tcp://localhost:1/", "tcp://localhost:1"),
     ("ipc:///tmp/x", "ipc:///tmp/x")],
)
def test_service_urls(url, endpoint):
    assert parse_service_url(url) == endpoint


@pytest.mark.parametrize("url", ["pulsar://localhost:6650", "zmq://localhost", "http://x:1"])
def test_bad_service_urls(url):
    with pytest.raises(exc.InvalidUrl):
        parse_service_url(url)


# -- policies ---------------------------------------------------------------------------


def test_key_shared_policy_defaults():
    policy = ConsumerKeySharedPolicy()
    assert policy.key_shared_mode is KeySharedMode.AutoSplit
    assert policy.allow_out_of_order_delivery is False
    assert policy.sticky_ranges == []
    assert policy.policy() is policy


def test_sticky_needs_ranges():
    with pytest.raises(ValueError, match="must also provide sticky_ranges"):
        ConsumerKeySharedPolicy(KeySharedMode.Sticky)
    policy = ConsumerKeySharedPolicy(KeySharedMode.Sticky, sticky_ranges=[(0, 30000),
                                                                          (30001, 65535)])
    assert policy.sticky_ranges == [(0, 30000), (30001, 65535)]


@pytest.mark.parametrize(
    ("ranges", "message"),
    [
        ([], "must not be empty"),
        ([(10, 5)], "end must >= range start"),
        ([(0, 65536)], r"Ranges must be \[0, 65535\]"),
        ([(-1, 3)], r"Ranges must be \[0, 65535\]"),
        ([(0, 10), (10, 20)], "overlap between"),  # shared endpoints overlap
        ([(0, 100), (20, 30)], "overlap between"),
        ([(0, 1, 2)], "pair of ints"),
    ],
)
def test_sticky_range_validation(ranges, message):
    with pytest.raises(ValueError, match=message):
        ConsumerKeySharedPolicy(KeySharedMode.Sticky, sticky_ranges=ranges)


def test_dead_letter_policy():
    policy = ConsumerDeadLetterPolicy(3, "dlq", "init")
    assert (policy.max_redeliver_count, policy.dead_letter_topic,
            policy.initial_subscription_name) == (3, "dlq", "init")
    assert ConsumerDeadLetterPolicy(1).dead_letter_topic is None
    for bad in (0, -1, None):
        with pytest.raises(ValueError, match="greater than 0"):
            ConsumerDeadLetterPolicy(bad)  # type: ignore[arg-type]


def test_batch_receive_policy():
    policy = ConsumerBatchReceivePolicy(10, -1, 50)
    assert (policy.max_num_message, policy.max_num_bytes, policy.timeout_ms) == (10, -1, 50)
    with pytest.raises(ValueError):
        ConsumerBatchReceivePolicy(0, 0, 0)


# -- messages and exports ---------------------------------------------------------------


def test_message_accessors_and_defaults():
    m = Message(b"data", message_id=MessageId(2, 1, 3, 0, 5), topic="persistent://p/d/t")
    assert m.data() == b"data" and m.value() == b"data"
    assert m.partition_key() == "" and m.ordering_key() == ""
    assert m.properties() == {} and m.event_timestamp() == 0
    assert m.message_id().batch_size() == 5 and m.message_id().partition() == 2
    assert m.topic_name() == "persistent://p/d/t"
    assert m.redelivery_count() == 0 and m.schema_version() == "" and not m.has_null_value()
    m2 = Message(b"", ordering_key=b"ok", partition_key="pk", null_value=True)
    assert m2.ordering_key() == "ok" and m2.partition_key() == "pk"
    assert m2.has_null_value() and m2.value() is None


def test_top_level_exports():
    for name in ("Client", "ConsumerType", "InitialPosition", "KeySharedMode", "Result",
                 "ConsumerKeySharedPolicy", "ConsumerDeadLetterPolicy", "CompressionType",
                 "PartitionsRoutingMode", "BatchingType", "Timeout", "AlreadyClosed",
                 "CumulativeAcknowledgementNotAllowedError", "MessageId", "Broker"):
        assert getattr(pulsarlab, name) is not None
    assert pulsarlab.Client is Client
    with pytest.raises(AttributeError):
        pulsarlab.NoSuchThing  # noqa: B018
