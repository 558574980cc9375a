"""Benchmark: how soon a restarted broker holding 10M messages on 100 topics serves them.

The backlog (by default 100 topics x 100k unbatched 100 B messages = 10M entries, on the
broker's default ledger settings: 50k entries per ledger) is written with the storage API
by a process that then exits without closing anything, as a killed broker would: its last
ledger on each topic has no index and gets the torn-tail scan at the next start. Then:

1. ``after_crash``: start the ``pulsarlab broker`` process on it and time, from the moment
   the process is spawned, its ready report and a first message received on each of the
   100 topics (one client, one consumer per topic on the durable subscription that holds
   the backlog). That broker is then stopped cleanly (SIGTERM).
2. ``after_clean_stop``: the same again; every ledger now has an index.

Prints one JSON document; the target is ready to serve within 5 s.

    python bench/bench_restart.py [--topics 100] [--per-topic 100000] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (
    build_in_subprocess,
    rss_mb,
    start_broker,
    stop_broker,
    topic_names,
)

from pulsarlab import Client, ConsumerType, InitialPosition

TARGET_SECONDS = 5.0


def first_message_everywhere(url: str, topics: list[str], subscription: str) -> float:
    """Subscribe on every topic and wait for one message from each; seconds."""
    started = time.perf_counter()
    with Client(url) as client:
        consumers = [
            client.subscribe(
                topic, subscription, consumer_type=ConsumerType.Shared,
                initial_position=InitialPosition.Earliest, receiver_queue_size=10,
            )
            for topic in topics
        ]
        for consumer in consumers:
            consumer.receive(60_000)
        elapsed = time.perf_counter() - started
        for consumer in consumers:
            consumer.close()
    return elapsed


def restart(data_dir: str, topics: list[str], subscription: str, log_path: Path) -> dict:
    spawned = time.perf_counter()
    proc, url, ready = start_broker(data_dir, log_path)
    try:
        serving = first_message_everywhere(url, topics, subscription)
        total = time.perf_counter() - spawned
        memory = rss_mb(proc.pid)
    finally:
        stop_broker(proc)
    return {
        "seconds_to_ready_report": round(ready, 3),
        "seconds_to_first_message_on_every_topic": round(total, 3),
        "of_which_subscribing_and_receiving": round(serving, 3),
        "broker_rss_mb": memory["rss_mb"],
        "broker_peak_rss_mb": memory["peak_rss_mb"],
        "met_target": total <= TARGET_SECONDS,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--per-topic", type=int, default=100_000)
    parser.add_argument("--data-dir", default=None, help="where to put the temp data dir")
    args = parser.parse_args()
    topics = topic_names(args.topics, "restart")
    result: dict = {
        "bench": "restart",
        "payload_bytes": 100,
        "target_seconds": TARGET_SECONDS,
        "backlog": {"unbatched": True},
        "runs": {},
    }
    with tempfile.TemporaryDirectory(dir=args.data_dir) as tmp:
        data_dir = str(Path(tmp) / "data")
        built = build_in_subprocess(data_dir, args.topics, args.per_topic, "restart", crash=True)
        result["backlog"].update(
            messages=built["entries"], topics=built["topics"],
            segment_mb=round(built["segment_bytes"] / 2**20, 1),
            write_seconds=built["seconds"],
            written_by="storage API (encode_entry + ManagedLedger.add_entry), "
            "then exit without close",
        )
        log_path = Path(tmp) / "broker.log"
        result["runs"]["after_crash"] = restart(data_dir, topics, "bench", log_path)
        result["runs"]["after_clean_stop"] = restart(data_dir, topics, "bench", log_path)
        log_text = log_path.read_text(errors="replace")
        result["torn_tail_scans_logged"] = log_text.count("torn tail")
    result["seconds_to_serve_after_clean_stop"] = result["runs"]["after_clean_stop"][
        "seconds_to_first_message_on_every_topic"]
    result["seconds_to_serve_after_crash"] = result["runs"]["after_crash"][
        "seconds_to_first_message_on_every_topic"]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
