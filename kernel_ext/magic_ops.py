"""The operator's ``%pulsar`` commands: ``why`` (a stuck subscription explained) and
``browse`` (a read-only message browser, :mod:`.browse`).

``OpsCommands`` is a part of :class:`~.magics.PulsarMagics`; it uses the magics' ``runtime``
and its ``_full`` / ``_partitions`` topic-name helpers. The reasoning itself lives in
:mod:`.diagnosis` (pure functions over stats), so it reads a real cluster's stats too.
"""

from __future__ import annotations

import argparse
from typing import Any

from .browse import MessageFilter, browse_messages, parse_time
from .diagnosis import Diagnosis, Finding, diagnose, exact_state
from .results import MessageList
from .runtime import BrokerRuntime, PulsarMagicError
from .schema_values import SchemaDecoder, admin_lookup

__all__ = ["OpsCommands", "diagnose_topic"]


def diagnose_topic(runtime: BrokerRuntime, partitions: list[str], subscription: str,
                   consumer: str | None = None) -> Diagnosis:
    """Diagnose ``subscription`` on each partition (or the one topic) the runtime reaches.

    Reads stats, internal stats and (when allowed) the namespace policies over the admin API;
    on a broker running in this kernel it adds the core's exact pending acks."""
    topics = runtime.admin().topics
    policies = _policies(runtime, partitions[0])
    broker = runtime.broker if runtime.mode == "kernel" else None
    results = []
    for part in partitions:
        stats = topics.get_stats(part)
        internal = topics.get_internal_stats(part)
        core = None
        if broker is not None:
            core = broker.call(lambda s, part=part: exact_state(s, part, subscription))
        results.append(diagnose(stats, subscription, consumer=consumer, internal_stats=internal,
                                policies=policies, core=core, topic=part))
    if len(results) == 1:
        return results[0]
    topic = partitions[0].rsplit("-partition-", 1)[0]
    merged = Diagnosis(topic, subscription, results[0].source)
    for part, result in zip(partitions, results, strict=True):
        label = part.rsplit("-", 1)[-1]
        merged.findings += [Finding(f.code, f"partition {label}: {f.text}", f.consumer)
                            for f in result.findings]
    return merged


def _policies(runtime: BrokerRuntime, topic: str) -> dict[str, Any] | None:
    """The topic's namespace policies, or None when the admin API refuses them."""
    from .broker import TopicName

    try:
        return runtime.admin().namespaces.get_policies(TopicName.get(topic).namespace)
    except Exception:  # a cluster may not let this role read policies: stats still speak
        return None


class OpsCommands:
    """The operator commands of the ``%pulsar`` magics."""

    runtime: BrokerRuntime

    def _full(self, topic: str) -> str:
        raise NotImplementedError

    def _partitions(self, topic: str) -> list[str]:
        raise NotImplementedError

    def _cmd_why(self, args: argparse.Namespace, cell: str | None) -> Diagnosis:
        topic = self._full(args.topic)
        self.runtime.last_subscription = args.sub
        try:
            return diagnose_topic(self.runtime, self._partitions(topic), args.sub, args.consumer)
        except ValueError as exc:
            raise PulsarMagicError(str(exc)) from None

    def _cmd_browse(self, args: argparse.Namespace, cell: str | None) -> MessageList:
        topic = self._full(args.topic)
        if args.widget:
            from .widgets.message_browser import MessageBrowser

            return MessageBrowser(self.runtime.admin().topics, self._partitions(topic),
                                  subscription=args.sub, count=args.count,
                                  decode=SchemaDecoder(admin_lookup(self.runtime.admin())))
        try:
            keep = MessageFilter(
                key=args.key, properties=tuple(args.properties), contains=args.grep,
                since_ms=parse_time(args.since) if args.since else None,
                until_ms=parse_time(args.until) if args.until else None,
                json_path=args.json_path,
            )
            rows, read = browse_messages(
                self.runtime.admin().topics, self._partitions(topic), subscription=args.sub,
                start="latest" if args.latest else "earliest", count=args.count,
                page=args.page, scan=args.scan, keep=keep,
                decode=SchemaDecoder(admin_lookup(self.runtime.admin())),
            )
        except ValueError as exc:
            raise PulsarMagicError(str(exc)) from None
        where = f"{args.sub}'s backlog" if args.sub else (
            "the latest" if args.latest else "the earliest")
        return MessageList(rows, f"on {topic} from {where}, page {args.page} "
                                 f"({read} read)")
