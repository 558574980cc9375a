"""Benchmark: the pulsarlab client library, produce then receive+ack, 100 B messages.

What a user of the client feels: ``send_async`` with ``block_if_queue_full=True`` and
batching (100 messages per batch) for N messages, then ``flush()``; then ``receive()`` and
``acknowledge()`` one message at a time until all N are back. Each phase is timed on its
own (msgs/s), against a broker in another process (the ``pulsarlab broker`` command) and
against one inside this process (``pulsarlab.Broker()``, a thread: the notebook default),
both on the default durable storage. The subscription exists (at the earliest position)
before the first send, so the backlog is kept, and its consumer only connects for the
receive phase, so the produce phase measures producing alone. Prints one JSON document.

    python bench/bench_client.py [--messages N] [--runs R] [--mode process|inproc|lite|both|all]
                                 [--url zmq://127.0.0.1:PORT]   # a broker already running
                                 [--client pulsarlab|official] [--pulsar-lite]

``--pulsar-lite`` runs the same phases against a pulsar-lite process (pulsar://; the bench
extra) instead of a pulsarlab broker, and ``--client official`` drives them with the
official ``pulsar-client`` instead of pulsarlab's. ``--mode lite`` (part of the default
run) does both against one pulsar-lite process, the two clients alternating run by run,
and prints ``pulsarlab_vs_official``: each phase's msgs/s ratio taken inside each round,
then the median (issue 24's targets: pulsarlab's produce >= 3x the official client's, its
receive+ack >= 1x), with each client's CPU per message and pulsar-lite's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH_DIR)

from benchlib import start_broker, stop_broker  # noqa: E402

PAYLOAD = b"x" * 100
BATCH = 100


def client_module(kind: str) -> Any:
    """The client library: ``pulsarlab`` or the official ``pulsar``."""
    if kind == "official":
        import pulsar

        return pulsar
    import pulsarlab

    return pulsarlab


def new_client(kind: str, url: str) -> Any:
    if kind == "official":
        import pulsar

        return pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    import pulsarlab

    return pulsarlab.Client(url)


def produce(client: Any, topic: str, n: int) -> float:
    producer = client.create_producer(
        topic,
        block_if_queue_full=True,
        batching_enabled=True,
        batching_max_messages=BATCH,
    )
    done = threading.Event()
    settled = [0, 0]  # ok, failed

    def callback(result: Any, message_id: Any) -> None:
        settled[0 if message_id is not None else 1] += 1
        if settled[0] + settled[1] == n:
            done.set()

    began = time.perf_counter()
    send_async = producer.send_async
    for _ in range(n):
        send_async(PAYLOAD, callback)
    producer.flush()
    done.wait(60)
    elapsed = time.perf_counter() - began
    producer.close()
    if settled[1] or settled[0] != n:
        raise RuntimeError(f"produce: {settled[0]} ok, {settled[1]} failed of {n}")
    return n / elapsed


def consume(client: Any, topic: str, subscription: str, n: int, kind: str = "pulsarlab"
            ) -> float:
    pulsarlab = client_module(kind)
    consumer = client.subscribe(topic, subscription,
                                consumer_type=pulsarlab.ConsumerType.Shared,
                                initial_position=pulsarlab.InitialPosition.Earliest)
    receive, acknowledge = consumer.receive, consumer.acknowledge
    began = time.perf_counter()
    for _ in range(n):
        acknowledge(receive(10_000))
    elapsed = time.perf_counter() - began
    consumer.close()
    return n / elapsed


def _cpu_s(pid: int) -> float:
    """CPU seconds so far of process ``pid`` (the broker in another process)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(url: str, n: int, run: int, broker_pid: int | None,
            kind: str = "pulsarlab") -> dict[str, float]:
    """msgs/s of each phase, and CPU µs per message of this process (the client, and in
    inproc mode the broker too) and of a broker in another process."""
    pulsarlab = client_module(kind)
    topic = f"bench-client-{kind}-{os.getpid()}-{run}"
    out: dict[str, float] = {}
    for phase in ("produce", "receive_ack"):
        client = new_client(kind, url)
        try:
            if phase == "produce":
                client.subscribe(topic, "bench", consumer_type=pulsarlab.ConsumerType.Shared,
                                 initial_position=pulsarlab.InitialPosition.Earliest).close()
            own, broker = time.process_time(), _cpu_s(broker_pid) if broker_pid else 0.0
            if phase == "produce":
                out[phase] = produce(client, topic, n)
            else:
                out[phase] = consume(client, topic, "bench", n, kind)
            out[f"{phase}_cpu_us_per_msg"] = (time.process_time() - own) / n * 1e6
            if broker_pid:
                out[f"{phase}_broker_cpu_us_per_msg"] = (_cpu_s(broker_pid) - broker) / n * 1e6
        finally:
            client.close()
    return out


