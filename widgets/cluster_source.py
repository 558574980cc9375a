"""Cluster mode: views of any Pulsar cluster, polled through its admin REST API.

:class:`ClusterSource` is a view source (like :class:`~.live.LiveBinding`) for a cluster that
has no pulsarlab event stream: one daemon thread asks the admin API for the topic's
``stats`` (``partitioned-stats`` per partition) and ``internalStats`` every ``interval_s``
(default 2 s), backs off on errors (doubling up to ``max_interval_s``) and keeps a label
saying when the picture was fetched — or since when it is *stale* and why. The views read
Pulsar's own JSON as the cluster reports it (``keyHashRanges`` strings of 3.x, the 4.0
``keyHashRangeArrays`` pairs, ``activeConsumerName``, ``msgBacklog``, ``unackedMessages``,
``blockedConsumerOnUnackedMsgs``, ``msgRateRedeliver``, and the cursor's
``markDeletePosition``, ``readPosition`` and ``individuallyDeletedMessages``).

A cluster reports no per-message history, so the event list stays empty; a view built
from events (the redelivery timeline) says so plainly instead of drawing an empty plot.

:func:`open_view` builds any view class over a connection (``View.for_subscription``), and
adds a "what-if" button: :func:`whatif_from_snapshot` copies the cluster's subscription
type, consumers (in the order they connected) and their sticky ranges into a
:class:`~.whatif.WhatIf` core, so "what if I add a consumer" can be tried without touching
production.
"""

from __future__ import annotations

import html
import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import ipywidgets

from pulsarlab.broker import TopicName

from .pulsar_stats import consumer_key_hash_ranges
from .source import EventLog, Palette, Snapshot

__all__ = [
    "EVENT_ONLY_NOTE",
    "ClusterSource",
    "cluster_snapshot",
    "open_view",
    "whatif_from_snapshot",
    "with_open_ledger",
]

log = logging.getLogger("pulsarlab.widgets")

EVENT_ONLY_NOTE = (
    "A Pulsar cluster's admin API reports no per-message history (dispatches, acks, "
    "redeliveries), so this timeline has nothing to draw in cluster mode. Its stats show "
    "the totals: msgRateRedeliver, unackedMessages and the cursor's ack holes (CursorView)."
)
_EVENT_ONLY_VIEWS = ("RedeliveryTimeline",)


