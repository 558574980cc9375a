"""Benchmark: one group commit through the durable store (its pwrite + fdatasync); prints JSON.

Run: ``python bench/bench_commit.py [--commits N] [--entries E] [--entry-bytes B] [--dir DIR]``.
Each commit appends ``E`` entries of ``B`` bytes (by default 170 of 100 B: about 17 KB of
records, a batched producer's commit) and calls ``sync()``: the records' one ``pwrite`` and
the segment file's one ``fdatasync``. Reported per commit: the process's CPU (user + system,
which includes the kernel's work for the sync) and the wall time of ``sync()``, p50 and
p99. The data directory is on the file system of ``--dir`` (a temporary directory by
default): the numbers are that file system's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from pulsarlab.broker.storage import DurableStorage, LedgerConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--entries", type=int, default=170, help="entries per commit")
    parser.add_argument("--entry-bytes", type=int, default=100)
    parser.add_argument("--dir", default=None, help="parent of the scratch data directory")
    args = parser.parse_args()
    payload = os.urandom(args.entry_bytes)

    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        storage = DurableStorage(Path(scratch) / "data")
        ml = storage.open_ledger("persistent://bench/c/commits", LedgerConfig(), 0)
        walls: list[float] = []
        cpu = 0.0
        for _ in range(args.commits):
            for _ in range(args.entries):
                ml.add_entry(payload, 0)
            cpu_start, wall_start = time.process_time(), time.perf_counter()
            ml.sync()
            walls.append(time.perf_counter() - wall_start)
            cpu += time.process_time() - cpu_start
        storage.close()

    walls.sort()
    print(json.dumps({
        "commits": args.commits,
        "commit_bytes": args.entries * (8 + args.entry_bytes),
        "python": platform.python_version(),
        "sync_cpu_us_per_commit": round(cpu / args.commits * 1e6, 1),
        "sync_wall_p50_us": round(statistics.median(walls) * 1e6),
        "sync_wall_p99_us": round(walls[int(len(walls) * 0.99)] * 1e6),
    }))


if __name__ == "__main__":
    main()
