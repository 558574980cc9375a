"""The web listener's life: its port setting, a taken port, stop and restart."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

import pytest

from pulsarlab import Broker
from pulsarlab.broker.errors import InvalidArgument


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tenants(url: str) -> int:
    with urllib.request.urlopen(url + "/admin/v2/tenants", timeout=30) as resp:
        return resp.status


def test_web_service_port_is_honoured_and_freed_on_stop():
    port = _free_port()
    broker = Broker(storage="memory", web_service_port=port)
    with pytest.raises(RuntimeError, match="not running"):
        _ = broker.web_url
    broker.start()
    assert broker.web_url == f"http://127.0.0.1:{port}"
    assert _tenants(broker.web_url) == 200
    broker.stop()
    with pytest.raises(urllib.error.URLError):
        _tenants(f"http://127.0.0.1:{port}")
    broker.start()  # the same broker serves again after a restart
    try:
        assert _tenants(broker.web_url) == 200
    finally:
        broker.stop()


def test_a_taken_port_is_a_one_line_start_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        broker = Broker(storage="memory", web_service_port=port)
        with pytest.raises(OSError, match=f"cannot serve the admin REST API on 127.0.0.1:{port}"):
            broker.start()
        broker.stop()


def test_a_bad_port_setting_is_refused():
    with pytest.raises(InvalidArgument, match=r"web_service_port must be 0\.\.65535"):
        Broker(storage="memory", web_service_port=70000)
