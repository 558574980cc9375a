"""Fixtures of the differential conformance suite: real Apache Pulsar beside pulsarlab.

``line`` ("3.3" then "4.0"; package scope, so both are stopped when tests/conformance ends)
starts one real standalone broker of that release line (:mod:`.real_pulsar`: jars from Maven
Central, its own JVM) and one pulsarlab broker
with ``pulsar_version`` set to the same patch and the same settings; pytest orders the tests
so only one real JVM runs at a time. ``compare(scenario)`` runs a scenario written once
against both through the official ``pulsar-client`` and asserts that what a user observes is
the same. Without Java, Maven or a reachable Maven Central every test here is skipped with
one line naming what is missing; ``PULSARLAB_CONFORMANCE=0`` skips them on purpose.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

pulsar = pytest.importorskip("pulsar", reason="the official pulsar-client (dev extra) is needed")

from pulsarlab import Broker  # noqa: E402

from .real_pulsar import RealPulsar, Unavailable, assemble  # noqa: E402

WAIT_MS = 10_000  # bound for a message that must arrive (a real broker on a loaded machine)
QUIET_MS = 500  # how long "nothing more arrives" is checked for

# pulsarlab's settings matching real_pulsar.BROKER_SETTINGS (and its BrokerSettings defaults)
LAB_SETTINGS: dict[str, Any] = {
    "acknowledgment_at_batch_index_level_enabled": True,
    "key_shared_use_consistent_hashing": True,
    "subscription_key_shared_consistent_hashing_replica_points": 100,
    "active_consumer_failover_delay_ms": 1000,
    "delayed_delivery_tick_ms": 1000,
}

_UNAVAILABLE: dict[str, str] = {}  # line -> why it cannot run here ("" = it can); per session


def _why_unavailable(line: str) -> str:
    """Why real Pulsar ``line`` cannot run here ("" if it can); asked once per session."""
    if line not in _UNAVAILABLE:
        if os.environ.get("PULSARLAB_CONFORMANCE") == "0":
            _UNAVAILABLE[line] = "PULSARLAB_CONFORMANCE=0"
        else:
            try:
                assemble(line)  # cached after the first run; Maven otherwise
                _UNAVAILABLE[line] = ""
            except Unavailable as exc:
                _UNAVAILABLE[line] = str(exc)
    return _UNAVAILABLE[line]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the suite ``conformance``; leave out (one summary line, not one skip per test)
    the release lines that cannot run here."""
    here = os.path.dirname(__file__)
    keep, dropped = [], []
    for item in items:
        if not str(item.fspath).startswith(here):
            keep.append(item)
            continue
        item.add_marker(pytest.mark.conformance)
        callspec = getattr(item, "callspec", None)
        line = callspec.params.get("line") if callspec is not None else None
        if line is not None and _why_unavailable(line):
            dropped.append(item)
        else:
            keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
        config._conformance_dropped = len(dropped)  # type: ignore[attr-defined]


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    dropped = getattr(config, "_conformance_dropped", 0)
    reasons = sorted({why for why in _UNAVAILABLE.values() if why})
    if dropped and reasons:
        terminalreporter.write_line(
            f"tests/conformance: {dropped} tests not run - real Pulsar unavailable: "
            + "; ".join(reasons))


@dataclass
class Target:
    """One broker as a user reaches it: a pulsar:// URL and an admin REST base URL."""

    kind: str  # "pulsar" (the real one) or "pulsarlab"
    version: str
    service_url: str
    web_url: str


