"""CompareView: one Key_Shared scenario on Pulsar 3.3 and on Pulsar 4.0, side by side.

The same steps — consumers joining and leaving, keys published, messages received, acked
and nacked, time passing — are applied to one :class:`~.whatif.WhatIf` core per version
(``pulsar_version="3.3"``: the classic "recently joined consumers" rule; ``"4.0"``: PIP-379
draining hashes). Each core's broker events are then read back as per-key delivery order:
a delivery of key K at position p to consumer X is *out of order* when an earlier message
of K is neither acknowledged nor pending on X itself (another consumer still holds it, or
it was not delivered yet). The chart has one row per version: x is the scenario step, y the
key, one marker per delivery in the consumer's colour, a grey line joining each key's
deliveries in the order they happened, and a red cross on the first out-of-order delivery.

A scenario is a list of steps (tuples)::

    ("join", "c1")                    # subscribe (receiver queue = permits granted)
    ("join", "c2", {"receiver_queue_size": 1})
    ("leave", "c1")
    ("publish", ["k1", "k2"])         # one message per key
    ("receive", "c1")                 # the application takes what is queued
    ("ack", "c1")                     # receive, then ack everything received
    ("ack", "c1", [(0, 3)])           # ... or only these positions
    ("nack", "c1")                    # redeliver what was received
    ("flow", "c1", 5)                 # extra permits
    ("advance", 1000)                 # move the simulated clock

After every step both cores' clocks move on by ``settle_ms`` (10 ms, Pulsar 4.0's
``keySharedUnblockingIntervalMs``), so a read 4.0 schedules after a released hash shows up
within the step that released it.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import ipywidgets
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pulsarlab.broker.events import Acked, ConsumerRemoved, Dispatched, RedeliveryRequested

from .base import prepare_display
from .pulsar_stats import Position
from .source import BrokerEvent, Palette
from .static import html_to_lines, picture_bundle, picture_svg
from .whatif import WhatIf

__all__ = ["CompareView", "Delivery", "KeyOrder", "Step", "find_moving_key"]

Step = tuple[Any, ...]
_STEPS = ("join", "leave", "publish", "receive", "ack", "nack", "flow", "advance")


@dataclass(frozen=True)
class Delivery:
    """One message handed to a consumer by the broker."""

    step: int
    consumer: str
    key: str | None
    position: Position
    redelivery_count: int
    out_of_order: bool = False
    held_elsewhere: tuple[tuple[str, Position], ...] = ()
    """Earlier messages of the key another consumer held at that moment."""
    not_yet_delivered: tuple[Position, ...] = ()
    """Earlier messages of the key no consumer had received yet."""


@dataclass
class KeyOrder:
    """Per-key delivery order read from one core's broker events."""

    keys: Mapping[Position, str | None]
    deliveries: list[Delivery] = field(default_factory=list)
    _pending: dict[str, set[Position]] = field(default_factory=dict)
    _acked: set[Position] = field(default_factory=set)

    def feed(self, step: int, events: Iterable[BrokerEvent]) -> None:
        """Apply one step's events (dispatches, acks, redeliveries, removed consumers)."""
        for event in events:
            consumer = event.consumer
            match event:
                case Dispatched() if consumer is not None:
                    for ledger, entry, count in event.entries:
                        self._delivered(step, consumer, (int(ledger), int(entry)), int(count))
                case Acked():
                    for position in event.positions:
                        p = (int(position[0]), int(position[1]))
                        self._acked.add(p)
                        for held in self._pending.values():
                            held.discard(p)
                case RedeliveryRequested() if consumer is not None:
                    held = self._pending.get(consumer, set())
                    for position in event.positions:
                        held.discard((int(position[0]), int(position[1])))
                case ConsumerRemoved() if consumer is not None:
                    self._pending.pop(consumer, None)

    def _delivered(self, step: int, consumer: str, position: Position, count: int) -> None:
        key = self.keys.get(position)
        earlier = [p for p, k in self.keys.items() if k == key and p < position]
        elsewhere = tuple(
            sorted(
                (other, p)
                for other, held in self._pending.items()
                if other != consumer
                for p in held
                if p in earlier
            )
        )
        held_anywhere = set().union(*self._pending.values()) if self._pending else set()
        missing = tuple(p for p in earlier if p not in self._acked and p not in held_anywhere)
        self.deliveries.append(
            Delivery(
                step, consumer, key, position, count,
                out_of_order=bool(elsewhere or missing),
                held_elsewhere=elsewhere,
                not_yet_delivered=missing,
            )
        )
        self._pending.setdefault(consumer, set()).add(position)

    @property
    def first_out_of_order(self) -> Delivery | None:
        return next((d for d in self.deliveries if d.out_of_order), None)


