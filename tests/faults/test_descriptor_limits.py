"""A broker with few file descriptors (RLIMIT_NOFILE 256) survives a 1000-partition topic,
a restart and a flood of idle HTTP connections, and keeps serving its connected client.

Before: every loaded topic kept its segment files open (1,024 descriptors for one
``PUT .../partitions`` of 1000), so the broker ran out and no client could connect, even
after a restart; a descriptor flood made Tornado log a traceback per accept attempt.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request

import pulsar

from .support import BrokerProcess, wait_until

_NOFILE = 256
_TOPIC = "persistent://public/default/wide"
_LAST = f"{_TOPIC}-partition-999"


def _call(web_url: str, method: str, path: str, body: object = None) -> int:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(web_url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0  # refused, reset or timed out: the broker cannot take the connection now


def _flood(host: str, port: int, count: int) -> list[socket.socket]:
    """Idle connections that never send a byte (some never get accepted)."""
    sockets = []
    for _ in range(count):
        try:
            sockets.append(socket.create_connection((host, port), timeout=1))
        except OSError:
            break  # the listen backlog is full
    return sockets


def _closed_by_broker(sock: socket.socket) -> bool:
    sock.settimeout(0)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def test_few_descriptors_many_partitions_a_restart_and_a_flood(tmp_path):
    # The HTTP connection cap (a quarter of the limit by default) would keep the flood
    # from running the broker out of descriptors; lifted, the flood gets there.
    settings = {"web_service_idle_timeout_ms": 3000, "max_http_server_connections": 1000}
    broker = BrokerProcess(tmp_path / "data", settings, nofile=_NOFILE).start()
    client = None
    try:
        web = broker.report["web_url"]
        assert _call(web, "PUT", "/admin/v2/persistent/public/default/wide/partitions",
                     1000) == 204
        client = pulsar.Client(broker.report["pulsar_url"], operation_timeout_seconds=30)
        consumer = client.subscribe(_LAST, "s",
                                    initial_position=pulsar.InitialPosition.Earliest)
        producer = client.create_producer(_LAST)
        producer.send(b"before the flood")
        assert consumer.receive(timeout_millis=30_000).data() == b"before the flood"

        host, port = web.removeprefix("http://").rsplit(":", 1)
        flood: list[socket.socket] = []

        def out_of_descriptors() -> bool:
            # Under load the broker accepts slowly and the listen backlog fills first: keep
            # adding idle connections (up to 400) until it has run out of descriptors.
            flood.extend(_flood(host, int(port), 400 - len(flood)))
            return "cannot accept connections: Too many open files" in broker.log_text()

        wait_until(out_of_descriptors, 60, "the flood to run the broker out of descriptors")
        # The connected client is served while new connections cannot be accepted.
        producer.send(b"during the flood")
        assert consumer.receive(timeout_millis=30_000).data() == b"during the flood"
        # Idle connections are closed after the timeout; the REST API answers again.
        wait_until(lambda: all(_closed_by_broker(s) for s in flood), 60,
                   "the broker to close every idle HTTP connection")
        for sock in flood:
            sock.close()
        wait_until(lambda: _call(web, "GET", "/admin/v2/clusters") == 200, 30,
                   "the REST API to answer after the flood")
        client.close()
        client = None
        assert broker.stop() == 0
        log = broker.log_text()
        assert "Traceback" not in log, log[-3000:]
        # The flood did run the broker out of descriptors: one line per interval said so.
        assert 1 <= log.count("cannot accept connections: Too many open files") <= 10, log
        assert len(log) < 100_000, f"{len(log)} bytes of log"

        broker = BrokerProcess(tmp_path / "data", settings, nofile=_NOFILE).start()
        client = pulsar.Client(broker.report["pulsar_url"], operation_timeout_seconds=30)
        again = client.subscribe(_LAST, "again",
                                 initial_position=pulsar.InitialPosition.Earliest)
        assert again.receive(timeout_millis=30_000).data() == b"before the flood"
        assert _call(broker.report["web_url"], "GET",
                     "/admin/v2/persistent/public/default/wide/partitions") == 200
    finally:
        if client is not None:
            client.close()
        broker.stop()
