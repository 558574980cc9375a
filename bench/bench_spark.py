"""Benchmark: Spark batch read rate of a topic through the ``pulsar`` source, beside Parquet.

A ``pulsarlab broker --storage memory`` subprocess holds N messages of 100 bytes on a topic
with 2 partitions (produced with batching, 1000 messages per entry). One local[2] Spark
session (``fast_start=False``: the full JIT) then times ``df.write.format("noop")`` — which
materialises every column — over the topic, and over the same rows written once to a local
Parquet file, in the same run. One warm-up, then ``--runs`` timed runs of each; prints one
JSON document with the median rows/s, the per-run times and the CPU seconds of the Spark
processes (driver JVM and Python workers) and of the broker per million rows — wall times
are noisy on a shared 2-core machine, CPU seconds much less so.

    python bench/bench_spark.py [--messages N] [--runs R]

Default (1,000,000 messages, 3 runs) takes about 2–3 minutes on 2 cores: ~25 s producing,
~10 s starting Spark and writing the Parquet file, then the timed runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any


def start_broker() -> tuple[subprocess.Popen, str]:
    args = [sys.executable, "-m", "pulsarlab.broker.cli", "broker", "--port", "0",
            "--pulsar-port", "0", "--web-port", "0",
            "--storage", "memory"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    lines = []
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the broker exited before reporting its address")
        lines.append(line)
        if line.strip() == "}":
            break
    return proc, json.loads("".join(lines))["service_url"]


def produce(url: str, topic: str, messages: int, partitions: int, size: int,
            batch: int) -> float:
    import pulsarlab

    began = time.perf_counter()
    pulsarlab.Admin(url).topics.create_partitioned_topic(topic, partitions)
    payload = b"x" * size
    with pulsarlab.Client(url) as client:
        producer = client.create_producer(
            topic,
            batching_enabled=batch > 1,
            batching_max_messages=max(batch, 1),
            batching_max_allowed_size_in_bytes=4 * 1024 * 1024,
            batching_max_publish_delay_ms=50,
            block_if_queue_full=True,
            max_pending_messages=20_000,
            message_routing_mode=pulsarlab.PartitionsRoutingMode.RoundRobinDistribution,
        )
        for _ in range(messages):
            producer.send_async(payload, None)
        producer.flush()
        producer.close()
    return time.perf_counter() - began


def _cpu_seconds(broker_pid: int) -> tuple[float, float]:
    """CPU seconds so far of (the Spark processes: driver JVM and Python workers, the broker)."""
    try:
        import psutil
    except ImportError:
        return float("nan"), float("nan")
    spark = broker = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:
            continue
        if child.pid == broker_pid:
            broker += times.user + times.system
        else:
            spark += times.user + times.system
    return spark, broker


def timed(label: str, make_df: Any, runs: int, rows: int, broker_pid: int) -> dict[str, Any]:
    def once() -> tuple[float, float, float]:
        spark0, broker0 = _cpu_seconds(broker_pid)
        began = time.perf_counter()
        make_df().write.format("noop").mode("overwrite").save()
        wall = time.perf_counter() - began
        spark1, broker1 = _cpu_seconds(broker_pid)
        return wall, spark1 - spark0, broker1 - broker0

    warm_s = once()[0]
    results = [once() for _ in range(runs)]
    walls = [r[0] for r in results]
    median = statistics.median(walls)
    per_million = 1e6 / rows
    print(f"{label}: warm-up {warm_s:.2f} s, runs {[round(w, 2) for w in walls]}",
          file=sys.stderr)
    return {
        "warmup_s": round(warm_s, 3),
        "runs_s": [round(w, 3) for w in walls],
        "median_s": round(median, 3),
        "rows_per_s": round(rows / median),
        "spark_cpu_s_per_million_rows": round(
            statistics.median(r[1] for r in results) * per_million, 2
        ),
        "broker_cpu_s_per_million_rows": round(
            statistics.median(r[2] for r in results) * per_million, 2
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--size", type=int, default=100, help="payload bytes")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--batch", type=int, default=1000,
                        help="messages per batched entry (1 = no batching)")
    args = parser.parse_args()

    import pyarrow
    import pyspark

    from pulsarlab.spark import get_or_create_session, stop_session

    proc, url = start_broker()
    try:
        topic = "bench-spark"
        produce_s = produce(url, topic, args.messages, args.partitions, args.size, args.batch)
        print(f"produced {args.messages} messages in {produce_s:.1f} s", file=sys.stderr)
        began = time.perf_counter()
        spark = get_or_create_session("pulsarlab-bench", f"local[{args.partitions}]",
                                      fast_start=False)
        session_s = time.perf_counter() - began

        def pulsar_df() -> Any:
            return (spark.read.format("pulsar").option("service.url", url)
                    .option("topic", topic).load())

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "topic.parquet")
            began = time.perf_counter()
            pulsar_df().write.parquet(path)
            parquet_write_s = time.perf_counter() - began
            parquet_rows = spark.read.parquet(path).count()
            assert parquet_rows == args.messages, (parquet_rows, args.messages)
            pulsar = timed("pulsar", pulsar_df, args.runs, args.messages, proc.pid)
            parquet = timed("parquet", lambda: spark.read.parquet(path), args.runs,
                            args.messages, proc.pid)
        stop_session()
    finally:
        proc.terminate()
        proc.wait(10)

    results = {
        "benchmark": "spark batch read of a topic into the noop sink, beside Parquet",
        "messages": args.messages,
        "payload_bytes": args.size,
        "partitions": args.partitions,
        "messages_per_entry": args.batch,
        "columns": 9,
        "produce_s": round(produce_s, 2),
        "session_start_s": round(session_s, 2),
        "parquet_write_s": round(parquet_write_s, 2),
        "pulsar": pulsar,
        "parquet": parquet,
        "pulsar_vs_parquet": round(pulsar["rows_per_s"] / parquet["rows_per_s"], 3),
        "versions": {
            "python": platform.python_version(),
            "pyspark": pyspark.__version__,
            "pyarrow": pyarrow.__version__,
        },
        "cpus": os.cpu_count(),
    }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
