"""Tutorials 03, 04, 05, 09, 13, 14, 16 and 17 in Chromium: each pinned view draws the
numbers its text gives.

For every view cell (and still) of these tutorials, :data:`PINNED` lists what the text beside
it tells the reader to see — which consumer owns which range and keys, permits and unacked
counts, redelivery counts, who got which message at which step — as words the picture must
carry and, for the live view after Run All, checks of the traces plotly drew (read from the
page: ``_fullData`` and the drawn points). The committed outputs (what GitHub shows, before
any cell runs) are checked for the same words in their SVG pictures.

Screenshots of every view land in the artefact folder (see ``conftest.py``).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .conftest import TUTORIALS
from .lab import Lab, Shown, code_cell, open_and_run_all, open_committed, shown_picture


@dataclass(frozen=True)
class Pinned:
    """A view cell, found by a line of its source, and what its picture must show."""

    cell: str
    step: str
    """The step the picture names (``step N: label``); a live view's bar shows the label."""
    words: tuple[str, ...]
    """Text the picture carries, committed and live (its title, axes, table)."""
    drawn: Callable[[Shown], None] | None = None
    """A check of the live view's traces (a still is an image: words only)."""
    static: tuple[str, ...] = ()
    """Text only a static picture carries as text (a WebGL trace's labels are pixels)."""


def _by_key(shown: Shown, trace: str, pattern: str, plot: int = 0) -> dict[str, tuple[str, str]]:
    """Key → (owner, drawn colour) of a trace whose hover text names key and owner."""
    keys = shown.trace(trace, plot)
    colors = keys["color"] * len(keys["hovertext"]) if len(keys["color"]) == 1 else keys["color"]
    found = {}
    for text, color in zip(keys["hovertext"], colors, strict=True):
        match = re.search(pattern, text)
        assert match, (pattern, text)
        found[match["key"]] = (match["owner"], color)
    return found


def _owners(found: dict[str, tuple[str, str]]) -> dict[str, list[str]]:
    by_owner: dict[str, list[str]] = {}
    for key, (owner, _) in sorted(found.items()):
        by_owner.setdefault(owner, []).append(key)
    return by_owner


def _apart(points: list[list[float]], size: float) -> None:
    """Every two drawn points at least ``size`` px apart (no marker hides another)."""
    for a, b in itertools.combinations(points, 2):
        assert math.dist(a, b) >= size, (a, b, points)


# -- 03: hash ranges -------------------------------------------------------------------------

RANGE_KEY = r"'(?P<key>[^']+)' → hash \d+, slot \d+, owner (?P<owner>\w+)"


def _range_colors(shown: Shown) -> dict[str, str]:
    """Consumer → the colour of its range bars."""
    bars = shown.trace("ranges")
    return {text.split()[0]: color for text, color in zip(bars["text"], bars["color"],
                                                          strict=True)}


def _drawn_03_auto_split(shown: Shown) -> None:
    keys = _by_key(shown, "keys", RANGE_KEY)
    assert _owners(keys) == {
        "C1": ["Order-3459130", "Order-3459133", "Order-3459135", "Order-3459140"],
        "C2": ["Order-3459131", "Order-3459132", "Order-3459136", "Order-3459141"],
        "C3": ["Order-3459134", "Order-3459139"],
        "C4": ["Order-3459137", "Order-3459138"],
    }
    colors = _range_colors(shown)
    assert all(color == colors[owner] for owner, color in keys.values()), (keys, colors)
    # Order-3459134 (slot 6067) sits in C3's range [0, 16384]
    bars, key = shown.trace("ranges"), shown.trace("keys")
    c3 = bars["text"].index("C3 [0, 16384]")
    x = key["x"][next(i for i, t in enumerate(key["hovertext"]) if "'Order-3459134'" in t)]
    assert x == 6067 and bars["base"][c3] <= x <= bars["base"][c3] + bars["x"][c3]
    moved = shown.trace("moved in this step")
    assert moved["hovertext"] == ["Order-3459137 moved to C4", "Order-3459138 moved to C4"]
    assert len(moved["points"]) == 2  # outlined on the page


def _drawn_03_sticky(shown: Shown) -> None:
    keys = _by_key(shown, "keys", RANGE_KEY)
    assert _owners(keys) == {"C1": ["Order-3459134"], "C2": ["Order-10"]}
    assert shown.trace("keys")["text"] == ["Order-3459134", "Order-10"]  # two keys: named
    colors = _range_colors(shown)
    assert all(color == colors[owner] for owner, color in keys.values()), (keys, colors)


