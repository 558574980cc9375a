"""Property test: random add/sync/rollover/trim/restart/crash runs agree with a list model."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsarlab.broker.storage import (
    DurableStorage,
    LedgerConfig,
    ManagedLedger,
    MemoryStorage,
    Storage,
)

TOPIC = "persistent://public/default/model"
CONFIG = LedgerConfig(
    max_entries_per_ledger=4,
    min_ledger_rollover_time_ms=0,
    max_ledger_rollover_time_ms=1,
    journal_sync_data=False,
    cache_size_bytes=64,
)

operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.binary(min_size=1, max_size=40)),
        st.tuples(st.just("sync"), st.none()),
        st.tuples(st.just("rollover"), st.none()),
        st.tuples(st.just("trim"), st.integers(min_value=0, max_value=30)),
        st.tuples(st.just("restart"), st.none()),
        st.tuples(st.just("crash"), st.none()),
    ),
    max_size=40,
)


class Model:
    """Ledgers as ``[ledger_id, confirmed entries]`` plus the entries not yet synced."""

    def __init__(self, ml: ManagedLedger) -> None:
        self.ledgers: list[tuple[int, list[bytes]]] = [(ml.last_confirmed[0], [])]
        self.pending: list[bytes] = []
        self.highest_id = self.ledgers[0][0]

    def sync(self) -> None:
        self.ledgers[-1][1].extend(self.pending)
        self.pending = []

    def roll(self, new_id: int) -> None:
        """Close the current ledger (syncing it) and start ``new_id``, a never-used id."""
        assert new_id > self.highest_id
        self.highest_id = new_id
        self.sync()
        self.ledgers.append((new_id, []))

    def reopen(self, ml: ManagedLedger) -> None:
        """Open after close or crash: the last ledger is closed, empty ledgers dropped."""
        self.roll(ml.last_confirmed[0])
        self.ledgers = [ledger for ledger in self.ledgers[:-1] if ledger[1]] + self.ledgers[-1:]

    def positions(self) -> list[tuple[tuple[int, int], bytes]]:
        return [((lid, e), data) for lid, entries in self.ledgers for e, data in enumerate(entries)]


def check(ml: ManagedLedger, model: Model) -> None:
    current_id, current = model.ledgers[-1]
    assert ml.last_confirmed == (current_id, len(current) - 1)
    assert ml.last_added == (current_id, len(current) + len(model.pending) - 1)
    assert [(i.ledger_id, i.entries) for i in ml.ledgers] == [
        (lid, len(entries)) for lid, entries in model.ledgers
    ]
    expected = model.positions()
    assert ml.read_entries(ml.first_position(), 1000) == expected
    assert ml.count_entries((-1, 0), ml.last_confirmed) == len(expected)
    walked, position = [], ml.next_position(ml.previous_position(ml.first_position()))
    while position <= ml.last_confirmed:
        walked.append(position)
        position = ml.next_position(position)
    assert walked == [p for p, _ in expected]
    for (p, _), (q, _) in itertools.pairwise(expected):
        assert ml.previous_position(q) == p
    for k, (p, data) in enumerate(expected):
        assert ml.read_entries(p, 2) == expected[k : k + 2]
        assert ml.read_entry(p) == data


def run(kind: str, data_dir: Path, ops: list[tuple[str, object]]) -> None:
    def make() -> Storage:
        return MemoryStorage() if kind == "memory" else DurableStorage(data_dir)

    storage, abandoned = make(), []
    ml = storage.open_ledger(TOPIC, CONFIG, 0)
    model = Model(ml)
    try:
        for now, (op, arg) in enumerate(ops, start=1):
            if op == "add":
                full = len(model.ledgers[-1][1]) + len(model.pending) >= 4
                position = ml.add_entry(arg, now)
                if full:
                    model.roll(position[0])
                model.pending.append(arg)
                assert position == (
                    model.ledgers[-1][0],
                    len(model.ledgers[-1][1]) + len(model.pending) - 1,
                )
            elif op == "sync":
                ml.sync()
                model.sync()
            elif op == "rollover":
                non_empty = bool(model.ledgers[-1][1] or model.pending)
                assert ml.maybe_rollover(now + 10) == non_empty
                if non_empty:
                    model.roll(ml.last_confirmed[0])
            elif op == "trim":
                targets = [p for p, _ in model.positions()] + [ml.last_confirmed]
                mark = targets[arg % len(targets)]
                expected = [
                    lid for lid, entries in model.ledgers[:-1] if (lid, len(entries) - 1) <= mark
                ]
                assert ml.trim(mark) == expected
                model.ledgers = [ledger for ledger in model.ledgers if ledger[0] not in expected]
            elif op == "restart" or kind == "memory":
                storage.close()
                if kind == "durable":
                    storage = make()
                ml = storage.open_ledger(TOPIC, CONFIG, now)
                model.reopen(ml)
            else:  # crash: abandon without close; what sync() confirmed must be there
                abandoned.append(storage)
                storage = make()
                ml = storage.open_ledger(TOPIC, CONFIG, now)
                current_id, current = model.ledgers[-1]
                found = {info.ledger_id: info.entries for info in ml.ledgers}
                extra = found.get(current_id, 0) - len(current)
                assert 0 <= extra <= len(model.pending)
                model.pending = model.pending[:extra]
                model.reopen(ml)
            check(ml, model)
    finally:
        storage.close()
        for old in abandoned:
            for ledger in list(old._open.values()):
                ledger._store_release()
            old.metadata.close()


@pytest.mark.parametrize("kind", ["memory", "durable"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=operations)
def test_ledger_matches_model(kind: str, ops: list[tuple[str, object]]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        run(kind, Path(directory) / "data", ops)
