"""Live mode: follow a running broker's event stream and stats without blocking the kernel.

:class:`LiveBinding` runs ONE daemon thread. It reads the broker's event stream (a SUB
socket on ``events_url``: frames ``[type, msgpack map]``, typed by
:func:`~.source.decode_message`), keeps the events of its topic, and — at most ``max_fps``
times a second, through :class:`~.throttle.FrameThrottle` — asks the admin API for the
topic's stats and internal stats and redraws every bound view. Views therefore have
exactly one writer thread; the kernel's own thread only builds them. Stats
are also polled every ``stats_interval_s`` when no event arrives (a permit change alone
emits no event on older brokers, and events sent before the SUB socket joined are lost).

The thread never prints (errors go to the ``pulsarlab.widgets`` logger), its socket has
``linger=0``, and :meth:`LiveBinding.stop` (or the ``with`` block) ends it promptly.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import zmq

from pulsarlab.broker import TopicName
from pulsarlab.broker.admin import Admin
from pulsarlab.broker.errors import PulsarLabError
from pulsarlab.broker.events import DeadLettered, Retried
from pulsarlab.broker.hosts import endpoint_is_ipv6
from pulsarlab.broker.zap import subscriber_login

from .source import EventLog, Palette, Snapshot, decode_message
from .throttle import FrameThrottle

__all__ = ["LiveBinding"]

log = logging.getLogger("pulsarlab.widgets")

_MAX_BURST = 10_000  # events read before the thread looks at its clock again


class LiveBinding:
    """Bind views to ``topic``/``subscription`` on a running broker."""

    simulated = False

    def __init__(
        self,
        service_url: str,
        events_url: str,
        topic: str,
        subscription: str,
        *,
        max_fps: float = 10.0,
        stats_interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        admin: Any = None,
        security: dict[str, Any] | None = None,
        settings: Mapping[str, Any] | None = None,
        admin_url: str | None = None,
    ) -> None:
        """``security``: ``authentication`` (a ``pulsarlab.AuthenticationToken``) and/or
        ``curve_server_key`` for a broker with authentication or CURVE on; the token also
        logs the event subscriber in (ZeroMQ PLAIN, checked by the broker).
        ``settings``: what is known of the broker's settings (e.g. ``pulsar_version``),
        handed to the views in every snapshot (see :meth:`for_broker`).
        ``admin_url``: the broker's admin REST API the stats are polled from (default: the
        one of the broker started on this machine at ``service_url``)."""
        self.settings: dict[str, Any] = dict(settings or {})
        security = dict(security or {})
        auth = security.get("authentication")
        self._events_token: str | None = auth.token() if auth is not None else None
        self.service_url = service_url
        self.events_url = events_url
        self.topic = str(TopicName.get(topic))
        self.subscription = subscription
        self.stats_interval_s = stats_interval_s
        self.events = EventLog()
        self.palette = Palette()
        self.start_ms = time.time_ns() // 1_000_000
        self.throttle = FrameThrottle(self._render, max_fps, clock)
        self.fetches = 0
        self._clock = clock
        self._admin = admin if admin is not None else Admin(
            admin_url or service_url, timeout_seconds=5.0, **security
        )
        self._callbacks: list[Callable[[], None]] = []
        self._snapshot: Snapshot | None = None
        self._partition_topics: list[str] | None = None
        self._last_fetch = -math.inf
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_broker(cls, broker: Any, topic: str, subscription: str,
                   **kwargs: Any) -> LiveBinding:
        """Follow an in-kernel :class:`pulsarlab.Broker`, knowing the settings that shape
        the views (its ``pulsar_version`` and consistent-hashing points)."""
        settings = {
            "pulsar_version": broker.settings.pulsar_version,
            "consistent_hashing_points":
                broker.settings.subscription_key_shared_consistent_hashing_replica_points,
        }
        kwargs.setdefault("admin_url", getattr(broker, "web_url", None))
        return cls(broker.service_url, broker.events_url, topic, subscription,
                   settings=settings, **kwargs)

    # -- the Source protocol --------------------------------------------------------------

    def on_change(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    def snapshot(self) -> Snapshot | None:
        """The stats fetched for the last frame (``None`` until the topic exists)."""
        return self._snapshot

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> LiveBinding:
        """Start following the broker on a daemon thread (idempotent)."""
        if self.running:
            return self
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, name=f"pulsarlab-widgets {self.topic}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Stop the thread and close its socket."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self) -> LiveBinding:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the thread -----------------------------------------------------------------------

    def _run(self) -> None:
        sock = zmq.Context.instance().socket(zmq.SUB)
        sock.linger = 0
        sock.setsockopt(zmq.SUBSCRIBE, b"")
        if self._events_token is not None:
            subscriber_login(sock, self._events_token)
        if endpoint_is_ipv6(self.events_url):  # ZeroMQ connects to [::1] only so
            sock.ipv6 = True
        try:
            sock.connect(self.events_url)
            while not self._stop.is_set():
                delay = self.throttle.delay()
                wait = min(0.1, self.stats_interval_s if delay is None else delay)
                if sock.poll(int(wait * 1000)):
                    self._read_burst(sock)
                self.step()
        except Exception:
            log.exception("live binding of %s stopped", self.topic)
        finally:
            sock.close(linger=0)

    def _read_burst(self, sock: zmq.Socket) -> None:
        relevant = False
        for _ in range(_MAX_BURST):
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            relevant |= self.ingest(frames)
        if relevant:
            self.throttle.request()

    def ingest(self, frames: list[bytes]) -> bool:
        """Keep one event-stream message if it concerns this topic; return whether it did."""
        try:
            event = decode_message(frames)
        except ValueError as exc:
            log.warning("ignoring %s", exc)
            return False
        # Retry and dead-letter hops happen on other topics but name this one.
        hop_of = event.real_topic if isinstance(event, DeadLettered | Retried) else None
        if not (self._concerns(event.topic) or self._concerns(hop_of)):
            return False
        self.events.append(event)
        return True

    def _concerns(self, topic: str | None) -> bool:
        if not topic:
            return False
        if self._partition_topics is not None:
            return topic == self.topic or topic in self._partition_topics
        return topic == self.topic or topic.startswith(self.topic + "-partition-")

    def step(self) -> None:
        """Draw a pending frame if due; poll stats if nothing happened for a while."""
        if self.throttle.delay() is None and (
            self._clock() - self._last_fetch >= self.stats_interval_s
        ):
            self.throttle.request()
        else:
            self.throttle.poll()

    def _render(self) -> None:
        self._last_fetch = self._clock()
        snapshot = self._fetch()
        if snapshot is None:
            return
        self._snapshot = snapshot
        for callback in list(self._callbacks):
            try:
                callback()
            except Exception:
                log.exception("a live view failed to redraw")

    def _fetch(self) -> Snapshot | None:
        self.fetches += 1
        topics = self._admin.topics
        try:
            parts = self._partition_topics
            if parts is None:
                partitions = topics.get_partitioned_topic_metadata(self.topic)["partitions"]
                name = TopicName.get(self.topic)
                parts = [str(name.partition(i)) for i in range(partitions)] or [self.topic]
            if parts == [self.topic]:
                stats = {self.topic: topics.get_stats(self.topic)}
            else:
                stats = dict(topics.get_partitioned_stats(self.topic)["partitions"])
            internal = {t: topics.get_internal_stats(t) for t in stats}
        except (PulsarLabError, TimeoutError) as exc:
            log.debug("stats of %s not available yet: %s", self.topic, exc)
            return None
        self._partition_topics = parts
        return Snapshot(time_ms=time.time_ns() // 1_000_000, topics=stats, internal=internal,
                        settings=self.settings)