def _clock_text(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M:%S UTC")


def cluster_snapshot(admin: Any, topic: str, time_ms: int) -> Snapshot:
    """Stats and internal stats of ``topic`` (each partition of a partitioned one)."""
    topics = admin.topics
    partitions = int(topics.get_partitioned_topic_metadata(topic).get("partitions", 0))
    if partitions:
        stats = dict(topics.get_partitioned_stats(topic, per_partition=True)["partitions"])
    else:
        stats = {topic: topics.get_stats(topic)}
    internal = {name: with_open_ledger(topics.get_internal_stats(name)) for name in stats}
    return Snapshot(time_ms=time_ms, topics=stats, internal=internal)


def with_open_ledger(internal: dict[str, Any]) -> dict[str, Any]:
    """``internalStats`` with the open ledger's entry count filled in.

    Pulsar lists the ledger being written with ``entries: 0`` and reports its entries as
    ``currentLedgerEntries``; the cursor view counts entries per ledger, so copy it over.
    """
    ledgers = list(internal.get("ledgers") or ())
    current = int(internal.get("currentLedgerEntries") or 0)
    if not ledgers or current <= 0 or int(ledgers[-1].get("entries") or 0) > 0:
        return internal
    ledgers[-1] = {**ledgers[-1], "entries": current}
    return {**internal, "ledgers": ledgers}


class ClusterSource:
    """Follow ``topic``/``subscription`` of a cluster by polling its admin REST API."""

    simulated = False
    reports_events = False
    """A cluster has no event stream: :attr:`events` stays empty."""

    def __init__(
        self,
        admin: Any,
        topic: str,
        subscription: str,
        *,
        interval_s: float = 2.0,
        max_interval_s: float = 60.0,
        wall_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        """``admin``: a :class:`pulsarlab.cluster.RestAdmin` (anything with its
        ``topics`` reading methods); ``wall_ms``: the clock the label shows."""
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, not {interval_s}")
        self.admin = admin
        self.topic = str(TopicName.get(topic))
        self.subscription = subscription
        self.interval_s = interval_s
        self.max_interval_s = max(max_interval_s, interval_s)
        self.events = EventLog()
        self.palette = Palette()
        self._wall_ms = wall_ms
        self.start_ms = wall_ms()
        self.label = ipywidgets.HTML()
        self.polls = 0
        self.failures = 0
        """Failed polls in a row (0 while the picture is fresh)."""
        self.fetched_ms: int | None = None
        self.stale_since_ms: int | None = None
        self.last_error: str | None = None
        self._snapshot: Snapshot | None = None
        self._callbacks: list[Callable[[], None]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the Source protocol --------------------------------------------------------------

    def snapshot(self) -> Snapshot | None:
        return self._snapshot

    def on_change(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    # -- polling --------------------------------------------------------------------------

    def poll(self) -> bool:
        """Fetch once and redraw the views; return whether the fetch worked."""
        self.polls += 1
        now = self._wall_ms()
        try:
            snapshot = cluster_snapshot(self.admin, self.topic, now)
        except (OSError, RuntimeError, ValueError, KeyError) as exc:
            self.failures += 1
            if self.stale_since_ms is None:
                self.stale_since_ms = now
            self.last_error = (str(exc).splitlines() or [type(exc).__name__])[0]
            log.debug("stats of %s not available: %s", self.topic, self.last_error)
            self.label.value = self.status_html()
            return False
        self.failures = 0
        self.stale_since_ms = self.last_error = None
        self.fetched_ms = now
        self._snapshot = snapshot
        self.label.value = self.status_html()
        for callback in list(self._callbacks):
            try:
                callback()
            except Exception:
                log.exception("a cluster view failed to redraw")
        return True

    def next_delay(self) -> float:
        """Seconds to the next poll: the interval, doubled per failure up to the maximum."""
        if self.failures == 0:
            return self.interval_s
        return min(self.interval_s * 2 ** self.failures, self.max_interval_s)

    def status_text(self) -> str:
        """``fetched 10:31:02 UTC …`` or ``stale since 10:31:04 UTC: <why> …``."""
        if self.stale_since_ms is not None:
            last = (f"; last good stats {_clock_text(self.fetched_ms)}"
                    if self.fetched_ms is not None else "")
            return (f"stale since {_clock_text(self.stale_since_ms)}: {self.last_error}"
                    f"{last} (retrying every {self.next_delay():g} s)")
        if self.fetched_ms is None:
            return "waiting for the first stats"
        return (f"cluster stats fetched {_clock_text(self.fetched_ms)} "
                f"(every {self.interval_s:g} s)")

    def status_html(self) -> str:
        color = "#c62828" if self.stale_since_ms is not None else "#555555"
        return f"<span style='color:{color}'>{html.escape(self.status_text())}</span>"

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> ClusterSource:
        """Poll on a daemon thread (idempotent); the first fetch happens at once."""
        if self.running:
            return self
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, name=f"pulsarlab-cluster {self.topic}", daemon=True
        )
        self._thread.start()
        return self

    def _run(self) -> None:
        self.poll()
        while not self._stop.wait(self.next_delay()):
            self.poll()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self) -> ClusterSource:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _connected_at(consumer: Mapping[str, Any]) -> tuple[int, float | str]:
    """A consumer's ``connectedSince`` as a sort key: Pulsar's date strings by instant (as
    text, ``…:05.12Z`` would sort before ``…:05.1Z``), anything else as text after them."""
    value = str(consumer.get("connectedSince"))
    try:
        return 0, datetime.fromisoformat(value).timestamp()
    except ValueError:
        return 1, value


def whatif_from_snapshot(snapshot: Snapshot, subscription: str, **settings: Any) -> Any:
    """A :class:`~.whatif.WhatIf` with the cluster's subscription type and consumers.

    Consumers join in the order they connected (``connectedSince``), which is what decides
    AUTO_SPLIT ranges; STICKY consumers bring their declared ranges. Several ranges per
    consumer mean the broker uses consistent hashing. ``settings`` go to the core.
    """
    from .whatif import WhatIf

    subs = [s for s in ((t.get("subscriptions") or {}).get(subscription)
                        for t in snapshot.topics.values()) if s is not None]
    if not subs:
        raise ValueError(f"the cluster reports no subscription {subscription!r}")
    sub = subs[0]
    sub_type = sub.get("type") or "Exclusive"
    mode = sub.get("keySharedMode") or "AUTO_SPLIT"
    consumers = sorted(sub.get("consumers") or (), key=_connected_at)
    ranges = {str(c.get("consumerName")): consumer_key_hash_ranges(c) for c in consumers}
    if sub_type == "Key_Shared" and mode == "AUTO_SPLIT":
        settings.setdefault("key_shared_use_consistent_hashing",
                            any(len(r) > 1 for r in ranges.values()))
    names = list(snapshot.topics)
    partitions = len(names) if any("-partition-" in n for n in names) else 0
    whatif = WhatIf(sub_type, key_shared_mode=mode, partitions=partitions,
                    subscription=subscription, **settings)
    with whatif.batch():
        for name, hash_ranges in ranges.items():  # one consumer per name, on every partition
            sticky = hash_ranges if mode == "STICKY" else None
            whatif.add_consumer(name, hash_ranges=sticky)
    return whatif


def open_view(view_class: type, connection: Any, topic: str, subscription: str,
              **kwargs: Any) -> Any:
    """``view_class`` over ``connection``'s live source, started; cluster views get the
    staleness label, a what-if button, and a plain note where the cluster reports nothing."""
    source = connection.live_source(topic, subscription)
    view = view_class(source, **kwargs)
    if isinstance(source, ClusterSource):
        _decorate(view, source, kwargs)
    source.start()
    return view


def _decorate(view: Any, source: ClusterSource, kwargs: Mapping[str, Any]) -> None:
    extra: list[ipywidgets.Widget] = [source.label]
    view.cluster_note = None
    if type(view).__name__ in _EVENT_ONLY_VIEWS:
        view.cluster_note = EVENT_ONLY_NOTE
        extra.append(ipywidgets.HTML(f"<i>{html.escape(EVENT_ONLY_NOTE)}</i>"))
    button = ipywidgets.Button(description="what-if: copy these consumers",
                               layout={"width": "260px"})
    output = ipywidgets.VBox()

    def copy(_: Any) -> None:
        snapshot = source.snapshot()
        if snapshot is None:
            source.label.value = "no stats yet to copy"
            return
        told = getattr(view, "pulsar_version", None)  # a view drawing a given release's rules
        settings = {"pulsar_version": str(told)} if told is not None else {}
        try:
            whatif = whatif_from_snapshot(snapshot, source.subscription, **settings)
        except Exception as exc:  # any refusal of the core is shown, never raised
            source.label.value = html.escape(f"cannot copy: {exc}")
            return
        # the copy is a what-if view: its own control block is the one the reader needs
        output.children = (type(view)(whatif, **dict(kwargs)),)

    button.on_click(copy)
    view.what_if_button = button
    view.what_if_output = output
    view.children = (*extra, *view.children, button, output)
