"""Helpers the benchmarks share: a broker process, its RSS and CPU, a backlog writer.

``start_broker`` runs the real ``pulsarlab broker`` command on a data directory and waits
for its ready report. ``rss_mb`` reads a process's resident and peak resident memory,
``cpu_seconds`` the CPU time of a process or of one thread.
``write_backlog`` (also ``python bench/benchlib.py build ...``) lays down a backlog the way
the broker stores it — each message encoded with ``encode_entry`` and appended with
``ManagedLedger.add_entry``, group-committed every 1000 entries, on the broker's default
ledger settings — which is much faster than sending it through a socket; ``--crash`` leaves
without closing anything, as a killed broker would. A durable subscription at the earliest
position is recorded first on each topic, so the broker keeps the backlog for it (a topic
without subscriptions and retention is trimmed, as in Pulsar).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
PAYLOAD = b"x" * 100


def topic_names(count: int, prefix: str = "backlog") -> list[str]:
    return [f"persistent://public/default/{prefix}-{i:03d}" for i in range(count)]


def start_broker(
    data_dir: str | os.PathLike[str], log_path: str | os.PathLike[str] | None = None
) -> tuple[subprocess.Popen, str, float]:
    """A broker process on ``data_dir``: (process, tcp service url, seconds to ready)."""
    proc, report, ready = start_broker_report(data_dir, log_path)
    return proc, report["service_url"], ready


def start_broker_report(
    data_dir: str | os.PathLike[str], log_path: str | os.PathLike[str] | None = None
) -> tuple[subprocess.Popen, dict, float]:
    """A broker process on ``data_dir``: (process, its ready report, seconds to ready);
    the report has ``service_url`` (ZeroMQ) and ``pulsar_url`` among others."""
    args = [sys.executable, "-m", "pulsarlab.broker.cli", "broker", "--port", "0",
            "--pulsar-port", "0", "--web-port", "0",
            "--data-dir", str(data_dir)]
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
    started = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True)
    if log_path:
        log.close()  # type: ignore[union-attr]
    lines = []
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            proc.wait(10)
            raise RuntimeError(f"the broker exited with {proc.returncode} before it was ready")
        lines.append(line)
        if line.rstrip("\n") == "}":
            break
    ready = time.perf_counter() - started
    return proc, json.loads("".join(lines)), ready


def stop_broker(proc: subprocess.Popen, kill: bool = False) -> None:
    if proc.poll() is None:
        if kill:
            proc.kill()
        else:
            proc.terminate()
    proc.wait(120)


def cpu_seconds(pid: int | None = None, tid: int | None = None) -> float:
    """CPU seconds (user + system) so far of process ``pid``, or of thread ``tid`` of this
    process (its native id), from ``/proc``; 0 when neither is given."""
    if tid is not None:
        path = f"/proc/self/task/{tid}/stat"
    elif pid is not None:
        path = f"/proc/{pid}/stat"
    else:
        return 0.0
    with open(path) as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> dict[str, float]:
    """Resident (VmRSS) and peak resident (VmHWM) memory of ``pid``, in MiB."""
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = round(int(value.split()[0]) / 1024, 1)
    return {"rss_mb": fields["VmRSS"], "peak_rss_mb": fields["VmHWM"]}


def write_backlog(
    data_dir: str, topics: list[str], per_topic: int, crash: bool, subscription: str = "bench"
) -> dict:
    from pulsarlab.broker.cursor import ManagedCursor
    from pulsarlab.broker.entry import MessageMetadata, encode_entry
    from pulsarlab.broker.settings import BrokerSettings
    from pulsarlab.broker.storage import DurableStorage

    config = BrokerSettings().ledger_config()
    storage = DurableStorage(data_dir)
    started = time.perf_counter()
    now = int(time.time() * 1000)
    ledgers = []
    for name in topics:
        storage.metadata.put_topic(name, 0)
        ml = storage.open_ledger(name, config, now)
        cursor = ManagedCursor.at_start_position(subscription, ml, earliest=True)
        storage.metadata.put_cursor(name, subscription, cursor.state())
        ledgers.append(ml)
        for seq in range(per_topic):
            meta = MessageMetadata(producer_name="bench", sequence_id=seq, publish_time=now)
            ml.add_entry(encode_entry(meta, PAYLOAD), now)
            if seq % 1000 == 999:
                ml.sync()
        ml.sync()
        if not crash:
            ml.close()
    elapsed = time.perf_counter() - started
    size = sum(f.stat().st_size for f in Path(data_dir).rglob("*.log"))
    result = {
        "entries": per_topic * len(topics),
        "topics": len(topics),
        "seconds": round(elapsed, 1),
        "segment_bytes": size,
        "closed_cleanly": not crash,
    }
    if crash:
        print(json.dumps(result), flush=True)
        os._exit(0)  # no close, no index of the open ledgers: what a kill -9 leaves
    storage.close()
    return result


def build_in_subprocess(data_dir: str, topics: int, per_topic: int, prefix: str,
                        crash: bool = False, subscription: str = "bench") -> dict:
    """Run :func:`write_backlog` in a fresh process (so its memory is not the bench's)."""
    args = [sys.executable, str(BENCH_DIR / "benchlib.py"), "build", "--data-dir", data_dir,
            "--topics", str(topics), "--per-topic", str(per_topic), "--prefix", prefix,
            "--subscription", subscription]
    if crash:
        args.append("--crash")
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description="write a backlog with the storage API")
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build")
    build.add_argument("--data-dir", required=True)
    build.add_argument("--topics", type=int, default=1)
    build.add_argument("--per-topic", type=int, default=1000)
    build.add_argument("--prefix", default="backlog")
    build.add_argument("--crash", action="store_true", help="exit without closing anything")
    build.add_argument("--subscription", default="bench", help="durable, at the earliest")
    args = parser.parse_args()
    names = topic_names(args.topics, args.prefix)
    result = write_backlog(args.data_dir, names, args.per_topic, args.crash, args.subscription)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
