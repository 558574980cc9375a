"""Lag over time: a subscription's backlog, unacked count and rates, polled from its stats.

:class:`LagHistory` turns each stats :class:`~.source.Snapshot` into a :class:`LagSample`
(summed over the partitions): ``msgBacklog``, ``unackedMessages``, the topic's ``msgRateIn``,
the subscription's ``msgRateOut`` and ``msgRateRedeliver`` — the rates Pulsar computes over
its stats interval. :class:`BacklogView` plots the history live from any source with
``snapshot()``/``on_change()`` — :class:`~.cluster_source.ClusterSource` polls a cluster's
(or pulsarlab's) admin API with its back-off and "stale since" label — and has a static
picture (:meth:`BacklogView.static_html`) for saved notebooks.
"""

from __future__ import annotations

import html
from collections import deque
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from .base import prepare_display
from .source import Snapshot

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


class BacklogView:
    """A live plot of :class:`LagHistory` over a polling source (``%pulsar show lag``)."""

    def __init__(self, source: Any, subscription: str | None = None,
                 max_samples: int = 720) -> None:
        self.source = source
        self.history = LagHistory(subscription or source.subscription, max_samples)
        self._figure: Any = None
        self._widget: Any = None
        source.on_change(self.refresh)
        if source.snapshot() is not None:
            self.history.add(source.snapshot())

    def refresh(self) -> None:
        """Add the source's current snapshot and redraw (the source calls this)."""
        snapshot = self.source.snapshot()
        if snapshot is None or self.history.add(snapshot) is None:
            return
        if self._figure is not None:
            times = [datetime.fromtimestamp(s.time_ms / 1000, UTC) for s in self.history.samples]
            with self._figure.batch_update():
                for trace, name in zip(self._figure.data, SERIES, strict=True):
                    trace.x, trace.y = times, self.history.series(name)

    def widget(self) -> Any:
        """The ipywidgets box: the source's status label over a plotly figure."""
        if self._widget is None:
            import ipywidgets
            import plotly.graph_objects as go

            figure = go.FigureWidget(layout={
                "title": f"lag of {self.history.subscription}", "height": 320,
                "yaxis": {"title": "messages"},
                "yaxis2": {"title": "msg/s", "overlaying": "y", "side": "right"},
                "margin": {"l": 50, "r": 50, "t": 40, "b": 30}})
            for name, label in SERIES.items():
                figure.add_scatter(name=label, mode="lines+markers",
                                   yaxis="y2" if name.startswith("rate") else "y")
            self._figure = figure
            self.refresh()
            parts = [getattr(self.source, "label", None), figure]
            self._widget = ipywidgets.VBox([p for p in parts if p is not None])
        return self._widget

    def static_html(self, last: int = 10) -> str:
        """The last samples as an HTML table (what a saved notebook shows)."""
        head = "".join(f"<th>{html.escape(label)}</th>" for label in SERIES.values())
        body = "".join(
            f"<tr><td>{_time(s.time_ms)}</td>"
            + "".join(f"<td>{_fmt(getattr(s, n))}</td>" for n in SERIES) + "</tr>"
            for s in list(self.history.samples)[-last:])
        return (f"<b>lag of {html.escape(self.history.subscription)}</b>"
                f"<table><tr><th>UTC</th>{head}</tr>{body}</table>")

    def _repr_mimebundle_(self, **kwargs: Any) -> Mapping[str, Any]:
        widget = self.widget()
        prepare_display(widget)
        bundle = dict(widget._repr_mimebundle_(**kwargs))
        bundle["text/html"] = self.static_html()
        bundle["text/plain"] = f"BacklogView({self.history.subscription!r}, " \
                               f"{len(self.history.samples)} samples)"
        return bundle

    @property
    def running(self) -> bool:
        return bool(getattr(self.source, "running", False))

    def stop(self) -> None:
        stop = getattr(self.source, "stop", None)
        if stop is not None:
            stop()


def _fmt(value: Any) -> str:
    return f"{value:.1f}" if isinstance(value, float) else str(value)
