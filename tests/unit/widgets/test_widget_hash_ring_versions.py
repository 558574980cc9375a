"""HashRingView draws the ring of the release the broker behaves like (3.3, 3.3.1, 4.0)."""

from __future__ import annotations

import re
from collections.abc import Callable
from types import SimpleNamespace

import pytest

from pulsarlab.broker.errors import InvalidArgument
from pulsarlab.broker.selectors import (
    ConsistentHashingStickyKeyConsumerSelector,
    ConsistentHashingStickyKeyConsumerSelector40,
    LegacyConsistentHashingStickyKeyConsumerSelector,
)
from pulsarlab.widgets import HashRingView, LiveBinding, WhatIf
from pulsarlab.widgets.hash_ring import degrees
from pulsarlab.widgets.keys import Probe, key_info, ring_of
from pulsarlab.widgets.source import EventLog, Palette, Snapshot

KEYS = [f"user-{i}" for i in range(60)]
NAMES = ("C1", "C2", "C3")


def _view(version: str, **kwargs: str) -> tuple[WhatIf, HashRingView]:
    whatif = WhatIf("Key_Shared", pulsar_version=version)
    view = HashRingView(whatif, KEYS, **kwargs)
    for name in NAMES:
        whatif.add_consumer(name)
    return whatif, view


def _dispatched(whatif: WhatIf) -> dict[str | None, str]:
    """Key → the consumer the broker core actually delivered its message to."""
    key_of = dict(zip(whatif.publish(KEYS), KEYS, strict=True))
    owner: dict[str | None, str] = {}
    for _round in range(len(KEYS)):  # a small receiver queue: receiving grants more permits
        got = {p: name for name in NAMES for p in whatif.receive(name)}
        if not got:
            break
        owner.update((key_of[p], name) for p, name in got.items())
    return owner


def test_a_40_view_owns_keys_as_the_40_selector_and_the_40_core_do():
    whatif, view = _view("4.0")
    assert isinstance(view.selector, ConsistentHashingStickyKeyConsumerSelector40)
    assert view.key_space == (1, 65535)
    reference: ConsistentHashingStickyKeyConsumerSelector40[Probe] = (
        ConsistentHashingStickyKeyConsumerSelector40(100)
    )
    for name in NAMES:
        reference.add_consumer(Probe(name))
    expected = {k: reference.select_for_key(k.encode()).consumer_name for k in KEYS}
    assert view.key_owners == expected
    assert _dispatched(whatif) == expected


def test_a_40_view_draws_the_16_bit_ring():
    _whatif, view = _view("4.0")
    assert sum(view.shares.values()) == pytest.approx(1.0, abs=1e-12)
    assert view.arcs[0][0] == 1 and view.arcs[-1][1] == 65535
    assert sum(e - s + 1 for s, e, _ in view.arcs) == 65535
    for start, end, owner in view.arcs:  # every arc is owned as the selector says
        assert view.selector.select(start).consumer_name == owner
        assert view.selector.select(end).consumer_name == owner
    hashes = {k: key_info(k, None, view.selector).hash for k in KEYS}
    assert all(1 <= h <= 65535 for h in hashes.values())
    assert sorted(view.fig.data[2].theta) == sorted(degrees(h, (1, 65535)) for h in hashes.values())
    assert all(0 <= t < 360 for t in view.fig.data[1].theta)
    assert sum(view.fig.data[0].width) == pytest.approx(360.0)
    assert "Pulsar 4.0" in view.fig.layout.title.text
    assert "65,535 slots" in view.fig.layout.title.text


def test_a_40_view_zooms_and_pictures_its_16_bit_ring():
    _whatif, view = _view("4.0")
    space = (1, 65535)

    def angle(key: str) -> float:
        return degrees(key_info(key, None, view.selector).hash, space)

    shown = [k for k in KEYS if (angle(k) - angle("user-7") + 20) % 360 <= 40]
    assert 0 < len(shown) < len(KEYS)
    zoomed = view.zoom("user-7", width=40).picture()
    low, high = view.fig.layout.polar.sector
    assert (low + high) / 2 == pytest.approx(90 - angle("user-7"))
    legend = 5  # C1..C3 and "changed owner in this step", "moved in this step"
    assert len(re.findall(r"<polygon points='[^']*' fill='#", zoomed)) == len(shown) + legend - 1
    assert "65,535 slots" in zoomed
    assert list(view.fig.layout.polar.angularaxis.ticktext) == ["1", "16,384", "32,768", "49,152"]