# -- 04: the consistent-hash ring -------------------------------------------------------------

def _drawn_04_ring(counts: dict[str, int], moved: int) -> Callable[[Shown], None]:
    """60 keys, ``counts`` per consumer (the table's *keys* column), each key in its owner's
    colour, and ``moved`` keys ringed as moved in this step."""
    def check(shown: Shown) -> None:
        keys = _by_key(shown, "keys", RING_KEY)
        assert len(keys) == 60
        assert {o: len(ks) for o, ks in _owners(keys).items()} == counts
        colors = _ring_colors(shown, sorted(counts))
        assert all(color == colors[owner] for owner, color in keys.values()), (keys, colors)
        assert len(shown.trace("moved in this step")["hovertext"]) == moved
    return check


# -- 05: flow --------------------------------------------------------------------------------

def _drawn_05_waiting(shown: Shown) -> None:
    last = {name: shown.trace(name)["y"][-1]
            for name in ("C1 permits", "C1 unacked", "C2 permits", "C2 unacked")}
    assert last == {"C1 permits": 0, "C1 unacked": 20, "C2 permits": 10, "C2 unacked": 0}
    # the x axis counts the slider's steps: the last point is step 5
    assert shown.trace("C1 permits")["x"][-1] == 5
    waits, holds = shown.trace("waits for mark-delete"), shown.trace("holds mark-delete back")
    assert (waits["x"][-1], waits["y"][-1]) == (5, 10)  # on C2's permits
    assert (holds["x"][-1], holds["y"][-1]) == (5, 20)  # on C1's unacked


# -- 09: redelivery timeline -----------------------------------------------------------------

def _marks(shown: Shown, kind: str) -> list[tuple[str, int]]:
    """(message position, redelivery count) of each mark of ``kind``, in time order."""
    trace = shown.trace(kind)
    marks = sorted(zip(trace["x"], trace["customdata"], strict=True), key=lambda m: m[0])
    return [(f"{int(cd[0])}:{int(cd[1])}", int(cd[2])) for _, cd in marks]


def _drawn_09_poison(shown: Shown) -> None:
    poison = [m for m in _marks(shown, "dispatched") if m[0] == "0:1"]
    assert poison == [("0:1", 0), ("0:1", 1), ("0:1", 2), ("0:1", 3)]  # seen four times
    assert [p for p, _ in _marks(shown, "nacked")] == ["0:1"] * 3  # three nacks, not four
    assert [p for p, _ in _marks(shown, "dead-lettered")] == ["0:1"]
    assert sorted(p for p, _ in _marks(shown, "acked")) == ["0:0", "0:1", "0:2"]
    dispatched = shown.trace("dispatched")
    labels = sorted(t for t in dispatched["text"] if t)
    assert labels == ["↻1", "↻2", "↻3"]


# -- 13: a recorded cluster's stats -----------------------------------------------------------

def _drawn_13_stats(shown: Shown) -> None:
    ranges = shown.trace("ranges")
    drawn = {text: (base, base + width - 1)
             for text, base, width in zip(ranges["text"], ranges["base"], ranges["x"],
                                          strict=True)}
    # the ranges the summary printed, one bar each
    assert drawn == {"fulfilment-7f9c-a": (49153, 65536), "fulfilment-7f9c-b": (16385, 32768),
                     "fulfilment-7f9c-c": (0, 16384), "fulfilment-7f9c-d": (32769, 49152)}
    assert len(set(ranges["color"])) == 4  # a colour per consumer
    backlog = shown.trace("backlog")
    assert dict(zip(backlog["x"], backlog["y"], strict=True)) == {"fulfilment": 26,
                                                                  "audit-archiver": 1}


# -- 14 and 16: hash rings -------------------------------------------------------------------

RING_KEY = r"'(?P<key>[^']+)': hash \d+ → (?P<owner>[\w-]+)"


def _ring_colors(shown: Shown, names: list[str]) -> dict[str, str]:
    """Consumer → its legend colour."""
    return {name: shown.trace(name)["color"][0] for name in names}


