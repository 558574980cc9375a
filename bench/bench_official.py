"""The official pulsar-client against pulsarlab's pulsar://, pulsar-lite and real Apache Pulsar.

Each broker runs in its own process; this script is the client process (the official
client's C++ core). The load is the one of the team's client-level peer measurement:

* batched produce: ``create_producer(batching_enabled=True, batching_max_messages=100,
  batching_max_publish_delay_ms=1, block_if_queue_full=True)``, N ``send_async`` of 100 B
  and ``flush`` -> msgs/s;
* consume: a subscription made before the produce (so every message waits for it),
  N ``receive`` + ``acknowledge`` -> msgs/s;
* unbatched produce and consume: N/5 ``send_async`` with batching off and ``flush``, then
  as many ``receive`` + ``acknowledge`` -> msgs/s;
* synchronous unbatched send: M ``send`` of 100 B one after the other -> msgs/s and the
  latency p50 / p99 (µs).

Each measurement also gives the broker process's CPU (user + system) per message
(``broker_cpu_us_per_msg``, from ``/proc``), for pulsarlab and pulsar-lite alike, and the
ratios to pulsar-lite's against issue 24's targets (produce + consume: unbatched <= 0.5x,
batched <= 1x).

Brokers: pulsarlab with the memory store, with the durable store (an fdatasync per group
commit, its default) and with the durable store without that sync
(``journal_sync_data=false``, like pulsar-lite, which never syncs: like for like), and
``pulsar-lite --addr 127.0.0.1:PORT --db-path DIR`` (the PyPI
package of the ``bench`` extra; ``"skipped"`` with the reason when it is missing) and real
Apache Pulsar (``--real-pulsar 4.0`` by default: a standalone JVM assembled from Maven
Central by tests/conformance/real_pulsar.py, the same client and load; ``*_vs_real_pulsar``
ratios). Ratios
against pulsar-lite and the issue's targets (batched produce and consume >= 50 % of
pulsar-lite's, sync send p50 <= pulsar-lite's) close the JSON.

Broker CPU moves from run to run (pulsar-lite's unbatched CPU per message was 25 to 43 µs
in one session's runs), so ``--rounds R`` runs pulsarlab's brokers and pulsar-lite R times,
alternating, and adds every round's CPU ratios and their median
(``broker_cpu_ratio_rounds``, ``broker_cpu_ratio_median``); the other figures are the
first round's.

    .venv/bin/python bench/bench_official.py [--messages N] [--sync M] [--quick]
                                             [--rounds R] [--real-pulsar 3.3|4.0|none]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pulsar
from benchlib import cpu_seconds

PAYLOAD = b"x" * 100


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s")


# pulsarlab's brokers of the run: name -> (store, broker settings).
PULSARLAB_BROKERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "memory": ("memory", ()),
    "durable": ("durable", ()),
    "durable_nosync": ("durable", ("journal_sync_data=false",)),
}


@contextmanager
def pulsarlab_broker(storage: str, settings: tuple[str, ...] = ()) -> Iterator[tuple[str, int]]:
    """A ``pulsarlab broker`` process (``settings``: its ``--set NAME=VALUE``s); yields its
    pulsar:// URL and pid."""
    data_dir = tempfile.mkdtemp(prefix="bench-official-")
    args = [sys.executable, "-m", "pulsarlab.broker.cli", "broker", "--port", "0",
            "--pulsar-port", "0", "--web-port", "0", "--storage", storage,
            "--data-dir", data_dir]
    for setting in settings:
        args += ["--set", setting]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        lines = []
        while True:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"pulsarlab broker exited with {proc.wait(10)}")
            lines.append(line)
            if line.rstrip("\n") == "}":
                break
        yield json.loads("".join(lines))["pulsar_url"], proc.pid
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(data_dir, ignore_errors=True)


