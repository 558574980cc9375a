"""Benchmark: the latency of one admin call, ``Admin.topics.get_stats`` of a topic with a
subscription, as a notebook or a live view's stats poll makes it.

Calls are made one after the other from one ``pulsarlab.Admin`` (its connection kept
between calls) against a broker in another process (the ``pulsarlab broker`` command) and
one inside this process (``pulsarlab.Broker()``, the notebook default), memory storage.
Prints one JSON document: p50 / p90 / p99 and mean in microseconds, the broker's CPU per
call (``broker_cpu_us_per_call``: the broker process's, or the in-process broker thread's,
user + system time over the timed calls, from ``/proc``), and how the Admin was
reached (``rest``: the broker's web URL; ``zmq``: the ZeroMQ ADMIN command of releases
before Admin became a REST client, whose Admin refuses an http:// URL — so the same script
measures both sides of that change).

    python bench/bench_admin.py [--calls N] [--mode process|inproc|both]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchlib import cpu_seconds

TOPIC = "persistent://public/default/admin-bench"


def _admin(service_url: str, web_url: str) -> tuple[Any, str]:
    from pulsarlab import Admin

    try:
        return Admin(web_url), "rest"
    except ValueError:  # an Admin that speaks ZeroMQ only
        return Admin(service_url), "zmq"


def measure(service_url: str, web_url: str, calls: int,
            broker_cpu: Callable[[], float]) -> dict[str, Any]:
    from pulsarlab import Client

    with Client(service_url) as client:
        client.subscribe(TOPIC, "bench").close()
    admin, transport = _admin(service_url, web_url)
    try:
        for _ in range(min(200, calls)):  # warm-up: connection, code paths
            admin.topics.get_stats(TOPIC)
        times = []
        cpu0 = broker_cpu()
        for _ in range(calls):
            started = time.perf_counter_ns()
            admin.topics.get_stats(TOPIC)
            times.append((time.perf_counter_ns() - started) / 1000)
        cpu = broker_cpu() - cpu0
    finally:
        admin.close()
    times.sort()
    return {
        "transport": transport,
        "calls": calls,
        "p50_us": round(times[len(times) // 2], 1),
        "p90_us": round(times[int(len(times) * 0.9)], 1),
        "p99_us": round(times[int(len(times) * 0.99)], 1),
        "mean_us": round(statistics.fmean(times), 1),
        "broker_cpu_us_per_call": round(cpu / calls * 1e6, 1),
    }


def in_process(calls: int) -> dict[str, Any]:
    from pulsarlab import Broker

    with Broker(storage="memory") as broker:
        thread = next(t for t in threading.enumerate() if t.name == "pulsarlab-broker")
        return measure(broker.service_url, broker.web_url, calls,
                       lambda: cpu_seconds(tid=thread.native_id))


def in_another_process(calls: int) -> dict[str, Any]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pulsarlab.broker.cli", "broker", "--storage", "memory",
         "--port", "0", "--pulsar-port", "0", "--web-port", "0", "--events-port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        assert proc.stdout is not None
        lines = []
        while not lines or lines[-1].rstrip("\n") != "}":
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the broker exited with {proc.wait(10)} before it was ready")
            lines.append(line)
        report = json.loads("".join(lines))
        return measure(report["service_url"], report["web_url"], calls,
                       lambda: cpu_seconds(proc.pid))
    finally:
        proc.terminate()
        proc.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--mode", choices=("process", "inproc", "both"), default="both")
    args = parser.parse_args()
    out: dict[str, Any] = {"bench": "admin_get_stats", "machine": platform.platform()}
    if args.mode in ("process", "both"):
        out["process"] = in_another_process(args.calls)
    if args.mode in ("inproc", "both"):
        out["inproc"] = in_process(args.calls)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
