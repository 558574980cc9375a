"""GET_TOPICS_OF_NAMESPACE's ``topics_pattern`` is matched in bounded time (RE2), like
Pulsar's RE2J ``TopicsPattern``: no pattern can stall the broker thread."""

from __future__ import annotations

import pytest

from pulsarlab.broker.errors import InvalidArgument
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.topics_pattern import TopicsPattern

from .support import Harness, T, command

_LONG = "a" * 4000  # Python's re needs ~2^4000 steps for (a+)+b against it


def _topics(h: Harness, s, pattern: str, request_id: int = 1) -> api.BaseCommand:
    (reply,) = h.run(s, command(T.GET_TOPICS_OF_NAMESPACE, "getTopicsOfNamespace",
                                request_id=request_id, namespace="public/default",
                                topics_pattern=pattern))
    return reply


@pytest.mark.timeout(60)  # today's backtracking regex never returns: the timeout fails it
def test_a_catastrophic_pattern_answers_at_once_and_the_session_keeps_serving() -> None:
    h = Harness()
    s = h.session()
    h.connect(s)
    for name in (_LONG, "b", "ab"):
        h.service.create_topic(name)
    reply = _topics(h, s, "persistent://public/default/(a+)+b")
    response = reply.getTopicsOfNamespaceResponse
    assert response.filtered
    assert list(response.topics) == ["persistent://public/default/ab"]
    (pong,) = h.run(s, command(T.PING, "ping"))
    assert pong.type == T.PONG


def test_a_pattern_re2_cannot_run_gets_a_clear_error_not_a_fallback() -> None:
    h = Harness()
    s = h.session()
    h.connect(s)
    reply = _topics(h, s, r"persistent://public/default/(a)\1")
    assert reply.type == T.ERROR
    assert reply.error.request_id == 1
    assert "RE2" in reply.error.message and "back-references" in reply.error.message
    assert not s.closed
    with pytest.raises(InvalidArgument, match="look-around"):
        TopicsPattern("public/default/(?=x)y")


def test_patterns_are_full_matches_without_the_domain_like_pulsar() -> None:
    pattern = TopicsPattern("persistent://public/default/orders-.*")
    names = ["persistent://public/default/orders-1", "non-persistent://public/default/orders-2",
             "persistent://public/default/x-orders-3", "persistent://other/default/orders-4"]
    assert pattern.filter(names) == names[:2]
    assert not TopicsPattern("public/default/orders").matches("public/default/orders-1")


def test_a_pattern_longer_than_the_limit_is_left_to_the_client_as_pulsar_does() -> None:
    h = Harness(subscription_pattern_max_length=20)
    s = h.session()
    h.connect(s)
    for name in ("orders-1", "payments"):
        h.service.create_topic(name)
    response = _topics(h, s, "persistent://public/default/orders-.*").getTopicsOfNamespaceResponse
    assert not response.filtered
    assert sorted(response.topics) == ["persistent://public/default/orders-1",
                                       "persistent://public/default/payments"]
    off = Harness(enable_broker_side_subscription_pattern_evaluation=False)
    s = off.session()
    off.connect(s)
    off.service.create_topic("payments")
    response = _topics(off, s, "persistent://public/default/o.*").getTopicsOfNamespaceResponse
    assert not response.filtered and list(response.topics) == [
        "persistent://public/default/payments"]
