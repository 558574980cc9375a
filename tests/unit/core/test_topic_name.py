"""R-TOPIC: topic names, short forms, partitions and clear errors for bad names."""

import pytest

from pulsarlab.broker import TopicName
from pulsarlab.broker.errors import InvalidTopicName


def test_short_name_is_public_default_persistent():
    assert str(TopicName.get("orders")) == "persistent://public/default/orders"


def test_tenant_namespace_short_form():
    assert str(TopicName.get("acme/sales/orders")) == "persistent://acme/sales/orders"


def test_full_non_persistent_name():
    name = TopicName.get("non-persistent://acme/sales/ticks")
    assert not name.persistent
    assert name.namespace == "acme/sales"


def test_partition_names():
    parent = TopicName.get("orders")
    p3 = parent.partition(3)
    assert str(p3) == "persistent://public/default/orders-partition-3"
    assert p3.partition_index == 3
    assert p3.partitioned_topic_name == parent
    assert parent.partition_index == -1


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "empty"),
        (" t", "spaces"),
        ("http://a/b/c", "domain"),
        ("persistent://a/b", "tenant/namespace/topic"),
        ("a/b", "short topic name"),
        ("persistent://a b/ns/t", "may only contain"),
        ("persistent:///ns/t", "empty tenant"),
        ("persistent://t/ns/", "empty topic"),
        ("bad\x00name", "control"),
        ("bad topic!", "topic 'bad topic!' may only contain"),
        ("persistent://public/default/a%20b", "may only contain"),
        ("t\u00e9/ns/t", "tenant 't\u00e9' may only contain"),  # Java's \w is ASCII
    ],
)
def test_bad_names_are_rejected_with_reason(name, message):
    with pytest.raises(InvalidTopicName, match=message):
        TopicName.get(name)


def test_non_string_name():
    with pytest.raises(InvalidTopicName, match="must be a string"):
        TopicName.get(42)  # type: ignore[arg-type]


def test_system_topics_are_marked():
    assert TopicName.get("__change_events").is_system_topic
    assert not TopicName.get("orders").is_system_topic


@pytest.mark.parametrize("name", ["a-b_c=d:e.f", "orders-partition-3", "tenant-1/ns.2/t:x=y"])
def test_named_entity_characters_are_accepted_in_every_part(name):
    assert TopicName.get(name).local_name == name.rsplit("/", 1)[-1]


def test_a_bad_name_fails_with_one_line():
    with pytest.raises(InvalidTopicName) as caught:
        TopicName.get("bad topic!")
    assert "\n" not in str(caught.value)