def _drawn_14_ring(shown: Shown) -> None:
    keys = _by_key(shown, "keys", RING_KEY)
    assert _owners(keys) == {"official-a": ["Order-1", "Order-4", "Order-7", "Order-8"],
                             "official-b": ["Order-2", "Order-3", "Order-5", "Order-6"]}
    colors = _ring_colors(shown, ["official-a", "official-b"])
    assert all(color == colors[owner] for owner, color in keys.values()), (keys, colors)
    points = shown.trace("keys")["points"]
    assert len(points) == 8
    _apart(points, 8)  # every key's diamond can be seen


def _drawn_16_ring(version: str, owners: dict[str, str]) -> Callable[[Shown], None]:
    def check(shown: Shown) -> None:
        keys = _by_key(shown, "keys", RING_KEY)
        assert len(keys) == 60
        assert {k: keys[k][0] for k in owners} == owners, version
        colors = _ring_colors(shown, ["c1", "c2", "c3"])
        assert all(color == colors[owner] for owner, color in keys.values()), version
    return check


# -- 16: the 3.3 vs 4.0 comparison -----------------------------------------------------------

def _deliveries(shown: Shown) -> dict[str, list[tuple[int, str, str]]]:
    """Per version panel: (step, consumer, position) of each delivery drawn."""
    names = {"x": "3.3", "x2": "4.0"}
    found: dict[str, list[tuple[int, str, str]]] = {"3.3": [], "4.0": []}
    for trace in shown.plots[0]["traces"]:
        if trace["name"].startswith("c") or trace["name"] in ("fast", "slow"):
            for x, text in zip(trace["x"], trace["text"], strict=True):
                found[names[trace["xaxis"]]].append((round(x), trace["name"], text))
    return {version: sorted(ds) for version, ds in found.items()}


def _drawn_16_replayed(shown: Shown) -> None:
    assert _deliveries(shown) == {
        "3.3": [(2, "c1", "0:0"), (3, "c3", "0:1"), (6, "c3", "0:2")],
        "4.0": [(2, "c1", "0:0"), (4, "c3", "0:1"), (5, "c3", "0:2")],
    }
    ring = shown.trace("first out of order")
    assert (ring["xaxis"], ring["x"]) == ("x", [3])  # on 3.3's 0:1, none on 4.0
    # the ring leaves c3's colour visible: an open marker around the point
    assert len(ring["points"]) == 1


def _drawn_16_held(shown: Shown) -> None:
    fast = {version: [step for step, consumer, _ in ds if consumer == "fast"]
            for version, ds in _deliveries(shown).items()}
    assert fast == {"3.3": [3, 3], "4.0": [5, 5]}
    assert all(len(ds) == 6 for ds in _deliveries(shown).values())


# -- 17: a cluster's stuck Key_Shared subscription -------------------------------------------

def _drawn_17_flow(shown: Shown) -> None:
    last = {name: shown.trace(name)["y"][-1] for name in
            ("worker-1 permits", "worker-1 unacked", "worker-2 permits", "worker-2 unacked")}
    # as `%pulsar stats` printed: worker-1 blocked with 10 unacked, worker-2 4 permits
    assert last == {"worker-1 permits": 1, "worker-1 unacked": 10, "worker-2 permits": 4,
                    "worker-2 unacked": 0}
    waits, holds = shown.trace("waits for mark-delete"), shown.trace("holds mark-delete back")
    assert waits["y"][-1:] == [4] and len(waits["y"]) == len(waits["points"])  # on worker-2
    assert holds["y"][-1:] == [10] and len(holds["y"]) == len(holds["points"])  # worker-1


def _drawn_17_cursor(shown: Shown) -> None:
    cells = [text.split(": ", 1) for text in shown.trace("trace 0")["hovertext"][0]]
    states = dict(cells)
    # mark-delete 0:-1: nothing acked before worker-1's first message, 0:0
    assert "acked" not in states.values()
    assert "delivered, unacked" not in states.values()  # the cluster does not say
    # the hole: worker-2 acknowledged the one message it got, 0:10
    assert [p for p, state in cells if state == "individually acked"] == ["0:10"]
    assert next(p for p, state in cells if state == "unread") == "0:15"  # the read position
    assert len(cells) == 60  # the 60 orders sent


