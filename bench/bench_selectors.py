"""Benchmark: Key_Shared selector cost per key, printed as one JSON object.

Measures ``select()`` throughput (keys/s) of the auto-split, consistent-hashing and sticky
selectors with 2, 10 and 100 consumers over precomputed 31-bit sticky-key hashes, the cost of
``sticky_key_hash`` itself, and the cost of one non-partitioned failover pick (which builds
its ring every time). Best of ``--repeat`` runs. Default run: well under 20 s.

    python bench/bench_selectors.py [--keys 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pulsarlab.broker.selectors import (
    ConsistentHashingStickyKeyConsumerSelector,
    HashRangeAutoSplitStickyKeyConsumerSelector,
    HashRangeExclusiveStickyKeyConsumerSelector,
    StickyKeyConsumerSelector,
    pick_active_consumer,
    sticky_key_hash,
)

CONSUMER_COUNTS = (2, 10, 100)


@dataclass(eq=False)
class BenchConsumer:
    consumer_name: str
    key_hash_ranges: list[tuple[int, int]] = field(default_factory=list)
    priority_level: int = 0


def build(kind: str, count: int) -> StickyKeyConsumerSelector:
    """A selector of ``kind`` holding ``count`` consumers (sticky: equal contiguous ranges)."""
    selector: StickyKeyConsumerSelector
    if kind == "auto_split":
        selector = HashRangeAutoSplitStickyKeyConsumerSelector()
    elif kind == "consistent_hashing":
        selector = ConsistentHashingStickyKeyConsumerSelector()
    else:
        selector = HashRangeExclusiveStickyKeyConsumerSelector()
    bounds = [65536 * i // count for i in range(count + 1)]
    for i in range(count):
        consumer = BenchConsumer(f"consumer-{i}", [(bounds[i], bounds[i + 1] - 1)])
        selector.add_consumer(consumer)
    return selector


def best_rate(run: Callable[[], None], items: int, repeat: int) -> dict[str, float]:
    """Best (fastest) of ``repeat`` runs, as items per second and nanoseconds per item."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return {"per_s": round(items / best), "ns_each": round(best * 1e9 / items, 1)}


def bench_select(kind: str, count: int, hashes: list[int], repeat: int) -> dict[str, float]:
    select = build(kind, count).select

    def run() -> None:
        for h in hashes:
            select(h)

    rate = best_rate(run, len(hashes), repeat)
    return {"keys_per_s": rate["per_s"], "ns_per_key": rate["ns_each"]}


def bench_sticky_key_hash(keys: list[bytes], repeat: int) -> dict[str, float]:
    def run() -> None:
        for key in keys:
            sticky_key_hash(key)

    rate = best_rate(run, len(keys), repeat)
    return {"keys_per_s": rate["per_s"], "ns_per_key": rate["ns_each"]}


def bench_failover_pick(count: int, repeat: int) -> dict[str, float]:
    consumers = [BenchConsumer(f"consumer-{i}") for i in range(count)]
    calls = max(5, 2000 // count)
    topics = [f"persistent://public/default/t{i}" for i in range(calls)]

    def run() -> None:
        for topic in topics:
            pick_active_consumer(consumers, -1, topic)

    rate = best_rate(run, calls, repeat)
    return {"picks_per_s": rate["per_s"], "us_per_pick": round(rate["ns_each"] / 1000, 2)}


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=200_000, help="hashes per measurement")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best kept)")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    keys = [f"key-{rng.getrandbits(40)}".encode() for _ in range(args.keys)]
    hashes = [sticky_key_hash(k) for k in keys]

    started = time.perf_counter()
    result: dict[str, object] = {
        "benchmark": "selectors",
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "keys": args.keys,
        "repeat": args.repeat,
        "sticky_key_hash": bench_sticky_key_hash(keys, args.repeat),
        "select": {
            kind: {
                str(count): bench_select(kind, count, hashes, args.repeat)
                for count in CONSUMER_COUNTS
            }
            for kind in ("auto_split", "consistent_hashing", "sticky")
        },
        "failover_pick_non_partitioned": {
            str(count): bench_failover_pick(count, args.repeat) for count in CONSUMER_COUNTS
        },
    }
    result["elapsed_s"] = round(time.perf_counter() - started, 2)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return result


if __name__ == "__main__":
    main()
