"""The message browser's paging and filters, over admin answers in Pulsar's shape."""

from __future__ import annotations

import json

import pytest

from pulsarlab.browse import MessageFilter, browse_messages, parse_time, readable_time

T = "persistent://public/default/orders"
BASE = 1718097160000


def _msg(i: int, key: str, value: bytes, props=None) -> dict:
    return {"topic": T, "messageId": f"12:{i}:-1", "payload": value,
            "metadata": {"partition_key": key, "properties": props or {},
                         "publish_time": BASE + i * 1000, "event_time": 0,
                         "producer_name": "p"}}


class RecordedTopics:
    """``admin.topics`` answering examine-message and peek from a list (read-only)."""

    def __init__(self, messages):
        self.messages = messages
        self.calls = []

    def examine_message(self, topic, initial_position, message_position):
        self.calls.append(("examine", initial_position, message_position))
        if not self.messages:
            raise RuntimeError("topic has no messages to examine")
        ordered = self.messages if initial_position == "earliest" else self.messages[::-1]
        return ordered[min(message_position, len(ordered)) - 1]  # clamps, as Pulsar does

    def peek_messages(self, topic, subscription, count):
        self.calls.append(("peek", subscription, count))
        return [dict(m, redeliveryCount=2) for m in self.messages[:count]]


def orders():
    return RecordedTopics([
        _msg(0, "a", json.dumps({"id": 1, "customer": {"tier": "gold"}}).encode()),
        _msg(1, "b", b"plain text", {"source": "web"}),
        _msg(2, "a", json.dumps({"id": 3, "customer": {"tier": "basic"}}).encode(),
             {"source": "web"}),
        _msg(3, "c", json.dumps([10, 20]).encode()),
    ])


def test_pages_from_the_earliest_and_the_latest():
    topics = orders()
    rows, read = browse_messages(topics, [T], count=2)
    assert [r["message_id"] for r in rows] == ["(12,0,-1,-1)", "(12,1,-1,-1)"] and read == 2
    rows, _ = browse_messages(topics, [T], count=2, page=1)
    assert [r["key"] for r in rows] == ["a", "c"]
    rows, read = browse_messages(topics, [T], count=10)
    assert len(rows) == 4 and read == 4  # the repeated last message ends the scan
    rows, _ = browse_messages(topics, [T], start="latest", count=1)
    assert rows[0]["value"] == [10, 20]  # JSON decoded
    assert all(c[0] == "examine" for c in topics.calls)  # read-only: never a subscription


def test_filters():
    def keys(**kw):
        return [r["message_id"] for r in browse_messages(orders(), [T],
                                                         keep=MessageFilter(**kw))[0]]
    assert keys(key="a") == ["(12,0,-1,-1)", "(12,2,-1,-1)"]
    assert keys(properties=(("source", "web"),)) == ["(12,1,-1,-1)", "(12,2,-1,-1)"]
    assert keys(contains="plain") == ["(12,1,-1,-1)"]
    assert keys(json_path="customer.tier=gold") == ["(12,0,-1,-1)"]
    assert keys(json_path="id=3") == ["(12,2,-1,-1)"]
    assert keys(json_path="1=20") == ["(12,3,-1,-1)"]
    assert keys(json_path="customer") == ["(12,0,-1,-1)", "(12,2,-1,-1)"]
    assert keys(since_ms=BASE + 2000, until_ms=BASE + 2500) == ["(12,2,-1,-1)"]


def test_rows_have_readable_times_and_subscription_redeliveries():
    rows, _ = browse_messages(orders(), [T], subscription="s", count=1)
    assert rows[0]["publish_time"] == "2024-06-11T09:12:40.000Z"
    assert rows[0]["event_time"] is None and rows[0]["redelivery_count"] == 2


def test_times_and_bad_input():
    assert parse_time("2024-06-11T09:12:40Z") == BASE
    assert parse_time("2024-06-11T09:12:40") == BASE and parse_time(str(BASE)) == BASE
    assert readable_time(BASE + 518) == "2024-06-11T09:12:40.518Z"
    with pytest.raises(ValueError, match="not a time"):
        parse_time("yesterday")
    with pytest.raises(ValueError, match="'earliest' or 'latest'"):
        browse_messages(orders(), [T], start="middle")
    with pytest.raises(RuntimeError):
        browse_messages(RecordedTopics([]), [T])


def test_browser_widget_pages_and_filters():
    from pulsarlab.widgets.message_browser import MessageBrowser

    browser = MessageBrowser(orders(), [T], count=2)
    assert [r["key"] for r in browser.rows] == ["a", "b"] and browser.previous.disabled
    browser.next.click()
    assert browser.page == 1 and [r["key"] for r in browser.rows] == ["a", "c"]
    browser.key.value = "a"  # a new filter starts again at page 0
    assert browser.page == 0 and [r["message_id"] for r in browser.rows] == [
        "(12,0,-1,-1)", "(12,2,-1,-1)"]
    browser.json_path.value = "customer.tier=basic"
    assert [r["message_id"] for r in browser.rows] == ["(12,2,-1,-1)"] and browser.next.disabled
    assert "&quot;tier&quot;: &quot;basic&quot;" in browser.table_html()
    browser.newest.value = True
    assert browser.status.value.startswith("page 0: 1 messages")
    failing = MessageBrowser(RecordedTopics([]), [T])
    assert "no messages to examine" in failing.status.value and failing.rows == []