class CompareView(ipywidgets.VBox):
    """The same Key_Shared scenario on two broker versions, per-key delivery order drawn."""

    def __init__(
        self,
        scenario: Sequence[Step],
        *,
        versions: Sequence[str] = ("3.3", "4.0"),
        make_core: Callable[[str], WhatIf] | None = None,
        settle_ms: int = 10,
        **settings: Any,
    ) -> None:
        """``settings`` go to every core (broker settings, ``receiver_queue_size``);
        ``make_core(version)`` replaces the default
        ``WhatIf("Key_Shared", pulsar_version=version, **settings)``."""
        super().__init__()
        self.scenario = [tuple(step) for step in scenario]
        self.versions = list(versions)
        self.palette = Palette()
        make = make_core or _core_factory(settings)
        self.cores: dict[str, WhatIf] = {v: make(v) for v in self.versions}
        self.settle_ms = settle_ms
        self.message_keys: dict[Position, str | None] = {}
        self.orders: dict[str, KeyOrder] = {v: KeyOrder(self.message_keys) for v in self.versions}
        self.errors: dict[str, list[str]] = {v: [] for v in self.versions}
        self._seen = {v: len(core.events) for v, core in self.cores.items()}
        for index, step in enumerate(self.scenario):
            self._apply(index, step)
        self.fig = go.FigureWidget(self._figure())
        self.summary = ipywidgets.HTML(self.summary_html())
        self.children = [self.fig, self.summary]

    # -- running the scenario -------------------------------------------------------------

    def _apply(self, index: int, step: Step) -> None:
        if not step or step[0] not in _STEPS:
            raise ValueError(f"step {index}: unknown step {step!r}; expected one of {_STEPS}")
        for version, core in self.cores.items():
            try:
                self._apply_to(core, step)
            except (KeyError, ValueError) as exc:
                # Bad input is reported per core and the scenario goes on.
                self.errors[version].append(f"step {index} {step!r}: {exc}")
            core.advance(self.settle_ms)
            events, self._seen[version] = core.events.since(self._seen[version])
            self.orders[version].feed(index, events)

    def _apply_to(self, core: WhatIf, step: Step) -> None:
        kind, args = step[0], step[1:]
        if kind == "join":
            options = dict(args[1]) if len(args) > 1 else {}
            core.add_consumer(args[0], **options)
        elif kind == "leave":
            core.remove_consumer(args[0])
        elif kind == "publish":
            keys = [args[0]] if isinstance(args[0], str) or args[0] is None else list(args[0])
            for position, key in zip(core.publish(keys), keys, strict=True):
                self.message_keys[position] = key
        elif kind == "receive":
            core.receive(args[0])
        elif kind == "ack":
            core.receive(args[0])
            core.ack(args[0], _positions(args[1]) if len(args) > 1 else None)
        elif kind == "nack":
            core.receive(args[0])
            core.nack(args[0], _positions(args[1]) if len(args) > 1 else None)
        elif kind == "flow":
            core.flow(args[0], int(args[1]))
        else:
            core.advance(int(args[0]))

    # -- reading --------------------------------------------------------------------------

    def deliveries(self, version: str) -> list[Delivery]:
        return self.orders[version].deliveries

    def first_out_of_order(self, version: str) -> Delivery | None:
        return self.orders[version].first_out_of_order

    def key_sequence(self, version: str, key: str | None) -> list[tuple[str, Position]]:
        """``(consumer, position)`` of every delivery of ``key``, in delivery order."""
        return [(d.consumer, d.position) for d in self.deliveries(version) if d.key == key]

    # -- drawing --------------------------------------------------------------------------

    def _figure(self) -> go.Figure:
        rows = len(self.versions)
        figure = make_subplots(
            rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.12,
            subplot_titles=[f"Pulsar {v}" for v in self.versions],
        )
        keys = sorted({k for k in self.message_keys.values()}, key=lambda k: (k is None, k or ""))
        labels = {k: k if k is not None else "(no key)" for k in keys}
        for row, version in enumerate(self.versions, start=1):
            placed = self._placed(version)
            for key in keys:
                mine = [(x, d) for x, d in placed if d.key == key]
                if len(mine) > 1:
                    figure.add_trace(go.Scatter(
                        x=[x for x, _ in mine], y=[labels[key]] * len(mine), mode="lines",
                        line={"color": "#cfcfcf", "width": 1}, hoverinfo="skip",
                        showlegend=False,
                    ), row=row, col=1)
            for consumer in sorted({d.consumer for _, d in placed}):
                mine = [(x, d) for x, d in placed if d.consumer == consumer]
                figure.add_trace(go.Scatter(
                    x=[x for x, _ in mine], y=[labels[d.key] for _, d in mine],
                    mode="markers+text", name=consumer, legendgroup=consumer,
                    showlegend=row == 1, text=[f"{d.position[0]}:{d.position[1]}" for _, d in mine],
                    textposition="top center", textfont={"size": 9},
                    marker={"size": 11, "color": self.palette.color(consumer)},
                    hovertext=[_describe(d) for _, d in mine], hoverinfo="text",
                ), row=row, col=1)
            first = self.first_out_of_order(version)
            if first is not None:
                x = next(x for x, d in placed if d is first)
                figure.add_trace(go.Scatter(  # a ring: the consumer's colour stays visible
                    x=[x], y=[labels[first.key]], mode="markers", name="first out of order",
                    legendgroup="ooo", showlegend=True,
                    marker={"symbol": "circle-open", "size": 17, "color": "#c62828",
                            "line": {"width": 2}},
                    hovertext=[_describe(first)], hoverinfo="text",
                ), row=row, col=1)
        figure.update_xaxes(title_text="scenario step", row=rows, col=1)
        figure.update_xaxes(dtick=1)  # steps are whole numbers (plotly chose 2.5, 3.5 …)
        # room above the top key for its position labels (they touched the panel's top)
        figure.update_yaxes(range=[-0.6, len(keys) - 0.1])
        figure.update_layout(
            height=200 + 160 * rows, margin={"l": 60, "r": 20, "t": 50, "b": 40},
            legend={"orientation": "h", "y": -0.2},
        )
        return figure

    def _placed(self, version: str) -> list[tuple[float, Delivery]]:
        """Each delivery at its step, spread within the step in delivery order."""
        by_step: dict[int, list[Delivery]] = {}
        for d in self.deliveries(version):
            by_step.setdefault(d.step, []).append(d)
        placed = []
        for step, ds in by_step.items():
            for i, d in enumerate(ds):
                placed.append((step + (i + 1) / (len(ds) + 1) - 0.5, d))
        return placed

    def summary_html(self) -> str:
        rows = []
        for version in self.versions:
            first = self.first_out_of_order(version)
            verdict = (
                "every key delivered in order" if first is None
                else "first out-of-order delivery: " + _describe(first)
            )
            errors = "".join(f"<br><i>{html.escape(e)}</i>" for e in self.errors[version])
            rows.append(
                f"<tr><td><b>Pulsar {html.escape(version)}</b></td>"
                f"<td>{len(self.deliveries(version))} deliveries</td>"
                f"<td>{html.escape(verdict)}{errors}</td></tr>"
            )
        return "<table>" + "".join(rows) + "</table>"

    def summary_text(self) -> str:
        lines = []
        for version in self.versions:
            first = self.first_out_of_order(version)
            verdict = "in order" if first is None else "out of order: " + _describe(first)
            lines.append(f"Pulsar {version}: {len(self.deliveries(version))} deliveries, {verdict}")
        return "\n".join(lines)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The widget, plus a text summary and a static HTML table for non-live renderers."""
        prepare_display(self)
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        if isinstance(bundle, tuple):
            bundle = bundle[0]
        bundle = dict(bundle)
        bundle["text/plain"] = self.summary_text()
        bundle.update(picture_bundle(self.picture(), self.summary_text()))
        return bundle

    def picture(self) -> str:
        """An SVG of the chart and the summary table: what a notebook opened without a
        kernel (or on GitHub) shows, like every other view's picture."""
        return picture_svg([self.fig], html_to_lines(self.summary_html()),
                           " vs ".join(f"Pulsar {v}" for v in self.versions)
                           + ": per-key delivery order")