def pulsar_lite_binary(scratch: str) -> str:
    """The pulsar-lite executable (copied into ``scratch`` when the wheel installed it
    without its executable bit), or ``RuntimeError`` saying why there is none."""
    try:
        from pulsar_lite.binary_finder import find_pulsar_lite_binary
    except ImportError:
        raise RuntimeError("pulsar-lite is not installed (pip install -e '.[bench]')") from None
    try:
        binary = find_pulsar_lite_binary()
    except FileNotFoundError as exc:
        raise RuntimeError(f"pulsar-lite has no binary for this platform: {exc}") from None
    if not os.access(binary, os.X_OK):
        copy = os.path.join(scratch, "pulsar-lite")
        shutil.copyfile(binary, copy)
        os.chmod(copy, 0o755)
        binary = copy
    return binary


@contextmanager
def pulsar_lite_process() -> Iterator[tuple[str, int]]:
    """A pulsar-lite process on a free port; yields its pulsar:// URL and its pid (for
    benches that read its CPU time)."""
    port = _free_port()
    scratch = tempfile.mkdtemp(prefix="bench-pulsar-lite-")
    proc: subprocess.Popen | None = None
    try:
        binary = pulsar_lite_binary(scratch)
        proc = subprocess.Popen(
            [binary, "--addr", f"127.0.0.1:{port}", "--db-path",
             os.path.join(scratch, "data"), "--log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        _wait_for_port(port)
        yield f"pulsar://127.0.0.1:{port}", proc.pid
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)
        shutil.rmtree(scratch, ignore_errors=True)


@contextmanager
def real_pulsar(line: str) -> Iterator[tuple[str, str]]:
    """Apache Pulsar ``line`` (3.3 or 4.0) as a standalone JVM (tests/conformance's
    real_pulsar: jars from Maven Central into ~/.m2); yields (pulsar:// URL, version).
    RuntimeError (with the reason) when Java, Maven or the artifacts are missing."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "conformance"))
    try:
        import real_pulsar as rp
    finally:
        sys.path.pop(0)
    try:
        broker = rp.RealPulsar(rp.assemble(line))
    except rp.Unavailable as exc:
        raise RuntimeError(str(exc)) from None
    broker.start()
    try:
        yield broker.service_url, broker.assembly.version
    finally:
        broker.stop()


class Phases:
    """The seconds and the broker process's CPU seconds (user + system, 0 without its pid)
    of each named phase of a load: ``with phases("consume"): ...``."""

    def __init__(self, broker_pid: int | None) -> None:
        self.broker_pid = broker_pid
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start, cpu0 = time.perf_counter(), cpu_seconds(self.broker_pid)
        yield
        self.seconds[name] = time.perf_counter() - start
        self.cpu[name] = cpu_seconds(self.broker_pid) - cpu0

    def rate(self, name: str, count: int) -> int:
        """Messages per second of the phase."""
        return round(count / self.seconds[name])

    def cpu_us_per_msg(self, name: str, count: int) -> float:
        """Broker CPU µs per message of the phase."""
        return round(self.cpu[name] / count * 1e6, 2)


def run_load(url: str, messages: int, sync_sends: int,
             broker_pid: int | None = None) -> dict[str, Any]:
    """The three measurements against one broker, with the broker process's CPU µs per
    message of each (when its pid is known: the client's own CPU is not counted)."""
    client = pulsar.Client(url, operation_timeout_seconds=60,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        topic = f"bench-official-{time.time_ns()}"
        consumer = client.subscribe(topic, "bench", receiver_queue_size=1000)
        producer = client.create_producer(
            topic, batching_enabled=True, batching_max_messages=100,
            batching_max_publish_delay_ms=1, block_if_queue_full=True,
        )
        failed = []

        def done(result: pulsar.Result, _mid: pulsar.MessageId) -> None:
            if result != pulsar.Result.Ok:
                failed.append(result)

        def produce(to: pulsar.Producer, count: int) -> None:
            for _ in range(count):
                to.send_async(PAYLOAD, done)
            to.flush()

        def consume(of: pulsar.Consumer, count: int) -> None:
            for _ in range(count):
                of.acknowledge(of.receive(timeout_millis=30_000))

        phases = Phases(broker_pid)
        with phases("batched_produce"):
            produce(producer, messages)
        with phases("consume"):
            consume(consumer, messages)

        unbatched = max(1, messages // 5)
        unbatched_consumer = client.subscribe(f"{topic}-unbatched", "bench",
                                              receiver_queue_size=1000)
        unbatched_producer = client.create_producer(
            f"{topic}-unbatched", batching_enabled=False, block_if_queue_full=True,
            max_pending_messages=1000,
        )
        with phases("unbatched_produce"):
            produce(unbatched_producer, unbatched)
        with phases("unbatched_consume"):
            consume(unbatched_consumer, unbatched)

        sync_producer = client.create_producer(f"{topic}-sync", batching_enabled=False)
        latencies = []
        with phases("sync_send"):
            for _ in range(sync_sends):
                t0 = time.perf_counter()
                sync_producer.send(PAYLOAD)
                latencies.append(time.perf_counter() - t0)
        latencies.sort()
        per_msg = {}
        if broker_pid is not None:
            per_msg = {
                "broker_cpu_us_per_msg": {
                    "batched_produce": phases.cpu_us_per_msg("batched_produce", messages),
                    "consume": phases.cpu_us_per_msg("consume", messages),
                    "unbatched_produce": phases.cpu_us_per_msg("unbatched_produce", unbatched),
                    "unbatched_consume": phases.cpu_us_per_msg("unbatched_consume", unbatched),
                    "sync_send_unbatched": phases.cpu_us_per_msg("sync_send", sync_sends),
                }
            }
        return {
            "batched_produce_msgs_per_s": phases.rate("batched_produce", messages),
            "produce_failures": len(failed),
            "consume_receive_ack_msgs_per_s": phases.rate("consume", messages),
            "unbatched_produce_msgs_per_s": phases.rate("unbatched_produce", unbatched),
            "unbatched_consume_msgs_per_s": phases.rate("unbatched_consume", unbatched),
            "sync_send_msgs_per_s": phases.rate("sync_send", sync_sends),
            "sync_send_p50_us": round(statistics.median(latencies) * 1e6),
            "sync_send_p99_us": round(latencies[int(len(latencies) * 0.99) - 1] * 1e6),
            **per_msg,
        }
    finally:
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--sync", type=int, default=5_000)
    parser.add_argument("--quick", action="store_true", help="10k batched, 1k sync")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run pulsarlab's brokers and pulsar-lite this many times, "
                             "alternating, for the median of the CPU ratios")
    parser.add_argument("--real-pulsar", default="4.0", choices=["3.3", "4.0", "none"],
                        help="also run Apache Pulsar of this line (default 4.0; needs Java "
                             "and Maven, else 'skipped' with the reason)")
    args = parser.parse_args()
    if args.quick:
        args.messages, args.sync = 10_000, 1_000
    out: dict[str, Any] = {
        "messages": args.messages, "sync_sends": args.sync, "payload_bytes": len(PAYLOAD),
        "client": f"pulsar-client {pulsar.__version__}",
    }
    rounds = [_round(args.messages, args.sync) for _ in range(max(1, args.rounds))]
    out.update(rounds[0])
    if args.real_pulsar != "none":
        try:
            with real_pulsar(args.real_pulsar) as (url, version):
                out["real_pulsar"] = {"version": version,
                                      **run_load(url, args.messages, args.sync)}
        except RuntimeError as exc:
            out["real_pulsar"] = {"skipped": str(exc)}
        real = out["real_pulsar"]
        if "skipped" not in real:
            for name in PULSARLAB_BROKERS:
                ours = out[f"pulsarlab_{name}"]
                out[f"{name}_vs_real_pulsar"] = {
                    "batched_produce": round(ours["batched_produce_msgs_per_s"]
                                             / real["batched_produce_msgs_per_s"], 3),
                    "consume": round(ours["consume_receive_ack_msgs_per_s"]
                                     / real["consume_receive_ack_msgs_per_s"], 3),
                    "sync_send_p50": round(ours["sync_send_p50_us"]
                                           / real["sync_send_p50_us"], 3),
                }
    lite = out["pulsar_lite"]
    if "skipped" not in lite:
        for name in PULSARLAB_BROKERS:
            ours = out[f"pulsarlab_{name}"]
            produce = ours["batched_produce_msgs_per_s"] / lite["batched_produce_msgs_per_s"]
            consume = (ours["consume_receive_ack_msgs_per_s"]
                       / lite["consume_receive_ack_msgs_per_s"])
            out[f"{name}_vs_pulsar_lite"] = {
                "batched_produce": round(produce, 3),
                "consume": round(consume, 3),
                "sync_send_p50": round(ours["sync_send_p50_us"] / lite["sync_send_p50_us"], 3),
                **_cpu_ratios(ours, lite),
                "targets_met": {
                    "batched_produce_ge_50pct": produce >= 0.5,
                    "consume_ge_50pct": consume >= 0.5,
                    "sync_p50_le_pulsar_lite": ours["sync_send_p50_us"]
                    <= lite["sync_send_p50_us"],
                },
            }
        if len(rounds) > 1:
            out.update(_ratio_rounds(rounds))
    print(json.dumps(out, indent=2))


def _round(messages: int, sync_sends: int) -> dict[str, Any]:
    """One run of the load against each of pulsarlab's brokers and pulsar-lite."""
    out: dict[str, Any] = {}
    for name, (storage, settings) in PULSARLAB_BROKERS.items():
        with pulsarlab_broker(storage, settings) as (url, pid):
            out[f"pulsarlab_{name}"] = run_load(url, messages, sync_sends, pid)
    try:
        with pulsar_lite_process() as (url, pid):
            out["pulsar_lite"] = run_load(url, messages, sync_sends, pid)
    except RuntimeError as exc:
        out["pulsar_lite"] = {"skipped": str(exc)}
    return out


def _ratio_rounds(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Every round's broker CPU ratios to pulsar-lite's and, per ratio, their median."""
    per_round = [{name: _cpu_ratios(each[f"pulsarlab_{name}"], each["pulsar_lite"])
                  for name in PULSARLAB_BROKERS} for each in rounds]
    median: dict[str, Any] = {}
    for name in PULSARLAB_BROKERS:
        median[name] = {}
        for kind, target in (("batched", 1.0), ("unbatched", 0.5)):
            values = [ratios[name][f"broker_cpu_{kind}"] for ratios in per_round
                      if f"broker_cpu_{kind}" in ratios[name]]
            if values:
                mid = statistics.median(values)
                median[name][f"broker_cpu_{kind}"] = round(mid, 3)
                median[name][f"broker_cpu_{kind}_le_{target:g}x"] = mid <= target
    return {"broker_cpu_ratio_rounds": per_round, "broker_cpu_ratio_median": median}


def _cpu_ratios(ours: dict[str, Any], lite: dict[str, Any]) -> dict[str, Any]:
    """Broker CPU per message (produce + consume) against pulsar-lite's, and issue 24's
    targets (unbatched at most half of pulsar-lite's, batched at most pulsar-lite's)."""
    out: dict[str, Any] = {}
    mine, theirs = ours.get("broker_cpu_us_per_msg"), lite.get("broker_cpu_us_per_msg")
    if not mine or not theirs:
        return out
    for kind, phases, target in (("batched", ("batched_produce", "consume"), 1.0),
                                 ("unbatched", ("unbatched_produce", "unbatched_consume"),
                                  0.5)):
        lite_cpu = sum(theirs[p] for p in phases)
        if lite_cpu:
            ratio = sum(mine[p] for p in phases) / lite_cpu
            out[f"broker_cpu_{kind}"] = round(ratio, 3)
            out[f"broker_cpu_{kind}_le_{target:g}x"] = ratio <= target
    return out


if __name__ == "__main__":
    main()