PINNED: dict[str, list[Pinned]] = {
    "03-key-shared-hash-ranges.ipynb": [
        Pinned('view.show_step("add consumer C4")   # the step this section describes',
               "step 4: add consumer C4",
               ("AUTO_SPLIT hash ranges — 4 consumer(s)", "C3 [0, 16384]", "C2 [16385, 32768]",
                "C4 [32769, 49152]", "C1 [49153, 65536]",
                "moved: Order-3459137, Order-3459138"),
               _drawn_03_auto_split),
        Pinned("sticky_view", "step 2: add consumer C2",
               ("STICKY hash ranges — 2 consumer(s)", "C1 [0, 16383]", "C2 [16384, 32767]",
                "C1 [32768, 49151]", "C2 [49152, 65535]", "Order-3459134"),
               _drawn_03_sticky),
    ],
    "04-consistent-hashing.ipynb": [
        Pinned('ring_view.show_step("add consumer C3")   # three consumers, as printed below',
               "step 3: add consumer C3",
               # the shares the next cell prints, and the keys each consumer owns
               ("consistent-hash ring — 3 consumer(s), 300 points, 64 arc(s) changed owner",
                "C1 100 35.51% 26", "C2 100 37.12% 20", "C3 100 27.37% 14"),
               _drawn_04_ring({"C1": 26, "C2": 20, "C3": 14}, 14)),
        # C4 took 10 keys from C1, C2 and C3; the shares the cell below it prints
        Pinned('ring_view.still("add consumer C4")', "step 4: add consumer C4",
               ("consistent-hash ring — 4 consumer(s), 400 points, 72 arc(s) changed owner",
                "C1 100 26.54% 23", "C2 100 25.74% 15", "C3 100 21.85% 12",
                "C4 100 25.87% 10", "this step moved 10 of 60 keys")),
    ],
    "05-key-shared-ordering.ipynb": [
        Pinned("view.pin()   # this step; the cells below go on changing the what-if",
               "step 5: publish k0, k1, k2, k3 … (20 messages)",
               ("C1: 0 permits, 20 unacked · C2: 10 permits, 0 unacked",
                "waiting for the mark-delete: C2 · holding it back: C1", "step",
                "C2 10 0 0 recently joined: gets only entries before 0:20"),
               _drawn_05_waiting),
        Pinned("view.still()   # after the acks: C2's permits are in use", "step 8: C1 acks",
               ("C1: 5 permits, 5 unacked · C2: 0 permits, 10 unacked", "C2 0 10 10")),
    ],
    "09-retry-and-dead-letter.ipynb": [
        Pinned("timeline.pin()", "step 7: t = ",
               ("redelivery timeline — 3 message(s), 16 event(s)", "0:0", "0:1", "0:2",
                "nacked", "dead-lettered"),
               _drawn_09_poison, static=("↻1", "↻2", "↻3")),
    ],
    "13-operations-stats.ipynb": [
        Pinned("view", "step 0: loaded",
               ("fulfilment (3.x)", "key hash ranges", "backlog per subscription",
                "fulfilment: type Key_Shared, mode AUTO_SPLIT, backlog 26, unacked 20",
                # the consumers as the cell below prints them, and the diagnosis' numbers
                "fulfilment-7f9c-a 996 4 [49153, 65536]", "fulfilment-7f9c-b 0 12 [16385, 32768]",
                "fulfilment-7f9c-c 996 4 [0, 16384]",
                "fulfilment-7f9c-d 1000 0 [32769, 49152] recently joined, waits for "
                "mark-delete to pass 1290:1214"),
               _drawn_13_stats),
    ],
    "14-official-client.ipynb": [
        Pinned("ring.pin()   # both official consumers in; later cells go on", "step 4: t = ",
               ("consistent-hash ring — 2 consumer(s), 200 points", "official-a 100",
                "official-b 100"),
               _drawn_14_ring),
    ],
    "16-key-shared-3.3-vs-4.0.ipynb": [
        Pinned("view = CompareView(scenario)", "",
               ("Pulsar 3.3", "Pulsar 4.0", "scenario step",
                "Pulsar 3.3 3 deliveries first out-of-order delivery: 0:1 (order-5) to c3"
                " while 0:0 on c1 was unacked",
                "Pulsar 4.0 3 deliveries every key delivered in order"),
               _drawn_16_replayed),
        Pinned("held", "",
               ("Pulsar 3.3 6 deliveries every key delivered in order",
                "Pulsar 4.0 6 deliveries every key delivered in order"),
               _drawn_16_held),
        Pinned('rings["3.3"].pin()', "step 3: add consumer c3",
               ("consistent-hash ring — 3 consumer(s), 300 points, 65 arc(s) changed owner",
                "c1 100 30.61%", "c2 100 37.91%", "c3 100 31.48%"),
               _drawn_16_ring("3.3", {"user-2": "c1", "user-3": "c1", "user-5": "c1"})),
        Pinned('rings["4.0"].pin()', "step 3: add consumer c3",
               ("Pulsar 4.0 ring, 65,535 slots — 3 consumer(s), 300 points,"
                " 66 arc(s) changed owner", "c1 100 31.04%", "c2 100 32.65%", "c3 100 36.31%"),
               _drawn_16_ring("4.0", {"user-2": "c2", "user-3": "c2", "user-5": "c3"})),
    ],
    "17-operating-a-cluster.ipynb": [
        Pinned("flow.pin()      # this output keeps the step described here; later cells poll on",
               "step 1: t = ",
               ("worker-1: 1 permits, 10 unacked · worker-2: 4 permits, 0 unacked",
                "waiting for the mark-delete: worker-2 · holding it back: worker-1",
                "worker-1 1 — 10 holds the oldest unacked message",
                "worker-2 4 — 0 recently joined: gets only entries before 0:11 until the "
                "mark-delete (0:-1) passes it"),
               _drawn_17_flow),
        Pinned("cursor.pin()", "step 1: t = ",
               ("cursor of 'billing': mark-delete 0:-1, read 0:15, backlog 59",
                "holes (individually acked ranges) 1",
                # a cluster does not say which read entries were delivered: the stats' counts
                # (as `%pulsar stats` printed, unacked 10), not 14 "delivered"
                "read, unacked (delivered or in replay)", "read, unacked 14",
                "unacked 10, in replay 4"),
               _drawn_17_cursor),
    ],
}
"""Per tutorial, its view cells and what the text beside each says the reader sees."""


