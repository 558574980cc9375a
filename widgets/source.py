"""What every view reads from: a snapshot of stats, the event history and a colour per consumer.

A view never talks to a broker itself. It is given a *source* — :class:`~.whatif.WhatIf`
(the real core on a simulated clock) or :class:`~.live.LiveBinding` (a running broker) —
and on each frame reads :meth:`Source.snapshot` (Pulsar-named topic stats and internal
stats, the same dicts in both modes) and the new entries of :attr:`Source.events`: typed
events (:mod:`pulsarlab.broker.events`, and the client's kinds of
:mod:`pulsarlab.broker.client.events`). A what-if core appends its broker's events as they
are; a map from the broker's event stream is decoded once, here (:func:`decode`), so views
read attributes (``event.consumer``, ``event.positions``) and pass over an
:class:`~pulsarlab.broker.events.UnknownEvent` (a type a newer broker added).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgpack

import pulsarlab.broker.client.events  # noqa: F401  (registers the client's kinds)
from pulsarlab.broker.events import BrokerEvent, decode_event

from .pulsar_stats import Position

__all__ = [
    "BrokerEvent",
    "ClientState",
    "EventLog",
    "Palette",
    "Snapshot",
    "Source",
    "decode",
    "decode_message",
]

PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
)


def stepped_colorscale(colors: Sequence[str]) -> list[list[Any]]:
    """A plotly colorscale giving state ``i`` (drawn as ``i + 0.5`` on ``0..len(colors)``)
    exactly ``colors[i]``: one flat band per state, no blending between them."""
    n = len(colors)
    scale: list[list[Any]] = []
    for i, color in enumerate(colors):
        scale += [[i / n, color], [(i + 1) / n, color]]
    return scale


class Palette:
    """A stable colour per consumer name, shared by all the views of one source."""

    def __init__(self, colors: tuple[str, ...] = PALETTE) -> None:
        self._colors = colors
        self._assigned: dict[str, str] = {}
        self._lock = threading.Lock()

    def color(self, name: str | None) -> str:
        if name is None:
            return "#bbbbbb"
        with self._lock:
            color = self._assigned.get(name)
            if color is None:
                color = self._colors[len(self._assigned) % len(self._colors)]
                self._assigned[name] = color
            return color


def decode(values: Mapping[str, Any]) -> BrokerEvent:
    """The typed event of one ``to_dict`` map, broker's or client's (an ``UnknownEvent``
    for a type nobody registered)."""
    return decode_event(values)


def decode_message(frames: list[bytes]) -> BrokerEvent:
    """The typed event of one event-stream message (frames ``[type, msgpack map]``); a
    ``ValueError`` names what is wrong with a message that is not one."""
    if len(frames) != 2:
        raise ValueError(f"an event-stream message has 2 frames, not {len(frames)}")
    try:
        values = msgpack.unpackb(frames[1], raw=False)
    except (ValueError, msgpack.UnpackException) as exc:
        raise ValueError(f"an event-stream message that is not msgpack ({exc})") from None
    if not isinstance(values, dict):
        raise ValueError(f"an event-stream message holds a {type(values).__name__}, not a map")
    return decode(values)


class EventLog:
    """Append-only typed events; readers keep their own index into it."""

    def __init__(self) -> None:
        self._events: list[BrokerEvent] = []
        self._lock = threading.Lock()

    def append(self, event: BrokerEvent) -> None:
        with self._lock:
            self._events.append(event)

    def since(self, index: int) -> tuple[list[BrokerEvent], int]:
        """Events from ``index`` on, and the index to pass next time."""
        with self._lock:
            return self._events[index:], len(self._events)

    def __len__(self) -> int:
        return len(self._events)


@dataclass(frozen=True)
class ClientState:
    """The simulated client of one consumer (what-if mode only)."""

    queue: int
    """Messages pushed by the broker, waiting in the receiver queue."""
    queue_size: int
    """The receiver queue size (the permits granted at subscribe)."""
    received: tuple[Position, ...]
    """Messages the application received and has not acknowledged yet."""


@dataclass(frozen=True)
class Snapshot:
    """One moment of a topic (or each partition of a partitioned topic), Pulsar-named."""

    time_ms: int
    topics: Mapping[str, dict[str, Any]]
    """Topic (partition) name → ``topics stats`` dict."""
    internal: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    """Topic (partition) name → ``topics stats-internal`` dict (where fetched)."""
    clients: Mapping[str, ClientState] | None = None
    """Consumer name → simulated client state (what-if only)."""
    pending: Mapping[str, tuple[Position, ...]] | None = None
    """Consumer name → entries it owes an ack for, as the core tracks them (what-if only)."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """Broker settings that shape the picture (what-if: exact; live: what is known)."""

    def subscription(self, name: str, topic: str | None = None) -> dict[str, Any] | None:
        """The subscription's stats on ``topic`` (default: the first topic)."""
        stats = self.topics.get(topic) if topic else next(iter(self.topics.values()), None)
        if stats is None:
            return None
        return (stats.get("subscriptions") or {}).get(name)

    def cursor(self, name: str, topic: str | None = None) -> dict[str, Any] | None:
        """The subscription cursor's internal stats on ``topic`` (default: the first)."""
        stats = self.internal.get(topic) if topic else next(iter(self.internal.values()), None)
        if stats is None:
            return None
        return (stats.get("cursors") or {}).get(name)


class Source(Protocol):
    """What a view needs of a mode."""

    topic: str
    """Full topic name (the partitioned parent for a partitioned topic)."""
    subscription: str
    simulated: bool
    """True for what-if (buttons drive the core), False for a live broker."""
    events: EventLog
    palette: Palette
    start_ms: int
    """Time zero of the views' time axes (ms since the epoch)."""

    def snapshot(self) -> Snapshot | None: ...

    def on_change(self, callback: Callable[[], None]) -> None: ...
