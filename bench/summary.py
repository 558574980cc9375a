"""Fold the benchmarks' JSON documents into one: every figure as a ratio, plus the raw runs.

``bench/run_all`` runs each ``bench_<name>.py`` and passes this script a directory of
``<name>.json`` files; it prints one JSON document with:

* ``ratios`` — each benchmark's comparisons made in its own run (``broker / relay``,
  ``pulsar / parquet``, ``key_shared / shared`` ...) and each figure against its target
  (``client`` msgs/s against 200k / 100k, Spark rows/s against 350k, RSS against 500 MB,
  restart seconds against 5 s: above 1 beats a throughput target, below 1 meets a cost one);
* ``results`` — the documents themselves (a benchmark that failed shows its error);
* ``machine`` — where the numbers come from.

    python bench/summary.py DIR
"""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

SPARK_TARGET_ROWS_PER_S = 350_000


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
    }


def ratios(results: dict[str, Any]) -> dict[str, float]:
    """The ratios of every benchmark that ran, keyed ``<bench>.<what>``."""
    out: dict[str, float] = {}
    e2e = results.get("e2e") or {}
    for key, value in (e2e.get("ratios") or {}).items():
        name = key if "_vs_" in key else f"{key}_vs_relay"
        out[f"e2e.{name}"] = value
    core = results.get("core") or {}
    for key in ("key_shared_vs_shared", "nack10_vs_clean"):
        if key in core:
            out[f"core.{key}"] = core[key]
    client = results.get("client") or {}
    for key, value in (client.get("ratios_to_target") or {}).items():
        out[f"client.{key}_vs_target"] = value
    official = results.get("official") or {}
    for storage in ("memory", "durable"):
        for key, value in (official.get(f"{storage}_vs_pulsar_lite") or {}).items():
            if isinstance(value, int | float):
                out[f"official.{storage}_{key}_vs_pulsar_lite"] = value
    spark = results.get("spark") or {}
    if "pulsar" in spark:
        out["spark.pulsar_vs_parquet"] = spark["pulsar_vs_parquet"]
        out["spark.rows_per_s_vs_target_350k"] = round(
            spark["pulsar"]["rows_per_s"] / SPARK_TARGET_ROWS_PER_S, 3)
    memory = results.get("memory") or {}
    if "peak_rss_mb_measured" in memory:
        out["memory.peak_rss_vs_target_500mb"] = round(
            memory["peak_rss_mb_measured"] / memory["target_rss_mb"], 3)
        extrapolated = memory.get("unbatched_wire_extrapolated_to_10M")
        if extrapolated:
            out["memory.unbatched_10M_extrapolated_rss_vs_target_500mb"] = round(
                extrapolated["rss_mb"] / memory["target_rss_mb"], 3)
    restart = results.get("restart") or {}
    for key in ("seconds_to_serve_after_crash", "seconds_to_serve_after_clean_stop"):
        if key in restart:
            out[f"restart.{key}_vs_target_5s"] = round(restart[key] / restart["target_seconds"], 3)
    return out


def load(directory: Path) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for path in sorted(directory.glob("*.json")):
        text = path.read_text()
        try:
            results[path.stem] = json.loads(text)
        except json.JSONDecodeError:
            log = path.with_suffix(".log")
            results[path.stem] = {
                "error": "no JSON document",
                "output_tail": text[-500:],
                "stderr_tail": log.read_text(errors="replace")[-1000:] if log.exists() else "",
            }
    return results


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python bench/summary.py DIR (a directory of <bench>.json files)")
    results = load(Path(sys.argv[1]))
    print(json.dumps({"machine": machine(), "ratios": ratios(results), "results": results},
                     indent=2))


if __name__ == "__main__":
    main()
