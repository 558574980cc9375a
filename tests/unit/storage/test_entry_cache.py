"""The entry cache: one byte budget for every topic of a storage, object overhead counted."""

from __future__ import annotations

from pathlib import Path

from pulsarlab.broker.storage import DurableStorage, LedgerConfig
from pulsarlab.broker.storage.entry_cache import ENTRY_OVERHEAD, EntryCache


def test_the_budget_counts_entry_overhead_and_evicts_the_oldest() -> None:
    cache = EntryCache(capacity=10 * (100 + ENTRY_OVERHEAD))
    for i in range(25):
        cache.put((1, i), bytes(100))
    assert len(cache) == 10
    assert cache.size == 10 * (100 + ENTRY_OVERHEAD)
    assert cache.get((1, 14)) is None and cache.get((1, 15)) is not None
    cache.put((1, 24), bytes(50))  # replacing an entry re-counts it
    assert cache.size == 9 * (100 + ENTRY_OVERHEAD) + 50 + ENTRY_OVERHEAD


def test_too_big_entries_and_a_zero_budget_cache_nothing() -> None:
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
    assert cache.size == 5 * (4 + ENTRY_OVERHEAD)


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
               for p in storage.entry_cache._entries)
    storage.close()
    assert len(storage.entry_cache) == 0


def test_a_run_is_cached_and_evicted_like_single_puts() -> None:
    one, run = EntryCache(10 * (100 + ENTRY_OVERHEAD)), EntryCache(10 * (100 + ENTRY_OVERHEAD))
    for i in range(25):
        one.put((1, i), bytes(100))
    run.put_run(1, 0, [bytes(100)] * 12)
    run.put_run(1, 12, [bytes(100)] * 13)
    assert list(run._entries) == list(one._entries) and run.size == one.size
    run.put_run(1, 24, [bytes(50)])  # replacing an entry re-counts it
    assert run.size == 9 * (100 + ENTRY_OVERHEAD) + 50 + ENTRY_OVERHEAD
    run.put_run(2, 0, [bytes(10 * (100 + ENTRY_OVERHEAD)), b"small"])  # too big: skipped
    assert run.get((2, 0)) is None and run.get((2, 1)) == b"small"
    run.drop_ledger(1)
    assert len(run) == 1 and run.size == 5 + ENTRY_OVERHEAD
    run.drop_ledger(2)
    assert len(run) == 0 and run.size == 0


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
    cache = EntryCache(capacity=4 * (100 + ENTRY_OVERHEAD))
    cache.put_run(1, 0, [bytes(100)] * 3)
    cache.put_run(1, 1, [bytes(1)])  # a replacement inside an older run
    cache.drop((1, 2))
    assert cache.size == (100 + ENTRY_OVERHEAD) + (1 + ENTRY_OVERHEAD)
    cache.put_run(2, 0, [bytes(100)] * 4)  # evicts ledger 1 entirely, stale slots skipped
    assert sorted(cache._entries) == [(2, 0), (2, 1), (2, 2), (2, 3)]
    assert cache.size == 4 * (100 + ENTRY_OVERHEAD)
    cache.drop_ledger(1)  # nothing left of it: a no-op
    cache.drop_ledger(2)
    assert len(cache) == 0 and cache.size == 0