@dataclass
class Session:
    """What a scenario gets: a client on one target, names shared by both runs, REST."""

    target: Target
    token: str
    client: Any = None
    _clients: list[Any] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return self.target.kind

    def topic(self, name: str, namespace: str = "public/default",
              domain: str = "persistent") -> str:
        return f"{domain}://{namespace}/{name}-{self.token}"

    def short(self, text: str) -> str:
        """``text`` without this run's unique token (so both runs' observations compare)."""
        return text.replace(f"-{self.token}", "")

    def new_client(self, **kwargs: Any) -> Any:
        c = pulsar.Client(self.target.service_url, operation_timeout_seconds=15,
                          logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error), **kwargs)
        self._clients.append(c)
        return c

    def rest(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """``method`` on the admin API; (status, decoded JSON body or text or None)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.target.web_url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        if not raw:
            return status, None
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors="replace")

    def rest_ok(self, method: str, path: str, body: Any = None) -> Any:
        status, out = self.rest(method, path, body)
        assert status in (200, 204), f"{self.kind}: {method} {path} -> {status} {out}"
        return out

    def namespace(self, name: str, **policies: Any) -> str:
        """A fresh namespace ``public/<name>-<token>`` (policies: the Policies JSON body)."""
        ns = f"public/{name}-{self.token}"
        self.rest_ok("PUT", f"/admin/v2/namespaces/{ns}", policies or None)
        return ns

    def close(self) -> None:
        for c in self._clients:
            with contextlib.suppress(Exception):  # a scenario may have closed it already
                c.close()


@dataclass
class Pair:
    line: str
    real: Target
    lab: Target


def _real_target(line: str) -> tuple[RealPulsar | None, str]:
    why = _why_unavailable(line)
    if why:
        return None, why
    return RealPulsar(assemble(line)), ""


@pytest.fixture(scope="package", params=["3.3", "4.0"])
def line(request: pytest.FixtureRequest) -> Iterator[Pair]:
    real, why = _real_target(request.param)
    if real is None:
        pytest.skip(f"real Pulsar {request.param} unavailable: {why}")
    failed_before = request.session.testsfailed
    started = time.monotonic()
    try:
        real.start()
    except RuntimeError as exc:
        real.stop(keep_log=True)
        pytest.fail(str(exc))
    print(f"\nreal Pulsar {real.assembly.version} ready in {time.monotonic() - started:.1f} s")
    lab = Broker(storage="memory", pulsar_version=real.assembly.version, **LAB_SETTINGS)
    lab.start()
    try:
        yield Pair(
            request.param,
            Target("pulsar", real.assembly.version, real.service_url, real.web_url),
            Target("pulsarlab", real.assembly.version, lab.pulsar_url, lab.web.url),
        )
    finally:
        lab.stop()
        keep = request.session.testsfailed > failed_before
        real.stop(keep_log=keep)
        if keep:
            print(f"\nreal Pulsar {real.assembly.version} log kept: {real.log_path}")


Scenario = Callable[..., Any]


@pytest.fixture
def compare(line: Pair) -> Callable[..., Any]:
    """``compare(scenario, *args)``: run it on real Pulsar, then on pulsarlab; the two
    observations must be equal. Returns real Pulsar's observation."""

    def run(scenario: Scenario, *args: Any) -> Any:
        token = uuid.uuid4().hex[:8]
        observed = {}
        for target in (line.real, line.lab):
            session = Session(target, token)
            session.client = session.new_client()
            try:
                observed[target.kind] = scenario(session, *args)
            finally:
                session.close()
        assert observed["pulsarlab"] == observed["pulsar"], (
            f"Pulsar {line.real.version} and pulsarlab differ:\n"
            f"  pulsar:    {observed['pulsar']!r}\n  pulsarlab: {observed['pulsarlab']!r}")
        return observed["pulsar"]

    return run


@pytest.fixture
def each(line: Pair) -> Callable[..., dict[str, Any]]:
    """``each(scenario)``: run it on both and return both observations by kind (for
    comparisons that are not plain equality, e.g. stats by key and JSON type)."""

    def run(scenario: Scenario, *args: Any) -> dict[str, Any]:
        token = uuid.uuid4().hex[:8]
        observed = {}
        for target in (line.real, line.lab):
            session = Session(target, token)
            session.client = session.new_client()
            try:
                observed[target.kind] = scenario(session, *args)
            finally:
                session.close()
        return observed

    return run


# -- helpers scenarios share ----------------------------------------------------------------


def drain(consumer: Any, quiet_ms: int = QUIET_MS, ack: bool = True) -> list[Any]:
    """Everything that arrives until the consumer stays quiet for ``quiet_ms``."""
    out = []
    while True:
        try:
            msg = consumer.receive(timeout_millis=quiet_ms)
        except pulsar.Timeout:
            return out
        if ack:
            consumer.acknowledge(msg)
        out.append(msg)


def admin_path(topic: str) -> str:
    """``persistent://t/n/x`` -> ``/admin/v2/persistent/t/n/x`` (the topic's REST path)."""
    domain, rest = topic.split("://")
    return f"/admin/v2/{domain}/{rest}"


def produce(s: Session, topic: str, n: int, prefix: str = "m") -> list[Any]:
    """Send ``prefix0`` .. ``prefix{n-1}`` one by one; their message ids."""
    p = s.client.create_producer(topic)
    return [p.send(f"{prefix}{i}".encode()) for i in range(n)]


def values(msgs: list[Any]) -> list[str]:
    return [m.data().decode() for m in msgs]


def receive_n(consumer: Any, n: int, ack: bool = True) -> list[Any]:
    out = []
    for _ in range(n):
        msg = consumer.receive(timeout_millis=WAIT_MS)
        if ack:
            consumer.acknowledge(msg)
        out.append(msg)
    return out


def error_name(call: Callable[[], Any]) -> str:
    """The official client's exception class name for ``call()``, or "ok"."""
    try:
        call()
    except Exception as exc:  # the class name is the observation
        return type(exc).__name__
    return "ok"