def test_a_40_view_shares_are_the_40_rings_counts():
    _whatif, view = _view("4.0")
    counts = dict.fromkeys(NAMES, 0)
    for h in range(1, 65536):
        counts[view.selector.select(h).consumer_name] += 1
    assert view.shares == {n: c / 65535 for n, c in counts.items()}


def test_a_40_view_previews_and_records_moves_on_its_ring():
    whatif, view = _view("4.0")
    would_move = view.preview("C4")
    whatif.add_consumer("C4")
    assert view.last_moved == would_move
    assert {view.key_owners[k] for k in would_move} <= {"C4"}
    assert all(0 <= s <= e <= 65535 for s, e, *_ in view.changed)
    assert view.owner_of_hash(65535) == view.selector.select(65535).consumer_name


def test_a_331_pin_draws_the_legacy_ring():
    _whatif, view = _view("3.3.1")
    assert isinstance(view.selector, LegacyConsistentHashingStickyKeyConsumerSelector)
    assert view.key_space == (0, 2**31 - 1)
    assert view.fig.layout.title.text.startswith("Pulsar 3.3.1 consistent-hash ring —")
    rebuilt = ring_of(NAMES, 100, "3.3.1")
    assert isinstance(rebuilt, LegacyConsistentHashingStickyKeyConsumerSelector)


def test_the_default_ring_keeps_its_title():
    _whatif, view = _view("3.3")
    assert isinstance(view.selector, ConsistentHashingStickyKeyConsumerSelector)
    assert view.fig.layout.title.text.startswith("consistent-hash ring —")


def test_an_explicit_version_overrides_the_source():
    whatif, view = _view("3.3", pulsar_version="4.0")
    assert isinstance(view.selector, ConsistentHashingStickyKeyConsumerSelector40)
    assert view.selector is not whatif.selector()  # rebuilt from the names, not the 3.3 core
    expected = {k: ring_of(NAMES, 100, "4.0").select_for_key(k.encode()).consumer_name
                for k in KEYS}
    assert view.key_owners == expected


def test_a_bad_version_is_a_one_line_error():
    with pytest.raises(InvalidArgument, match="pulsar_version"):
        HashRingView(WhatIf("Key_Shared"), KEYS, pulsar_version="four")


class _StatsOnly:
    """A source that knows only the stats (like a cluster's admin API)."""

    topic = "persistent://public/default/t"
    subscription = "s"
    simulated = False
    start_ms = 0

    def __init__(self, names: tuple[str, ...]) -> None:
        self.events = EventLog()
        self.palette = Palette()
        consumers = [{"consumerName": n} for n in names]
        self._snap = Snapshot(0, {self.topic: {"subscriptions": {"s": {"consumers": consumers}}}})

    def snapshot(self) -> Snapshot:
        return self._snap

    def on_change(self, callback: Callable[[], None]) -> None:
        del callback


@pytest.mark.parametrize(("override", "ring"), [
    (None, ConsistentHashingStickyKeyConsumerSelector),
    ("4.0", ConsistentHashingStickyKeyConsumerSelector40),
])
def test_a_stats_only_source_draws_33_unless_told(override, ring):
    kwargs = {"pulsar_version": override} if override else {}
    view = HashRingView(_StatsOnly(NAMES), KEYS, **kwargs)
    assert type(view.selector) is ring
    assert view.consumers == list(NAMES)
    assert sum(view.shares.values()) == pytest.approx(1.0, abs=1e-12)


def test_a_live_binding_for_an_in_kernel_broker_draws_its_ring(core_admin):
    whatif = WhatIf("Key_Shared", pulsar_version="4.0")
    for name in NAMES:
        whatif.add_consumer(name)
    broker = SimpleNamespace(service_url="zmq://127.0.0.1:1", events_url="tcp://127.0.0.1:2",
                             settings=whatif.settings)  # what a pulsarlab.Broker exposes
    binding = LiveBinding.for_broker(broker, whatif.topic, whatif.subscription,
                                     admin=core_admin(whatif.service))
    binding._render()  # one stats fetch, as the binding's thread does
    assert binding.snapshot().settings["pulsar_version"] == "4.0"
    view = HashRingView(binding, KEYS)
    assert isinstance(view.selector, ConsistentHashingStickyKeyConsumerSelector40)
    assert view.key_owners == {
        k: whatif.selector().select_for_key(k.encode()).consumer_name for k in KEYS
    }