def _output(panel: Any, pinned: Pinned) -> Any:
    """The (last) output of ``pinned``'s cell."""
    from playwright.sync_api import expect

    cell = code_cell(panel, pinned.cell)
    expect(cell).to_have_count(1)
    return cell.locator(".jp-OutputArea-output").last


@pytest.mark.parametrize("notebook", sorted(PINNED), ids=lambda name: name[:2])
def test_committed_pictures_show_the_numbers_the_text_gives(
    lab: Lab, page: Any, artifacts: Path, notebook: str
):
    panel = open_committed(page, lab, next(p for p in TUTORIALS if p.name == notebook))
    for index, pinned in enumerate(PINNED[notebook]):
        output = _output(panel, pinned)
        output.scroll_into_view_if_needed()
        output.screenshot(path=str(artifacts / f"{notebook[:2]}-{index}.png"))
        shown = shown_picture(output)
        assert not shown.plots, f"{pinned.cell}: a live widget in a committed output"
        assert not shown.missing((pinned.step, *pinned.words, *pinned.static)), (
            pinned.cell, shown.texts)


@pytest.mark.parametrize("notebook", sorted(PINNED), ids=lambda name: name[:2])
def test_run_all_views_show_the_numbers_the_text_gives(
    lab: Lab, page: Any, artifacts: Path, notebook: str
):
    from playwright.sync_api import expect

    panel = open_and_run_all(page, lab, notebook)
    for index, pinned in enumerate(PINNED[notebook]):
        output = _output(panel, pinned)
        if pinned.drawn is None:  # a still: an image of its step
            expect(output.locator("img")).to_have_count(1)
        else:
            plots = output.locator(".js-plotly-plot")
            expect(plots.first).to_be_visible(timeout=60_000)
            for plot in range(plots.count()):  # drawn (newPlot done) before it is read
                expect(plots.nth(plot).locator(".main-svg").first).to_be_attached()
        output.scroll_into_view_if_needed()
        page.wait_for_timeout(300)  # a range bar's transition, for the screenshot
        output.screenshot(path=str(artifacts / f"{notebook[:2]}-{index}.png"))
        shown = shown_picture(output)
        # a live view's bar names the step's label; a still is a static picture
        words = ((pinned.step.split(": ", 1)[-1], *pinned.words) if pinned.drawn
                 else (pinned.step, *pinned.words, *pinned.static))
        assert not shown.missing(words), (pinned.cell, shown.texts)
        if pinned.drawn is not None:
            pinned.drawn(shown)
