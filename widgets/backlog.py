"""Lag over time: a subscription's backlog, unacked count and rates, polled from its stats.

:class:`LagHistory` turns each stats :class:`~.source.Snapshot` into a :class:`LagSample`
(summed over the partitions): ``msgBacklog``, ``unackedMessages``, the topic's ``msgRateIn``,
the subscription's ``msgRateOut`` and ``msgRateRedeliver`` — the rates Pulsar computes over
its stats interval. :class:`BacklogView` is a :class:`~.base.View` of that history over a
polling source — :class:`~.cluster_source.ClusterSource` polls a cluster's (or pulsarlab's)
admin API with its back-off and "stale since" label: each poll is a step of its
:class:`~.stepper.Stepper` (scrub, pin, stills, the static picture of a saved notebook).
"""

from __future__ import annotations

import html
from collections import deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import ipywidgets
import plotly.graph_objects as go

from .base import View
from .source import BrokerEvent, Snapshot

__all__ = ["BacklogView", "LagHistory", "LagSample", "lag_sample"]

SERIES = {
    "backlog": "backlog (entries)",
    "unacked": "unacked",
    "rate_in": "in (msg/s)",
    "rate_out": "out (msg/s)",
    "rate_redeliver": "redelivered (msg/s)",
}


@dataclass(frozen=True)
class LagSample:
    """One moment of a subscription's lag."""

    time_ms: int
    backlog: int
    unacked: int
    rate_in: float
    rate_out: float
    rate_redeliver: float


def lag_sample(snapshot: Snapshot, subscription: str) -> LagSample | None:
    """The subscription's lag in ``snapshot`` (None where no partition has it)."""
    subs = [(stats, (stats.get("subscriptions") or {}).get(subscription))
            for stats in snapshot.topics.values()]
    subs = [(stats, sub) for stats, sub in subs if sub is not None]
    if not subs:
        return None
    return LagSample(
        time_ms=snapshot.time_ms,
        backlog=sum(int(sub.get("msgBacklog") or 0) for _, sub in subs),
        unacked=sum(int(sub.get("unackedMessages") or 0) for _, sub in subs),
        rate_in=sum(float(stats.get("msgRateIn") or 0.0) for stats, _ in subs),
        rate_out=sum(float(sub.get("msgRateOut") or 0.0) for _, sub in subs),
        rate_redeliver=sum(float(sub.get("msgRateRedeliver") or 0.0) for _, sub in subs),
    )


class LagHistory:
    """The last ``max_samples`` lag samples of one subscription (one per new snapshot)."""

    def __init__(self, subscription: str, max_samples: int = 720) -> None:
        if max_samples < 1:
            raise ValueError(f"max_samples must be at least 1, not {max_samples}")
        self.subscription = subscription
        self.samples: deque[LagSample] = deque(maxlen=max_samples)

    def add(self, snapshot: Snapshot) -> LagSample | None:
        sample = lag_sample(snapshot, self.subscription)
        if sample is not None and (not self.samples or sample.time_ms > self.samples[-1].time_ms):
            self.samples.append(sample)
        return sample

    def series(self, name: str) -> list[float]:
        return [getattr(s, name) for s in self.samples]

    def rows(self) -> list[dict[str, Any]]:
        return [asdict(s) for s in self.samples]


def _time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M:%S")


class BacklogView(View):
    """A subscription's lag over time from a polling source (``%pulsar show lag``).

    A view like the others (:mod:`.stepper`): each new stats poll is a step labelled with
    its UTC time, the slider under the plot scrubs back, ``at(n)`` / ``pin()`` hold one,
    ``still(n)`` is a picture of one, and a displayed view carries the static picture of the
    step it shows. A step's state is the samples up to that poll."""

    _history_fields = ("samples",)

    def __init__(self, source: Any, subscription: str | None = None,
                 max_samples: int = 720) -> None:
        super().__init__(source)
        self.lag = LagHistory(subscription or source.subscription, max_samples)
        self.samples: tuple[LagSample, ...] = ()
        figure = go.Figure(layout={
            "title": f"lag of {self.lag.subscription}", "height": 320,
            "yaxis": {"title": "messages"},
            "yaxis2": {"title": "msg/s", "overlaying": "y", "side": "right"},
            "margin": {"l": 50, "r": 50, "t": 40, "b": 30}})
        for name, label in SERIES.items():
            figure.add_scatter(name=label, mode="lines+markers",
                               yaxis="y2" if name.startswith("rate") else "y")
        self.fig = go.FigureWidget(figure)
        self.table = ipywidgets.HTML()
        status = getattr(source, "label", None)  # a polling source's "stale since" line
        self._bind([self.fig, *([status] if status is not None else []), self.table])

    @property
    def subscription(self) -> str:
        return self.lag.subscription

    def _update(self, snapshot: Snapshot, events: list[BrokerEvent]) -> None:
        self.lag.add(snapshot)
        self.samples = tuple(self.lag.samples)

    def _step_label(self, snapshot: Snapshot) -> str:
        return _time(snapshot.time_ms)

    def summary(self, state: Any = None) -> dict[str, Any]:
        """The last sample of ``state`` (default: the latest) and how many there are."""
        samples = (self if state is None else state).samples
        return {"subscription": self.subscription, "samples": len(samples),
                "last": asdict(samples[-1]) if samples else None}

    def draw(self, state: Any) -> None:
        samples = state.samples
        times = [datetime.fromtimestamp(s.time_ms / 1000, UTC) for s in samples]
        with self.fig.batch_update():
            for trace, name in zip(self.fig.data, SERIES, strict=True):
                trace.x, trace.y = times, [getattr(s, name) for s in samples]
        self.table.value = _table_html(self.subscription, samples)

    def static_html(self, last: int = 10) -> str:
        """The last samples of the step shown as an HTML table."""
        samples = self.stepper.state_of(self).samples if len(self.history) else ()
        return _table_html(self.subscription, samples, last)

    @property
    def running(self) -> bool:
        return bool(getattr(self.source, "running", False))

    def stop(self) -> None:
        stop = getattr(self.source, "stop", None)
        if stop is not None:
            stop()


def _table_html(subscription: str, samples: Sequence[LagSample], last: int = 10) -> str:
    """The last ``last`` samples as an HTML table (the caption of the static picture)."""
    head = "".join(f"<th>{html.escape(label)}</th>" for label in SERIES.values())
    body = "".join(
        f"<tr><td>{_time(s.time_ms)}</td>"
        + "".join(f"<td>{_fmt(getattr(s, n))}</td>" for n in SERIES) + "</tr>"
        for s in list(samples)[-last:])
    return (f"<b>lag of {html.escape(subscription)}</b>"
            f"<table><tr><th>UTC</th>{head}</tr>{body}</table>")


def _fmt(value: Any) -> str:
    return f"{value:.1f}" if isinstance(value, float) else str(value)
