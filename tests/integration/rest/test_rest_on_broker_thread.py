"""The admin REST API is served by the broker thread itself (no web thread, no hand-off
between threads per call), and stops and starts with it."""

from __future__ import annotations

import threading
import urllib.request

import pytest

from pulsarlab import Broker
from pulsarlab.broker.web.pump import PumpedLoop


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.read()


@pytest.mark.skipif(not PumpedLoop.supported(), reason="no pollable selector")
def test_requests_are_handled_on_the_broker_thread():
    with Broker(storage="memory") as broker:
        handled_on = []
        original = broker.admin.call

        def call(op, args):
            handled_on.append(threading.current_thread().name)
            return original(op, args)

        broker.admin.call = call
        assert b'"public"' in _get(broker.web_url + "/admin/v2/tenants")
        assert handled_on == ["pulsarlab-broker"]
        assert "pulsarlab-web" not in {t.name for t in threading.enumerate()}
        # A request awaiting two broker calls in turn: the second, submitted while the
        # broker thread pumps the REST loop, runs in that same loop turn (no wake-up).
        broker.call(lambda service: service.create_partitioned_topic("pt", 2))
        handled_on.clear()
        answer = _get(broker.web_url + "/admin/v2/persistent/public/default/partitioned")
        assert answer == b'["persistent://public/default/pt"]'
        assert handled_on == ["pulsarlab-broker"] * 2
    assert "pulsarlab-web" not in {t.name for t in threading.enumerate()}
