"""Apache Pulsar's own ``pulsar-admin`` against real Pulsar and against pulsarlab (issue 25,
item 4).

The CLI is Maven's ``org.apache.pulsar:pulsar-client-tools`` at the newest patch of the line
the repository serves (:func:`real_pulsar.assemble_cli`; 3.3.6 / 4.0.8 when this was
written, so it can be one patch ahead of the broker of its line), run through
``AdminCli.java`` in one JVM (:mod:`.pulsar_cli`). One session of the common commands —
tenants, namespaces and their policies, permissions, topics create / list / stats /
stats-internal / partitioned-stats / peek-messages / examine-message / skip / clear-backlog /
reset-cursor / expire-messages / terminate / unload / delete, subscriptions — runs on both
brokers of a line with the same names; every command's exit status and what it printed (its
JSON parsed, the values a run cannot make equal — ledger ids, timestamps, addresses — left
out) must be the same. Messages are produced with the official Python client between
commands (``pulsar-client produce``, the Java client, is not used: see README.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .conftest import Pair, Session, Target
from .pulsar_cli import PulsarCli, Result
from .real_pulsar import Unavailable, assemble_cli


@pytest.fixture(scope="package")
def cli(line: Pair) -> Iterator[PulsarCli]:
    try:
        assembly = assemble_cli(line.line)
    except Unavailable as exc:
        pytest.skip(f"pulsar-admin {line.line} unavailable: {exc}")
    tool = PulsarCli(assembly)
    try:
        yield tool
    finally:
        tool.close()


_MESSAGE_ID = re.compile(r"\b\d+:(\d+)(:-?\d+)?(:-?\d+)?\b")
_PUBLISH_TIME = re.compile(r"(Publish time: )\d+")


def _text(session: Session, text: str) -> str:
    """Printed text without what differs between runs: the token, ledger ids, publish
    times."""
    text = _PUBLISH_TIME.sub(r"\1T", session.short(text))
    return _MESSAGE_ID.sub(lambda m: "L:" + m.group(0).split(":", 1)[1], text)


def _lines_of_this_run(session: Session, result: Result) -> list[str]:
    """A listing's lines that name this run's resources (a shared broker has others)."""
    return sorted(session.short(ln) for ln in result.out.splitlines() if session.token in ln)


def _error(result: Result) -> str:
    """The one-line reason pulsar-admin prints for a failed command, without names."""
    lines = [ln for ln in result.err.splitlines()
             if ln.strip() and not ln.startswith("SLF4J")]  # the JVM's first command warns
    return lines[-1] if lines else ""


Observer = Callable[[Session, Result], Any]


def _plain(s: Session, r: Result) -> Any:
    return _text(s, r.out.strip())


def _json(pick: Callable[[Any], Any]) -> Observer:
    """The picked part of a JSON answer (the plain text when the command printed no JSON)."""
    def observe(s: Session, r: Result) -> Any:
        try:
            doc = json.loads(r.out)
        except ValueError:
            return _plain(s, r)
        return pick(doc)
    return observe


def _session(cli: PulsarCli, s: Session) -> list[tuple[str, int, Any, str]]:
    """The session: (command, exit status, what it printed as observed, error line)."""
    url = s.target.web_url
    tenant = f"cli-{s.token}"
    ns = f"{tenant}/app"
    topic = f"persistent://{ns}/orders"
    parts = f"persistent://{ns}/parts"
    seen: list[tuple[str, int, Any, str]] = []

    def admin(observe: Observer | None, *args: str) -> Result:
        result = cli.admin(url, *args)
        shown = observe(s, result) if observe is not None else _plain(s, result)
        seen.append((_text(s, " ".join(args[:2])), result.exit, shown,
                     _text(s, _error(result))))
        return result

    listing = _lines_of_this_run
    admin(None, "tenants", "create", tenant, "--allowed-clusters", "standalone")
    admin(listing, "tenants", "list")
    admin(_json(lambda d: sorted(d.items())), "tenants", "get", tenant)
    admin(None, "tenants", "update", tenant, "--admin-roles", "ops",
          "--allowed-clusters", "standalone")
    admin(_json(lambda d: d["adminRoles"]), "tenants", "get", tenant)
    admin(None, "namespaces", "create", ns)
    admin(listing, "namespaces", "list", tenant)
    # every field of Pulsar's Policies (the CLI prints them all) but the bundles: pulsarlab
    # keeps one bundle per namespace (README.md, accepted differences)
    admin(_json(lambda d: {k: v for k, v in d.items() if k != "bundles"}),
          "namespaces", "policies", ns)
    admin(None, "namespaces", "set-retention", ns, "--size", "10M", "--time", "1h")
    admin(_json(lambda d: d), "namespaces", "get-retention", ns)
    admin(None, "namespaces", "set-message-ttl", ns, "--messageTTL", "3600")
    admin(None, "namespaces", "get-message-ttl", ns)
    admin(None, "namespaces", "set-deduplication", ns, "--enable")
    admin(None, "namespaces", "get-deduplication", ns)
    admin(None, "namespaces", "grant-permission", ns, "--role", "app",
          "--actions", "produce,consume")
    admin(_json(lambda d: {k: sorted(v) for k, v in d.items()}),
          "namespaces", "permissions", ns)
    admin(None, "namespaces", "revoke-permission", ns, "--role", "app")
    admin(_json(lambda d: d), "namespaces", "permissions", ns)

    admin(None, "topics", "create", topic)
    admin(None, "topics", "create-partitioned-topic", parts, "-p", "2")
    admin(listing, "topics", "list", ns)
    admin(listing, "topics", "list-partitioned-topics", ns)
    admin(_json(lambda d: d["partitions"]), "topics", "get-partitioned-topic-metadata", parts)
    admin(None, "topics", "create-subscription", topic, "-s", "billing")
    admin(None, "topics", "subscriptions", topic)
    admin(None, "topics", "grant-permission", topic, "--role", "app", "--actions", "consume")
    admin(_json(lambda d: {k: sorted(v) for k, v in d.items()}), "topics", "permissions",
          topic)

    producer = s.client.create_producer(topic)
    for i in range(5):
        producer.send(f"m{i}".encode(), partition_key=f"k{i}", properties={"n": str(i)})
    producer.close()

    def backlog(d: Any) -> Any:
        return {"msgInCounter": d["msgInCounter"],
                "backlog": {n: sub["msgBacklog"] for n, sub in d["subscriptions"].items()}}

    admin(_json(backlog), "topics", "stats", topic)
    # (Pulsar also lists its de-duplication cursor, "pulsar.dedup": see README.md)
    admin(_json(lambda d: (d["entriesAddedCounter"], d["numberOfEntries"],
                           "billing" in d["cursors"],
                           d["cursors"]["billing"]["messagesConsumedCounter"])),
          "topics", "stats-internal", topic)
    admin(_json(lambda d: (sorted(d.get("partitions", {})), d["msgInCounter"])),
          "topics", "partitioned-stats", parts, "--per-partition")
    admin(None, "topics", "peek-messages", topic, "-s", "billing", "-n", "2")
    admin(None, "topics", "examine-message", topic, "-i", "earliest", "-m", "1")
    admin(None, "topics", "skip", topic, "-s", "billing", "-n", "2")
    admin(_json(backlog), "topics", "stats", topic)
    admin(None, "topics", "reset-cursor", topic, "-s", "billing", "-t", "1h")
    admin(_json(backlog), "topics", "stats", topic)
    admin(None, "topics", "expire-messages", topic, "-s", "billing", "-t", "3600")
    admin(None, "topics", "expire-messages-all-subscriptions", topic, "-t", "3600")
    admin(_json(backlog), "topics", "stats", topic)
    admin(None, "topics", "clear-backlog", topic, "-s", "billing")
    admin(_json(backlog), "topics", "stats", topic)
    admin(None, "topics", "unsubscribe", topic, "-s", "billing")
    admin(None, "topics", "subscriptions", topic)
    admin(None, "topics", "terminate", topic)
    admin(None, "topics", "unload", topic)
    admin(None, "topics", "delete", topic)
    admin(None, "topics", "delete-partitioned-topic", parts)
    admin(None, "topics", "stats", topic)
    admin(None, "topics", "list", ns)
    admin(None, "namespaces", "delete", ns)
    admin(None, "tenants", "delete", tenant)
    admin(listing, "tenants", "list")
    return seen


def _run_on(cli: PulsarCli, target: Target, token: str) -> list[tuple[str, int, Any, str]]:
    session = Session(target, token)
    session.client = session.new_client()
    try:
        return _session(cli, session)
    finally:
        session.close()


def test_pulsar_admin_session(line: Pair, cli: PulsarCli) -> None:
    """PulsarAdminToolTest / the CLI reference: the same commands, the same answers."""
    import uuid

    token = uuid.uuid4().hex[:8]
    real = _run_on(cli, line.real, token)
    lab = _run_on(cli, line.lab, token)
    differ = [(r, b) for r, b in zip(real, lab, strict=True) if r != b]
    assert not differ, (f"pulsar-admin {cli.version}: Pulsar {line.real.version} and "
                        "pulsarlab differ:\n" + "\n".join(
                            f"  pulsar:    {r!r}\n  pulsarlab: {b!r}" for r, b in differ))
