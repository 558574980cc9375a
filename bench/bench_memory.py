"""Benchmark: broker memory with a 10M-message backlog on the durable store.

The target: a backlog of 10M messages of 100 B keeps the broker's RSS under 500 MB, because
entries are read from disk on demand (a bounded, broker-wide entry cache; 8 bytes of offset
per entry in memory) and a consumer's permits bound what the broker reads for it.

Three runs, each on its own data directory and its own ``pulsarlab broker`` process:

* ``unbatched_storage_api`` — 10M unbatched entries (one message each) in one topic,
  written with the storage API while no broker runs (a socket producer would take many
  minutes); the broker is started on it, then one consumer reads and acks all of it.
* ``batched100_wire`` — 10M messages sent by a client producer with batching (100 per
  entry, so 100k entries) through the broker, then read and acked by one consumer.
* ``unbatched_wire`` — a smaller unbatched backlog (1M by default) sent through the broker
  one message per entry, to show the produce path's memory; its per-entry growth is
  extrapolated to 10M in the output, and marked as such.

Broker RSS (VmRSS) is sampled every 0.25 s; the JSON gives it after start, after the
backlog, the highest sample while reading back, the kernel's peak (VmHWM) and after the
read-back.

    python bench/bench_memory.py [--messages 10000000] [--wire-unbatched 1000000]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (
    PAYLOAD,
    build_in_subprocess,
    rss_mb,
    start_broker,
    stop_broker,
    topic_names,
)

from pulsarlab import Client, ConsumerType, InitialPosition

TARGET_MB = 500


class RssSampler:
    """The highest VmRSS of a process seen by a polling thread."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.highest = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.highest = max(self.highest, rss_mb(self.pid)["rss_mb"])
            except (OSError, KeyError):
                return
            self._stop.wait(0.25)


def produce(url: str, topic: str, count: int, batch: int) -> float:
    """Send ``count`` messages (batches of ``batch`` if > 1); seconds taken."""
    started = time.perf_counter()
    with Client(url) as client:
        producer = client.create_producer(
            topic, batching_enabled=batch > 1, batching_max_messages=max(batch, 1),
            batching_max_allowed_size_in_bytes=4 * 1024 * 1024,
            max_pending_messages=5000, block_if_queue_full=True,
        )
        for _ in range(count):
            producer.send_async(PAYLOAD, None)
        producer.flush()
        producer.close()
    return time.perf_counter() - started


def subscribe(client: Client, topic: str):  # type: ignore[no-untyped-def]
    return client.subscribe(
        topic, "readback", consumer_type=ConsumerType.Shared,
        initial_position=InitialPosition.Earliest,
    )


def consume_all(url: str, topic: str, count: int) -> float:
    """Read and ack ``count`` messages on the ``readback`` subscription; seconds taken."""
    started = time.perf_counter()
    with Client(url) as client:
        consumer = subscribe(client, topic)
        for _ in range(count):
            consumer.acknowledge(consumer.receive(60_000))
        consumer.close()
    return time.perf_counter() - started


def run(data_dir: str, log: Path, prefix: str, messages: int, how: str, batch: int) -> dict:
    """Backlog ``messages`` on one topic (written before the broker starts, or sent through
    it), then read it all back; the broker's memory at each step."""
    topic = topic_names(1, prefix)[0]
    result: dict = {"messages": messages, "messages_per_entry": batch}
    if how == "storage_api":
        built = build_in_subprocess(data_dir, 1, messages, prefix, subscription="readback")
        result["backlog_written_by"] = "storage API before the broker started"
        result["backlog_write_seconds"] = built["seconds"]
        result["segment_mb"] = round(built["segment_bytes"] / 2**20, 1)
    proc, url, _ = start_broker(data_dir, log)
    try:
        result["rss_after_start_mb"] = rss_mb(proc.pid)["rss_mb"]
        if how == "wire":
            with Client(url) as client:  # the subscription that keeps the backlog
                subscribe(client, topic).close()
            half = messages // 2
            with RssSampler(proc.pid) as sampler:
                seconds = produce(url, topic, half, batch)
                time.sleep(1.0)
                result["rss_after_half_backlog_mb"] = rss_mb(proc.pid)["rss_mb"]
                seconds += produce(url, topic, messages - half, batch)
            result["backlog_written_by"] = "client producer through the broker"
            result["produce_msgs_per_s"] = round(messages / seconds)
            result["highest_rss_while_producing_mb"] = sampler.highest
        time.sleep(1.0)  # let the broker settle (cursor persistence, housekeeping)
        result["rss_after_backlog_mb"] = rss_mb(proc.pid)["rss_mb"]
        with RssSampler(proc.pid) as sampler:
            seconds = consume_all(url, topic, messages)
        result["consume_msgs_per_s"] = round(messages / seconds)
        result["highest_rss_while_reading_back_mb"] = sampler.highest
        final = rss_mb(proc.pid)
        result["rss_after_read_back_mb"] = final["rss_mb"]
        result["peak_rss_mb"] = final["peak_rss_mb"]
        result["under_target"] = final["peak_rss_mb"] < TARGET_MB
    finally:
        stop_broker(proc)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000_000)
    parser.add_argument("--wire-unbatched", type=int, default=1_000_000,
                        help="messages of the unbatched run sent through the broker")
    parser.add_argument("--data-dir", default=None, help="where to put the temp data dirs")
    parser.add_argument("--only", action="append", default=None,
                        help="run only this run (repeatable), e.g. --only unbatched_wire")
    args = parser.parse_args()
    results: dict = {"bench": "memory", "payload_bytes": len(PAYLOAD), "target_rss_mb": TARGET_MB,
                     "runs": {}}
    plans = [
        ("unbatched_storage_api", "storage_api", args.messages, 1),
        ("batched100_wire", "wire", args.messages, 100),
        ("unbatched_wire", "wire", args.wire_unbatched, 1),
    ]
    for name, how, messages, batch in plans:
        if args.only and name not in args.only:
            continue
        with tempfile.TemporaryDirectory(dir=args.data_dir) as tmp:
            results["runs"][name] = run(
                str(Path(tmp) / "data"), Path(tmp) / "broker.log", name.replace("_", "-"),
                messages, how, batch,
            )
    wire = results["runs"].get("unbatched_wire")
    if wire is None:
        print(json.dumps(results, indent=2))
        return
    # The growth between half and all of the backlog, per entry: fixed costs (the entry
    # cache filling up to its budget, imports, buffers) are paid in the first half.
    per_entry_mb = (wire["rss_after_backlog_mb"] - wire["rss_after_half_backlog_mb"]) / max(
        1, wire["messages"] - wire["messages"] // 2)
    results["unbatched_wire_extrapolated_to_10M"] = {
        "note": "extrapolated, not measured: RSS after the backlog + (10M - its messages) x "
        "the growth per entry between half and all of it",
        "growth_bytes_per_entry": round(per_entry_mb * 2**20, 1),
        "rss_mb": round(wire["rss_after_backlog_mb"]
                        + per_entry_mb * max(0, 10_000_000 - wire["messages"]), 1),
    }
    results["peak_rss_mb_measured"] = max(r["peak_rss_mb"] for r in results["runs"].values())
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
