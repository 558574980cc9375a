"""Benchmark: managed-ledger append+sync and read throughput, memory vs durable; prints JSON.

Run: ``python bench/bench_ledger.py [--entries N] [--dir DIR]``. Entries are 100 bytes.
``sync_1`` syncs (one fsync for the durable backend) after every entry, ``sync_100`` after
every 100 entries (group commit). Durable reads are measured twice: right after writing
(tail entries served from the ledger's cache) and after reopening (``pread`` on the
segment files, usually from the OS page cache).
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

from pulsarlab.broker.storage import (
    DurableStorage,
    LedgerConfig,
    ManagedLedger,
    MemoryStorage,
    Storage,
)

PAYLOAD = b"x" * 100


def append_rate(
    storage: Storage, name: str, count: int, per_sync: int, config: LedgerConfig | None = None
) -> tuple[float, ManagedLedger]:
    ml = storage.open_ledger(name, config or LedgerConfig(), 0)
    start = time.perf_counter()
    for _ in range(count // per_sync):
        for _ in range(per_sync):
            ml.add_entry(PAYLOAD, 0)
        ml.sync()
    return count // per_sync * per_sync / (time.perf_counter() - start), ml


def read_rate(ml: ManagedLedger, batch: int = 100) -> float:
    start, position, count = time.perf_counter(), ml.first_position(), 0
    while entries := ml.read_entries(position, batch):
        count += len(entries)
        position = ml.next_position(entries[-1][0])
    return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--entries", type=int, default=200_000, help="entries for the group-commit and read runs"
    )
    parser.add_argument(
        "--fsync-entries", type=int, default=2_000, help="entries for the one-fsync-per-entry run"
    )
    parser.add_argument("--dir", default=None, help="parent of the scratch data directory")
    args = parser.parse_args()

    results: dict[str, object] = {
        "entry_bytes": len(PAYLOAD),
        "entries": args.entries,
        "python": platform.python_version(),
    }
    memory = MemoryStorage()
    one, _ = append_rate(memory, "persistent://bench/m/sync-1", args.entries, 1)
    hundred, ml = append_rate(memory, "persistent://bench/m/sync-100", args.entries, 100)
    results["memory"] = {
        "append_sync_1_per_s": round(one),
        "append_sync_100_per_s": round(hundred),
        "read_per_s": round(read_rate(ml)),
    }
    memory.close()

    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        data_dir = Path(scratch) / "data"
        durable = DurableStorage(data_dir)
        one, _ = append_rate(durable, "persistent://bench/d/sync-1", args.fsync_entries, 1)
        hundred, ml = append_rate(durable, "persistent://bench/d/sync-100", args.entries, 100)
        no_fsync, _ = append_rate(
            durable,
            "persistent://bench/d/no-fsync",
            args.entries,
            100,
            LedgerConfig(journal_sync_data=False),
        )
        cached = read_rate(ml)
        durable.close()
        durable = DurableStorage(data_dir)
        ml = durable.open_ledger("persistent://bench/d/sync-100", LedgerConfig(), 0)
        results["durable"] = {
            "append_sync_1_per_s": round(one),
            "append_sync_100_per_s": round(hundred),
            "append_sync_100_without_fsync_per_s": round(no_fsync),
            "read_after_write_per_s": round(cached),
            "read_after_reopen_per_s": round(read_rate(ml)),
        }
        durable.close()

    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    results["peak_rss_mib"] = round(peak_kib / (1024 * 1024 if sys.platform == "darwin" else 1024))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