def run_vs_official(n: int, runs: int) -> dict[str, Any]:
    """pulsarlab's client and the official one against the same pulsar-lite process,
    alternating (pulsarlab first in even rounds); ratios taken inside each round."""
    from bench_official import pulsar_lite_process

    kinds = ("pulsarlab", "official")
    rounds: list[dict[str, dict[str, float]]] = []
    try:
        with pulsar_lite_process() as (url, pid):
            for i in range(runs):
                order = kinds if i % 2 == 0 else kinds[::-1]
                rounds.append({kind: one_run(url, n, i, pid, kind) for kind in order})
    except RuntimeError as exc:  # pulsar-lite (the bench extra) is not installed
        return {"skipped": str(exc)}
    out: dict[str, Any] = {}
    for kind in kinds:
        mine = [r[kind] for r in rounds]
        out[kind] = {key: round(statistics.median(m[key] for m in mine), 2) for key in mine[0]}
        for phase in ("produce", "receive_ack"):
            out[kind][f"{phase}_runs"] = [round(m[phase]) for m in mine]
    out["pulsarlab_vs_official"] = {
        phase: round(statistics.median(r["pulsarlab"][phase] / r["official"][phase]
                                       for r in rounds), 3)
        for phase in ("produce", "receive_ack")
    }
    for phase in ("produce", "receive_ack"):
        out["pulsarlab_vs_official"][f"{phase}_cpu_per_msg"] = round(statistics.median(
            r["official"][f"{phase}_cpu_us_per_msg"] / r["pulsarlab"][f"{phase}_cpu_us_per_msg"]
            for r in rounds), 3)
    out["target_produce_vs_official"] = 3.0
    out["target_receive_ack_vs_official"] = 1.0
    return out


def run_mode(mode: str, n: int, runs: int, url: str | None = None,
             kind: str = "pulsarlab", lite: bool = False) -> dict[str, Any]:
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        if lite:
            from bench_official import pulsar_lite_process

            with pulsar_lite_process() as (lite_url, _):
                results = [one_run(lite_url, n, i, None, kind) for i in range(runs)]
        elif url:
            results = [one_run(url, n, i, None, kind) for i in range(runs)]
        elif mode == "process":
            proc, url, _ = start_broker(tmp)
            try:
                results = [one_run(url, n, i, proc.pid) for i in range(runs)]
            finally:
                stop_broker(proc)
        else:
            import pulsarlab

            with pulsarlab.Broker(data_dir=tmp) as broker:
                results = [one_run(broker.service_url, n, i, None) for i in range(runs)]
    out: dict[str, Any] = {}
    for phase in ("produce", "receive_ack"):
        values = [r[phase] for r in results]
        out[f"{phase}_msgs_per_s"] = round(statistics.median(values))
        out[f"{phase}_runs"] = [round(v) for v in values]
        for cpu in ("cpu_us_per_msg", "broker_cpu_us_per_msg"):
            key = f"{phase}_{cpu}"
            if key in results[0]:
                label = key if mode == "process" or "broker" in cpu else (
                    f"{phase}_cpu_us_per_msg_client_and_broker")
                out[label] = round(statistics.median(r[key] for r in results), 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mode", choices=("process", "inproc", "lite", "both", "all"),
                        default="all", help="both: process and inproc; all: and lite")
    parser.add_argument("--url", help="use this running broker (e.g. to profile it) as "
                        "the broker in another process")
    parser.add_argument("--client", choices=("pulsarlab", "official"), default="pulsarlab")
    parser.add_argument("--pulsar-lite", action="store_true",
                        help="against a pulsar-lite process instead of a pulsarlab broker")
    args = parser.parse_args()
    modes: tuple[str, ...] = {"both": ("process", "inproc"),
                              "all": ("process", "inproc", "lite")}.get(args.mode, (args.mode,))
    if args.url or args.pulsar_lite:
        modes = ("process",)
    lite = "lite" in modes
    modes = tuple(mode for mode in modes if mode != "lite")
    results: dict[str, Any] = {
        "bench": "client",
        "messages": args.messages,
        "payload_bytes": len(PAYLOAD),
        "batching_max_messages": BATCH,
        "storage": "durable",
        "runs": args.runs,
        "client": args.client,
        "peer": "pulsar-lite" if args.pulsar_lite else "pulsarlab",
    }
    for mode in modes:
        results[f"broker_{mode}"] = run_mode(mode, args.messages, args.runs, args.url,
                                             args.client, args.pulsar_lite)
    results["targets_msgs_per_s"] = {"broker_process": 200_000, "broker_inproc": 100_000}
    results["ratios_to_target"] = {
        f"{mode}_{phase}": round(
            results[f"broker_{mode}"][f"{phase}_msgs_per_s"]
            / results["targets_msgs_per_s"][f"broker_{mode}"], 3)
        for mode in modes for phase in ("produce", "receive_ack")
    }
    if lite:
        results["pulsar_lite"] = run_vs_official(args.messages, args.runs)
        ratios = results["pulsar_lite"].get("pulsarlab_vs_official")
        if ratios:
            for phase in ("produce", "receive_ack"):
                results["ratios_to_target"][f"lite_{phase}_vs_official"] = round(
                    ratios[phase] / results["pulsar_lite"][f"target_{phase}_vs_official"], 3)
    results["python"] = platform.python_version()
    results["cpus"] = os.cpu_count()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
