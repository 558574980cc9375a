"""Planning a ``pulsar://`` cluster without ``admin.url``: the choice of path, what the binary
protocol's answers become, and its one-line errors (pure: fake clients, no sockets, no Spark).
The same path against real brokers: test_cluster_clients.py (pulsar-lite) and
test_cluster_source.py (a pulsarlab broker's pulsar:// listener)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

import pulsarlab.broker.client as client_module
from pulsarlab.broker.client.exceptions import Timeout, TopicNotFound, UnknownError
from pulsarlab.broker.message_id import MessageId
from pulsarlab.cluster.rest import RestAdmin
from pulsarlab.spark import binary_lookup
from pulsarlab.spark.binary_lookup import BinaryLookup
from pulsarlab.spark.metadata import BrokerMetadata
from pulsarlab.spark.options import ClientSecurity, PulsarSparkError, parse_source_options
from pulsarlab.spark.positions import Position, advance, count_entries

NS = "persistent://public/default"


def _meta(url: str = "pulsar://b:6650", admin_url: str | None = None) -> BrokerMetadata:
    return BrokerMetadata(url, 2000, ClientSecurity(), admin_url)


def _opts(**options: str) -> Any:
    return parse_source_options({"service.url": "pulsar://b:6650", **options}, streaming=True)


def test_the_path_planning_takes() -> None:
    assert _meta().binary
    assert _meta("pulsar+ssl://b:6651").binary
    assert not _meta(admin_url="http://b:8080").binary  # admin.url is preferred when given
    assert not _meta("zmq://b:6650", "http://b:8080").binary
    assert isinstance(_meta(admin_url="http://b:8080")._new_admin(), RestAdmin)


class FakeLookup:
    """What BinaryLookup answers, scripted: partitions, listings, last ids or errors."""

    def __init__(self, *args: Any) -> None:
        self.partition_counts = {f"{NS}/parts": 2}
        self.listing = [f"{NS}/parts-partition-0", f"{NS}/parts-partition-1", f"{NS}/one",
                        "non-persistent://public/default/one-np", f"{NS}/other"]
        self.last: dict[str, Any] = {
            f"{NS}/parts-partition-0": MessageId(0, 7, 4, -1),
            f"{NS}/parts-partition-1": None,  # empty
            f"{NS}/one": MessageId(-1, 3, 9, 2),  # a batch index: planning takes the entry
            f"{NS}/gone": TopicNotFound("no such topic"),
            f"{NS}/slow": Timeout("operation timed out"),
        }
        self.kept: list[set[str]] = []
        self.closed = False

    def topics_of_namespace(self, namespace: str) -> list[str]:
        assert namespace == "public/default"
        return self.listing

    def partitions(self, topic: str) -> list[str]:
        n = self.partition_counts.get(topic, 0)
        return [f"{topic}-partition-{i}" for i in range(n)] if n else [topic]

    def last_message_id(self, topic: str) -> Any:
        value = self.last[topic]
        if isinstance(value, Exception):
            raise value
        return value

    def keep_only(self, topics: set[str]) -> None:
        self.kept.append(topics)

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def lookup(monkeypatch: pytest.MonkeyPatch) -> FakeLookup:
    fake = FakeLookup()
    monkeypatch.setattr(binary_lookup, "BinaryLookup", lambda *args: fake)
    return fake


def test_partitions_and_last_entries_over_the_binary_protocol(lookup: FakeLookup) -> None:
    meta = _meta()
    got = meta.snapshot(_opts(topics="parts,one"))
    assert list(got) == [f"{NS}/one", f"{NS}/parts-partition-0", f"{NS}/parts-partition-1"]
    one, p0, p1 = got.values()
    assert (one.index, one.exists, one.latest) == (-1, True, Position(3, 9, -1, -1))
    assert (p0.index, p0.latest) == (0, Position(7, 4, 0, -1))
    # no ledger list over the binary protocol: the current ledger up to the last entry
    assert p0.ledgers == ((7, 5),)
    assert (p1.exists, p1.latest, p1.ledgers) == (True, None, ())
    assert lookup.kept == [set(got)]  # planning readers of other partitions are closed
    meta.close()
    assert lookup.closed


def test_topics_pattern_lists_the_namespace(lookup: FakeLookup) -> None:
    got = _meta().snapshot(_opts(topicsPattern="(one|parts)"))
    assert list(got) == [f"{NS}/one", f"{NS}/parts-partition-0", f"{NS}/parts-partition-1"]


def test_topic_not_found_is_a_missing_partition(lookup: FakeLookup) -> None:
    info = _meta().snapshot(_opts(topic="gone"))[f"{NS}/gone"]
    assert (info.exists, info.latest) == (False, None)


def test_no_answer_is_one_line_naming_both_options(lookup: FakeLookup) -> None:
    meta = _meta()
    with pytest.raises(PulsarSparkError) as failed:
        meta.snapshot(_opts(topic="slow"))
    assert str(failed.value) == (
        f"no answer from the Pulsar broker at pulsar://b:6650 within 2 s while reading the last "
        f"message id of {NS}/slow over the binary protocol (no admin.url): check option "
        "'service.url', or give the cluster's admin REST API with option 'admin.url'")
    assert lookup.closed  # the next snapshot connects again


def test_other_broker_errors_are_one_line(lookup: FakeLookup) -> None:
    lookup.last[f"{NS}/one"] = UnknownError("the broker\nsaid no")
    with pytest.raises(PulsarSparkError, match=f"^reading the last message id of {NS}/one: "
                                               "the broker said no$"):
        _meta().snapshot(_opts(topic="one"))


def test_admission_control_counts_the_current_ledger() -> None:
    """The documented degradation of maxOffsetsPerTrigger without a ledger list: exact
    within the current ledger; a range starting in an older ledger counts only the current
    one, and a limited micro-batch then reads the older ledgers' rest in full."""
    ledgers = ((7, 10),)  # what the binary path reports for a last entry 7:9
    latest = Position(7, 9, 0, -1)
    start = Position(7, 2, 0, -1)
    assert count_entries(start, latest, ledgers) == 7
    assert advance(start, 3, latest, ledgers) == Position(7, 5, 0, -1)
    older = Position(5, 40, 0, -1)
    assert count_entries(older, latest, ledgers) == 10
    assert advance(older, 3, latest, ledgers) == Position(7, 2, 0, -1)
    assert advance(Position.earliest(0), 100, latest, ledgers) == latest


