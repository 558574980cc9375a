"""The entry cache: one byte budget for every topic of a storage, object overhead counted."""

from __future__ import annotations

from pathlib import Path

from pulsarlab.broker.storage import DurableStorage, LedgerConfig
from pulsarlab.broker.storage.entry_cache import ENTRY_OVERHEAD, RUN_OVERHEAD, EntryCache


def _cost(*sizes: int) -> int:
    """What one run of entries of these sizes counts against the budget."""
    return sum(sizes) + ENTRY_OVERHEAD * len(sizes) + RUN_OVERHEAD


def test_the_budget_counts_overhead_and_evicts_the_oldest_runs() -> None:
    cache = EntryCache(capacity=10 * _cost(100))
    for i in range(25):
        cache.put((1, i), bytes(100))
    assert len(cache) == 10
    assert cache.size == 10 * _cost(100)
    assert cache.get((1, 14)) is None and cache.get((1, 15)) == bytes(100)
    cache.put((1, 24), bytes(50))  # replacing an entry re-counts it
    assert cache.size == 9 * _cost(100) + _cost(50) and cache.get((1, 24)) == bytes(50)


def test_a_run_costs_its_bytes_plus_little_per_entry() -> None:
    cache = EntryCache(capacity=1 << 20)
    cache.put_run(1, 0, [bytes(100)] * 1000)
    assert cache.size == _cost(*[100] * 1000) < 1000 * 110
    assert len(cache) == 1000 and cache.get_run(1, 998, 1001) == [bytes(100)] * 2 + [None] * 2


def test_too_big_runs_and_a_zero_budget_cache_nothing() -> None:
    cache = EntryCache(capacity=1000)
    cache.put((1, 0), bytes(1000))
    assert len(cache) == 0 and cache.size == 0
    empty = EntryCache(0)
    empty.put((1, 0), b"x")
    assert len(empty) == 0


def test_dropping_a_ledger_keeps_the_others() -> None:
    cache = EntryCache(capacity=1 << 20)
    for ledger in (1, 2):
        for i in range(5):
            cache.put((ledger, i), b"data")
    cache.drop_ledger(1)
    cache.drop_ledger(7)  # nothing cached: a no-op
    assert len(cache) == 5 and all(cache.get((2, i)) == b"data" for i in range(5))
    assert cache.size == 5 * _cost(4)


def test_a_hundred_topics_share_one_budget(tmp_path: Path) -> None:
    storage = DurableStorage(tmp_path / "data")
    budget = 64 * 1024
    ledgers = [
        storage.open_ledger(f"persistent://public/default/t{i}", LedgerConfig(
            cache_size_bytes=budget), 0)
        for i in range(100)
    ]
    for round_ in range(20):
        for ml in ledgers:
            ml.add_entry(b"%03d" % round_ + bytes(97), 0)
            ml.sync()
    assert 0 < storage.entry_cache.size <= budget
    # The latest entries are served from memory, the older ones from disk, all correct.
    for ml in ledgers[::10]:
        got = [data for _, data in ml.read_entries(ml.first_position(), 100)]
        assert got == [b"%03d" % r + bytes(97) for r in range(20)]
    for ml in ledgers[:50]:
        ml.close()
    assert storage.entry_cache.size <= budget
    assert all(p[0] not in {m.ledgers[-1].ledger_id for m in ledgers[:50]}
               for p in storage.entry_cache.positions())
    storage.close()
    assert len(storage.entry_cache) == 0


def test_runs_are_evicted_whole_oldest_first_and_reads_span_runs() -> None:
    cache = EntryCache(capacity=3 * _cost(*[100] * 4))
    for first in range(0, 20, 4):
        cache.put_run(1, first, [bytes([first + k]) * 100 for k in range(4)])
    assert len(cache) == 12 and cache.get((1, 7)) is None and cache.get((1, 8)) is not None
    got = cache.get_run(1, 6, 13)
    assert got == [None, None] + [bytes([e]) * 100 for e in range(8, 14)]
    cache.put_run(2, 0, [bytes(1000 * 1000)])  # bigger than the budget: not cached
    assert cache.get((2, 0)) is None and len(cache) == 12


def test_many_small_runs_evict_in_order_across_ledgers() -> None:
    cache = EntryCache(capacity=100 * _cost(10))
    for i in range(1000):
        cache.put_run(i % 3, i // 3, [bytes([i % 256]) * 10])
    assert len(cache) == 100 and cache.size == 100 * _cost(10)
    kept = list(cache.positions())
    assert kept == [(i % 3, i // 3) for i in range(900, 1000)]
    assert all(cache.get((i % 3, i // 3)) == bytes([i % 256]) * 10 for i in range(900, 1000))


def test_entries_are_cached_once_durable_and_tail_reads_skip_the_disk(tmp_path: Path) -> None:
    storage = DurableStorage(tmp_path / "data")
    ml = storage.open_ledger("persistent://public/default/tail", LedgerConfig(), 0)
    first = ml.add_entry(b"a" * 100, 0)
    ml.add_entry(b"b" * 100, 0)
    assert len(storage.entry_cache) == 0  # not durable yet: not cached
    ml.sync()
    assert storage.entry_cache.get(first) == b"a" * 100

    def no_disk(*args: object) -> list[bytes]:
        raise AssertionError("a tail read went to disk")

    ml._read_disk = no_disk  # type: ignore[attr-defined]
    assert [d for _, d in ml.read_entries(first, 10)] == [b"a" * 100, b"b" * 100]
    storage.close()


def test_get_run_returns_cached_entries_and_none_for_the_rest() -> None:
    cache = EntryCache(capacity=1 << 20)
    cache.put_run(3, 5, [b"five", b"six"])
    assert cache.get_run(3, 4, 7) == [None, b"five", b"six", None]
    assert cache.get_run(4, 5, 6) == [None, None]


def test_replaced_and_dropped_entries_keep_the_accounting_exact() -> None:
    cache = EntryCache(capacity=1 << 20)
    cache.put_run(1, 0, [bytes(100)] * 3)
    cache.put_run(1, 3, [bytes(100)] * 3)
    cache.put_run(1, 1, [bytes(1)])  # replaces the run that held entry 1
    assert cache.get_run(1, 0, 3) == [None, bytes(1), None, bytes(100)]
    cache.drop((1, 4))  # drops its run
    assert len(cache) == 1 and cache.size == _cost(1)
    cache.drop_ledger(1)
    assert len(cache) == 0 and cache.size == 0 and list(cache.positions()) == []
