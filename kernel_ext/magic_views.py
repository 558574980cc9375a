"""The ``%pulsar show`` command: a live widget (or a stats view) for a topic's subscription.

``ViewCommands`` is a part of :class:`~.magics.PulsarMagics`; it uses the magics'
``runtime`` and its ``_full`` / ``_partitions`` topic-name helpers.
"""

from __future__ import annotations

import argparse
from typing import Any

from .runtime import BrokerRuntime, PulsarMagicError

__all__ = ["ViewCommands"]


class ViewCommands:
    """The view commands of the ``%pulsar`` magics."""

    runtime: BrokerRuntime

    def _full(self, topic: str) -> str:
        raise NotImplementedError

    def _partitions(self, topic: str) -> list[str]:
        raise NotImplementedError

    def _pick_subscription(self, topic: str, given: str | None) -> str:
        if given:
            return given
        topics = self.runtime.admin().topics
        existing: list[str] = []
        for part in self._partitions(topic):
            existing += [n for n in topics.get_subscriptions(part) if n not in existing]
        last = self.runtime.last_subscription
        if last and last in existing:
            return last
        if len(existing) == 1:
            return existing[0]
        if not existing:
            raise PulsarMagicError(f"{topic} has no subscription yet: give one with --sub S")
        raise PulsarMagicError(f"pick a subscription with --sub: {', '.join(sorted(existing))}")

    def _cmd_show(self, args: argparse.Namespace, cell: str | None) -> Any:
        from .widgets import VIEWS, StatsView

        names = [*VIEWS, "stats", "lag"]
        if args.widget not in names:
            raise PulsarMagicError(
                f"unknown widget {args.widget!r}; choose from {', '.join(names)}"
            )
        rt = self.runtime
        rt.require_url()
        if args.topic is None and rt.last_topic is None:
            raise PulsarMagicError("give a TOPIC (no magic has used one yet)")
        topic = self._full(args.topic or rt.last_topic or "")
        if args.widget == "stats":
            stats = rt.admin().topics.get_stats(self._partitions(topic)[0])
            return StatsView(stats, subscription=args.sub)
        if args.widget == "lag":
            return self._show_lag(topic, args.sub)
        connection = rt.connection()
        subscription = self._pick_subscription(topic, args.sub)
        rt.last_subscription = subscription
        view = VIEWS[args.widget].for_subscription(connection, topic, subscription)
        rt.add_binding(view.source)
        return view

    def _show_lag(self, topic: str, sub: str | None) -> Any:
        """Lag over time, polled from the admin API (pulsarlab's or a cluster's)."""
        from .widgets.backlog import BacklogView
        from .widgets.cluster_source import ClusterSource

        rt = self.runtime
        subscription = self._pick_subscription(topic, sub)
        rt.last_subscription = subscription
        source = ClusterSource(rt.admin(), topic, subscription)
        view = BacklogView(source)
        source.start()
        rt.add_binding(source)
        return view
