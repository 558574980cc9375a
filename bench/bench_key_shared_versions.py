"""Benchmark: Key_Shared dispatch on Pulsar 3.3's classic rule vs 4.0's draining hashes.

The sans-I/O core, memory store, 10 consumers, 1000 keys, unbatched 100 B messages, each
delivery acked at once; once steady, and with churn (a consumer leaves and rejoins every
``--churn-every`` messages, so 4.0 has hashes draining and 3.3 recently joined consumers).
The simulated clock moves 10 ms per group commit, so 4.0's unblocking reads run. Prints one
JSON document with msgs/s per case (wall clock, and per CPU second: steadier on a shared
machine) and the 4.0 / 3.3 ratios of CPU throughput in the same run.

    python bench/bench_key_shared_versions.py [--messages N] [--churn-every N]
"""

from __future__ import annotations

import argparse
import json
import time

from pulsarlab.broker import BrokerService, BrokerSettings, ManualClock, MessageMetadata, SubType
from pulsarlab.broker.actions import Deliver
from pulsarlab.broker.storage import MemoryStorage

PAYLOAD = b"x" * 100
GROUP = 100
QUEUE = 1000
CONSUMERS = 10


def run(version: str, messages: int, churn_every: int) -> dict:
    clock = ManualClock()
    core = BrokerService(
        MemoryStorage(), clock, BrokerSettings.from_kwargs(pulsar_version=version)
    )
    producer = core.create_producer("bench").producer_id
    names = [f"c{i}" for i in range(CONSUMERS)]
    ids = {}
    for name in names:
        ids[name] = core.subscribe("bench", "s", name, SubType.Key_Shared).consumer_id
        core.flow(ids[name], QUEUE)
    used = dict.fromkeys(ids.values(), 0)
    keys = [f"key-{i}" for i in range(1000)]
    received = sent = churns = 0
    start = time.perf_counter()
    cpu_start = time.process_time()
    while sent < messages:
        for _ in range(min(GROUP, messages - sent)):
            core.send(producer, MessageMetadata(partition_key=keys[sent % len(keys)]), PAYLOAD)
            sent += 1
            if churn_every and sent % churn_every == 0:
                name = names[churns % CONSUMERS]
                churns += 1
                core.close_consumer(ids[name])
                used.pop(ids[name])
                ids[name] = core.subscribe("bench", "s", name, SubType.Key_Shared).consumer_id
                used[ids[name]] = 0
                core.flow(ids[name], QUEUE)
        core.commit()
        clock.advance(10)
        core.tick()
        while True:
            delivered = [a for a in core.take_actions() if isinstance(a, Deliver)]
            if not delivered:
                break
            for action in delivered:
                if action.consumer_id not in used:
                    continue  # a consumer that left since; its messages come back
                positions = [e.position for e in action.entries]
                used[action.consumer_id] += len(positions)
                received += len(positions)
                core.ack(action.consumer_id, positions)
            for consumer, n in used.items():
                if n >= QUEUE // 2:
                    core.flow(consumer, n)
                    used[consumer] = 0
            clock.advance(10)
            core.tick()
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    core.close()
    return {
        "sent": sent,
        "delivered": received,
        "churns": churns,
        "seconds": round(elapsed, 3),
        "cpu_seconds": round(cpu, 3),
        "msgs_per_s": round(received / elapsed),
        "msgs_per_cpu_s": round(received / cpu),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--churn-every", type=int, default=20_000)
    args = parser.parse_args()
    runs = {}
    for version in ("3.3", "4.0"):
        runs[f"key_shared_{version}_steady"] = run(version, args.messages, 0)
        runs[f"key_shared_{version}_churn"] = run(version, args.messages, args.churn_every)
    results = {
        "bench": "key_shared_versions",
        "messages": args.messages,
        "consumers": CONSUMERS,
        "runs": runs,
        "steady_40_vs_33": round(
            runs["key_shared_4.0_steady"]["msgs_per_cpu_s"]
            / runs["key_shared_3.3_steady"]["msgs_per_cpu_s"], 3
        ),
        "churn_40_vs_33": round(
            runs["key_shared_4.0_churn"]["msgs_per_cpu_s"]
            / runs["key_shared_3.3_churn"]["msgs_per_cpu_s"], 3
        ),
    }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
