"""Benchmark: the broker core alone — publish, dispatch and ack through a Shared subscription.

Runs 1M messages (by default) as unbatched entries and as batched entries of 100, on the
memory and the durable store; Key_Shared against Shared with 10 consumers; and a
redelivery-heavy run (10% of first deliveries nacked once) against a clean one. Prints one
JSON document with msgs/s, entries/s and the peak RSS. No sockets: this is the ceiling the
ZeroMQ shell can reach.

    python bench/bench_core.py [--messages N] [--data-dir DIR] [--only CASE]

``--only key_shared`` runs just Key_Shared against Shared (``stores``: the four store
runs; ``nacks``: the redelivery pair). In both 10-consumer runs every consumer
individually acks what each delivery brought it, in one ack command per delivery.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time

from pulsarlab.broker import BrokerService, ManualClock, MessageMetadata, SubType
from pulsarlab.broker.actions import Deliver
from pulsarlab.broker.storage import DurableStorage, MemoryStorage

PAYLOAD = b"x" * 100
GROUP = 100  # entries per group commit
QUEUE = 1000  # receiver queue, refilled at half like the real client


def run(
    storage,
    messages: int,
    batch: int,
    sub_type: SubType = SubType.Shared,
    consumers: int = 1,
    nack_every: int = 0,
) -> dict:
    """Publish ``messages``, dispatch and ack them all; with ``nack_every`` = k, every k-th
    first delivery is sent back for redelivery once instead of being acked."""
    core = BrokerService(storage, ManualClock())
    producer = core.create_producer("bench").producer_id
    ids = [core.subscribe("bench", "s", f"c{i}", sub_type).consumer_id for i in range(consumers)]
    for consumer in ids:
        core.flow(consumer, QUEUE)
    entries = messages // batch
    meta_batch = batch if batch > 1 else None
    keys = [f"key-{i}" for i in range(1000)]
    received = 0
    redelivered = 0
    seen = 0
    permits_used = dict.fromkeys(ids, 0)
    start = time.perf_counter()
    sent = 0
    while sent < entries:
        for _ in range(min(GROUP, entries - sent)):
            key = keys[sent % len(keys)]
            meta = MessageMetadata(num_messages_in_batch=meta_batch, partition_key=key)
            core.send(producer, meta, PAYLOAD * batch)
            sent += 1
        core.commit()
        while True:
            delivered = [a for a in core.take_actions() if isinstance(a, Deliver)]
            if not delivered:
                break
            for action in delivered:
                permits_used[action.consumer_id] += len(action.entries) * batch
                positions = []
                again = []
                for e in action.entries:
                    seen += 1
                    if nack_every and e.redelivery_count == 0 and seen % nack_every == 0:
                        again.append(e.position)
                    else:
                        positions.append(e.position)
                received += len(positions) * batch
                redelivered += len(again)
                core.ack(action.consumer_id, positions)
                if again:
                    core.redeliver_unacknowledged(action.consumer_id, again, reason="nack")
            for consumer, used in permits_used.items():
                if used >= QUEUE // 2:
                    core.flow(consumer, used)
                    permits_used[consumer] = 0
    elapsed = time.perf_counter() - start
    assert received == entries * batch, (received, entries * batch)
    core.close()
    return {
        "messages": received,
        "entries": entries,
        "seconds": round(elapsed, 3),
        "msgs_per_s": round(received / elapsed),
        "entries_per_s": round(entries / elapsed),
        "redelivered": redelivered,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--data-dir", default=None, help="durable store location (temp dir)")
    parser.add_argument(
        "--only", choices=("stores", "key_shared", "nacks"), default=None,
        help="run one group of cases (all by default)",
    )
    args = parser.parse_args()
    results: dict = {"bench": "core", "payload_bytes": len(PAYLOAD), "runs": {}}
    runs = results["runs"]
    if args.only in (None, "stores"):
        for store in ("memory", "durable"):
            for batch in (1, 100):
                with tempfile.TemporaryDirectory(dir=args.data_dir) as tmp:
                    storage = MemoryStorage() if store == "memory" else DurableStorage(tmp)
                    name = f"{store}_{'batched100' if batch > 1 else 'unbatched'}"
                    runs[name] = run(storage, args.messages, batch)
    n = max(1, args.messages // 5)
    if args.only in (None, "key_shared"):
        for sub_type in (SubType.Shared, SubType.Key_Shared):
            name = f"memory_unbatched_{sub_type.value.lower()}_10_consumers"
            runs[name] = run(MemoryStorage(), n, 1, sub_type, consumers=10)
        results["key_shared_vs_shared"] = round(
            runs["memory_unbatched_key_shared_10_consumers"]["msgs_per_s"]
            / runs["memory_unbatched_shared_10_consumers"]["msgs_per_s"], 3
        )
    if args.only in (None, "nacks"):
        runs["memory_unbatched_shared_10pct_nacks"] = run(
            MemoryStorage(), n, 1, SubType.Shared, consumers=1, nack_every=10
        )
        runs["memory_unbatched_shared_clean"] = run(MemoryStorage(), n, 1, SubType.Shared)
        results["nack10_vs_clean"] = round(
            runs["memory_unbatched_shared_10pct_nacks"]["msgs_per_s"]
            / runs["memory_unbatched_shared_clean"]["msgs_per_s"], 3
        )
    results["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
