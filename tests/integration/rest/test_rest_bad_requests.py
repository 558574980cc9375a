"""Requests that once got a 500 or a reset (issue 23, item 8) get a 4xx with a reason, and
the broker goes on serving."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import pytest

from pulsarlab.broker.web.server import MAX_BODY_SIZE

from .conftest import Rest

TOPIC = "/admin/v2/persistent/public/default/bad-requests"
SUB = f"{TOPIC}/subscription/s"


@pytest.fixture(scope="module", autouse=True)
def _subscription(rest: Rest) -> None:
    assert rest.put(TOPIC).status in (204, 409)
    assert rest.put(SUB, {"ledgerId": -1, "entryId": -1}).status in (204, 409)


def test_deeply_nested_json_is_a_400(rest: Rest) -> None:
    answer = rest.call("POST", f"{SUB}/resetcursor", raw=b"[" * 100_000 + b"]" * 100_000)
    assert (answer.status, answer.reason) == (400, "the request body is JSON nested too deeply")


@pytest.mark.parametrize("count, status", [("-1", 412), (str(2**64), 400), (str(2**63), 400)])
def test_a_skip_count_out_of_range_is_a_4xx_with_a_reason(rest: Rest, count: str,
                                                           status: int) -> None:
    answer = rest.post(f"{SUB}/skip/{count}")
    assert answer.status == status
    assert count in answer.reason or "must be >= 0" in answer.reason
    assert rest.post(f"{SUB}/skip/1").status == 204  # and the resource still works


def test_a_body_over_the_limit_is_a_413_with_a_reason_before_it_is_read(rest: Rest) -> None:
    parts = urlsplit(rest.base_url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        # Only the headers are sent: the broker answers without waiting for the body.
        conn.putrequest("POST", f"{SUB}/resetcursor")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(MAX_BODY_SIZE + 1))
        conn.endheaders()
        answer = conn.getresponse()
        assert answer.status == 413
        assert json.loads(answer.read())["reason"] == (
            f"the request body of {MAX_BODY_SIZE + 1} bytes exceeds the limit of "
            f"{MAX_BODY_SIZE} bytes"
        )
    finally:
        conn.close()
    assert rest.get(f"{TOPIC}/lastMessageId").status == 200