class FakeReader:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.closed = False

    def get_last_message_id(self) -> MessageId:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    def close(self) -> None:
        self.closed = True


class FakeClient:
    """pulsarlab's client as BinaryLookup uses it (arguments recorded)."""

    answers: ClassVar[dict[str, Any]] = {}

    def __init__(self, url: str, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.readers: dict[str, FakeReader] = {}
        self.created: list[tuple[str, dict[str, Any]]] = []

    def create_reader(self, topic: str, start: MessageId, **kwargs: Any) -> FakeReader:
        assert start == MessageId.latest
        self.created.append((topic, kwargs))
        self.readers[topic] = FakeReader(self.answers[topic])
        return self.readers[topic]

    def close(self) -> None:
        pass


def test_last_message_id_from_a_planning_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "Client", FakeClient)
    FakeClient.answers = {
        "data": MessageId(-1, 4, 11, 3),
        "empty-pulsar": MessageId(-1, 4, -1, -1),  # Pulsar: entry -1 for an empty topic
        "empty-lite": UnknownError("Topic has no messages"),  # pulsar-lite's answer
        "broken": UnknownError("something else"),
    }
    lookup = BinaryLookup("pulsar://b:6650", 3500, ClientSecurity(token="tok"))
    client = lookup.client
    assert client.kwargs["operation_timeout_seconds"] == 3
    assert client.kwargs["connection_timeout_ms"] == 3500
    assert client.kwargs["authentication"].token() == "tok"
    assert lookup.last_message_id("data") == MessageId(-1, 4, 11, 3)
    assert lookup.last_message_id("data") == MessageId(-1, 4, 11, 3)
    assert [t for t, _ in client.created] == ["data"]  # one planning reader per partition
    _, kwargs = client.created[0]
    assert kwargs["receiver_queue_size"] == 1
    assert kwargs["subscription_role_prefix"] == "spark-planner"
    assert lookup.last_message_id("empty-pulsar") is None
    assert lookup.last_message_id("empty-lite") is None
    with pytest.raises(UnknownError, match="something else"):
        lookup.last_message_id("broken")
    lookup.keep_only({"data"})
    assert client.readers["empty-pulsar"].closed and not client.readers["data"].closed