def _core_factory(settings: Mapping[str, Any]) -> Callable[[str], WhatIf]:
    def make(version: str) -> WhatIf:
        return WhatIf("Key_Shared", pulsar_version=version, **settings)

    return make


def find_moving_key(
    owner: str,
    newcomer: str | None,
    consumers: Sequence[str],
    *,
    versions: Sequence[str] = ("3.3", "4.0"),
    candidates: Iterable[str] | None = None,
    make_core: Callable[[str], WhatIf] | None = None,
) -> str:
    """A key that ``owner`` holds among ``consumers`` and ``newcomer`` takes when it joins
    (``newcomer=None``: that ``owner`` holds), on every one of ``versions``, asked of each
    version's own selector."""
    make = make_core or _core_factory({})
    pool = list(candidates) if candidates is not None else [f"order-{i}" for i in range(2000)]
    found = set(pool)
    for version in versions:
        core = make(version)
        for name in consumers:
            core.add_consumer(name)
        before = _owners(core, pool)
        found &= {k for k in pool if before[k] == owner}
        if newcomer is not None:
            core.add_consumer(newcomer)
            after = _owners(core, pool)
            found &= {k for k in pool if after[k] == newcomer}
    for key in pool:
        if key in found:
            return key
    raise ValueError(f"no candidate key for {owner!r} (then {newcomer!r}) on {versions}")


def _owners(core: WhatIf, keys: Iterable[str]) -> dict[str, str | None]:
    selector = core.selector()
    assert selector is not None
    out = {}
    for key in keys:
        consumer = selector.select_for_key(key.encode())
        out[key] = consumer.consumer_name if consumer is not None else None
    return out


def _positions(value: Any) -> list[Position]:
    return [(int(p[0]), int(p[1])) for p in value]


def _describe(d: Delivery) -> str:
    text = f"{d.position[0]}:{d.position[1]} ({d.key}) to {d.consumer}"
    if d.redelivery_count:
        text += f", redelivery {d.redelivery_count}"
    if d.held_elsewhere:
        held = ", ".join(f"{p[0]}:{p[1]} on {c}" for c, p in d.held_elsewhere)
        text += f" while {held} was unacked"
    if d.not_yet_delivered:
        text += " before " + ", ".join(f"{p[0]}:{p[1]}" for p in d.not_yet_delivered)
    return text
