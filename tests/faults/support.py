"""Shared helpers for the fault tests: broker subprocesses, client child processes, deadlines.

Run as a script, this module is also the child process the tests start and kill::

    python support.py produce URL TOPIC NAME COUNT [--batch N] [--keys N] [--pending N]
    python support.py consume URL TOPIC SUB TYPE [--ack P] [--cumulative P] [--seed S]
                                                 [--hold N] [--queue N]

Children speak one line per event on stdout (a SIGKILL may cut the last one; readers
keep only complete lines):

    READY                                  the producer / consumer is open
    R <index> <ledger> <entry> <batch>     producer: send receipt of message <index>
    E <index> <error>                      producer: the send of <index> failed
    G <ledger> <entry> <batch> <payload>   consumer: received (payload is ``name:index``)
    A <ledger> <entry> <batch>             consumer: about to acknowledge this message
    C <ledger> <entry> <batch>             consumer: about to acknowledge cumulatively
    HOLD                                   consumer: stopped receiving, holds what it has
    DONE                                   producer: every send completed
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve()
T = TypeVar("T")
Position = tuple[int, int]

START_TIMEOUT = 30.0


# -- deadlines ------------------------------------------------------------------------------


class Budget:
    """A wall-clock budget; the clock starts at its first use (not at import/collection)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._deadline: float | None = None

    @property
    def deadline(self) -> float:
        if self._deadline is None:
            self._deadline = time.monotonic() + self.seconds
        return self._deadline

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def left(self, reserve: float = 0.0) -> bool:
        return self.remaining() > reserve

    def check(self, what: str, reserve: float = 0.0) -> None:
        """Fail (rather than run on) when less than ``reserve`` seconds are left."""
        assert self.left(reserve), (
            f"the fault tests' {self.seconds:g} s budget is spent ({what}); the whole "
            "directory is meant to run in about 4 minutes"
        )


# Every test module of this directory draws on one budget (about 4 minutes on 2 cores).
SESSION = Budget(240.0)


def wait_until(
    predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.01
) -> T:
    """Poll ``predicate`` until it returns something truthy; fail naming ``what`` after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


# -- processes --------------------------------------------------------------------------


def serve_healthy(producer: Any, consumer: Any, tag: str, sent: list[bytes],
                  received: list[bytes]) -> None:
    """A healthy client's turn between fuzzing chunks: three messages sent, then three
    received and acknowledged (``sent`` and ``received`` gather them; the caller compares:
    in order, exactly once)."""
    for i in range(3):
        data = f"healthy:{tag}:{i}".encode()
        producer.send(data)
        sent.append(data)
    for _ in range(3):
        msg = consumer.receive(timeout_millis=30_000)
        received.append(msg.data())
        consumer.acknowledge(msg)


class _Lines:
    """Collects the complete lines of a pipe on a thread."""

    def __init__(self, stream: Any) -> None:
        self.lines: list[str] = []
        self.closed = threading.Event()
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self._thread.start()

    def _run(self, stream: Any) -> None:
        try:
            for raw in stream:
                if not raw.endswith(b"\n"):
                    break  # cut by a kill: not a complete event
                with self._cond:
                    self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                    self._cond.notify_all()
        finally:
            self.closed.set()
            with self._cond:
                self._cond.notify_all()

    def snapshot(self) -> list[str]:
        with self._cond:
            return list(self.lines)

    def wait_for(self, predicate: Callable[[list[str]], T], timeout: float, what: str) -> T:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                value = predicate(self.lines)
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (self.closed.is_set() and not value):
                    tail = "\n".join(self.lines[-5:])
                    raise AssertionError(
                        f"timed out waiting for {what} (last lines:\n{tail})"
                    )
                self._cond.wait(min(remaining, 0.2))

    def join(self, timeout: float = 10.0) -> None:
        self._thread.join(timeout)


def _python_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


class BrokerProcess:
    """``pulsarlab broker`` in a subprocess on a data directory; its report is parsed."""

    def __init__(
        self,
        data_dir: Path,
        settings: dict[str, Any] | None = None,
        log_path: Path | None = None,
        nofile: int | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.nofile = nofile  # RLIMIT_NOFILE (soft) of the broker process, if lowered
        self.settings = dict(settings or {})
        self.log_path = log_path or self.data_dir.parent / f"{self.data_dir.name}-broker.log"
        self.proc: subprocess.Popen | None = None
        self.report: dict[str, Any] = {}
        self._log_file: Any = None

    def start(self, timeout: float = START_TIMEOUT) -> BrokerProcess:
        args = [
            sys.executable, "-m", "pulsarlab.broker.cli", "broker",
            "--data-dir", str(self.data_dir), "--port", "0", "--pulsar-port", "0",
            "--web-port", "0", "--host", "127.0.0.1",
        ]
        for name, value in self.settings.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            args += ["--set", f"{name}={text}"]
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=self._log_file, stdin=subprocess.DEVNULL,
            env=_python_env(), preexec_fn=None if self.nofile is None else self._limit_files,
        )
        out = _Lines(self.proc.stdout)

        def parsed(lines: list[str]) -> dict[str, Any] | None:
            text = "\n".join(lines)
            if not text.rstrip().endswith("}"):
                return None
            try:
                return json.loads(text)
            except json.JSONDecodeError:
                return None

        try:
            self.report = out.wait_for(parsed, timeout, "the broker's ready report")
        except AssertionError:
            self.kill()
            raise AssertionError(
                f"the broker did not start; its log:\n{self.log_text()}"
            ) from None
        assert self.report["status"] == "ready", self.report
        return self

    def _limit_files(self) -> None:  # in the child, before exec
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, hard))

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def service_url(self) -> str:
        return self.report["service_url"]

    @property
    def web_url(self) -> str:
        """The broker's admin REST API (what ``pulsarlab.Admin`` talks to)."""
        return self.report["web_url"]

    def topic_report(self, topic: str) -> dict[str, Any]:
        return self.report["topics"].get(full_topic(topic), {"entries": 0, "subscriptions": {}})

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: no flush, no cursor save, no clean close."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.wait()

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM and wait for a clean exit (SIGKILL if it does not come)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.wait()

    def wait(self, timeout: float = 15.0) -> int | None:
        if self.proc is None:
            return None
        code = self.proc.wait(timeout)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        return code

    def rss(self) -> int:
        import psutil

        return psutil.Process(self.pid).memory_info().rss

    def log_text(self) -> str:
        try:
            return self.log_path.read_text("utf-8", "replace")
        except OSError:
            return ""


class Child:
    """A client child process (this module run as a script)."""

    def __init__(self, role: str, *args: Any) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE), role, *map(str, args)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.PIPE,
            env=_python_env(),
        )
        self.out = _Lines(self.proc.stdout)
        self.err = _Lines(self.proc.stderr)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def lines(self) -> list[str]:
        return self.out.snapshot()

    def events(self, kind: str) -> list[list[str]]:
        return [line.split(" ")[1:] for line in self.lines() if line.split(" ", 1)[0] == kind]

    def count(self, kind: str) -> int:
        return sum(1 for line in self.lines() if line.split(" ", 1)[0] == kind)

    def wait_for(self, predicate: Callable[[list[str]], T], timeout: float, what: str) -> T:
        try:
            return self.out.wait_for(predicate, timeout, what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nchild stderr:\n{self.stderr_text()}") from None

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        self.wait_for(lambda lines: "READY" in lines, timeout, "the child to be READY")

    def wait_count(self, kind: str, n: int, timeout: float) -> None:
        self.wait_for(
            lambda lines: sum(1 for x in lines if x.split(" ", 1)[0] == kind) >= n,
            timeout, f"{n} {kind!r} lines",
        )

    def wait_progress(self, kind: str, n: int, stall: float, timeout: float) -> None:
        """Wait for ``n`` ``kind`` lines; fail if none comes for ``stall`` seconds (a wedged
        broker) or the whole wait exceeds ``timeout``."""
        deadline = time.monotonic() + timeout
        seen = -1
        while True:
            count = self.count(kind)
            if count >= n:
                return
            if count == seen:
                raise AssertionError(
                    f"no progress: {count} of {n} {kind!r} lines, none for {stall:g} s "
                    f"(last lines: {self.lines()[-3:]})\nchild stderr:\n{self.stderr_text()}"
                )
            seen = count
            assert time.monotonic() < deadline, f"{count} of {n} {kind!r} lines in {timeout} s"
            with contextlib.suppress(AssertionError):
                self.out.wait_for(
                    lambda lines, c=count: sum(
                        1 for x in lines if x.split(" ", 1)[0] == kind
                    ) > c,
                    min(stall, max(0.0, deadline - time.monotonic())), "progress",
                )

    def send_signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)
        self.finish()

    def finish(self, timeout: float = 15.0) -> int:
        code = self.proc.wait(timeout)
        self.out.join()
        self.err.join()
        for stream in (self.proc.stdout, self.proc.stderr, self.proc.stdin):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        return code

    def stderr_text(self) -> str:
        return "\n".join(self.err.snapshot()[-20:])


# -- broker state on disk -----------------------------------------------------------------


def full_topic(topic: str) -> str:
    return topic if "://" in topic else f"persistent://public/default/{topic}"


def persisted_cursor(data_dir: Path, topic: str, subscription: str) -> dict[str, Any] | None:
    """The cursor state saved in the metadata store, read from a copy (the data directory is
    left exactly as the crash left it)."""
    with tempfile.TemporaryDirectory(prefix="faults-meta-") as tmp:
        for suffix in ("", "-wal"):
            source = data_dir / f"metadata.sqlite{suffix}"
            if source.exists():
                shutil.copyfile(source, Path(tmp) / source.name)
        db = sqlite3.connect(Path(tmp) / "metadata.sqlite")
        try:
            rows = db.execute(
                "SELECT state FROM cursors WHERE ml_name = ? AND cursor_name = ?",
                (full_topic(topic), subscription),
            ).fetchall()
        finally:
            db.close()
    return json.loads(rows[0][0]) if rows else None


class CursorState:
    """Which positions a persisted cursor state counts as acknowledged."""

    def __init__(self, state: dict[str, Any] | None) -> None:
        self.mark_delete: Position | None = None
        self.ranges: list[tuple[Position, Position]] = []
        if state is not None:
            self.mark_delete = tuple(state["markDelete"])  # type: ignore[assignment]
            self.ranges = [
                ((lo_l, lo_e), (up_l, up_e))
                for lo_l, lo_e, up_l, up_e in state.get("individuallyDeleted", [])
            ]

    def acked(self, position: Position) -> bool:
        if self.mark_delete is not None and position <= self.mark_delete:
            return True
        return any(lower < position <= upper for lower, upper in self.ranges)


def segment_files(data_dir: Path, topic: str) -> list[Path]:
    """The segment files of a topic's managed ledger, oldest ledger first."""
    from pulsarlab.broker.storage.durable import segment_dir_name

    directory = Path(data_dir) / "ledgers" / segment_dir_name(full_topic(topic))
    return sorted(directory.glob("*.log"), key=lambda p: int(p.stem))


def parse_position(parts: Iterable[str]) -> tuple[int, int, int]:
    ledger, entry, batch = (int(x) for x in list(parts)[:3])
    return ledger, entry, batch


# -- the child programs -------------------------------------------------------------------

_OUT_LOCK = threading.Lock()


def _emit(line: str) -> None:
    with _OUT_LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def _produce(args: argparse.Namespace) -> None:
    from pulsarlab import Client, Result

    client = Client(args.url, operation_timeout_seconds=10)
    producer = client.create_producer(
        args.topic,
        producer_name=args.name,
        batching_enabled=args.batch > 1,
        batching_max_messages=max(1, args.batch),
        batching_max_publish_delay_ms=5,
        block_if_queue_full=True,
        max_pending_messages=args.pending,
        send_timeout_millis=args.send_timeout,
    )
    _emit("READY")

    def callback(index: int) -> Callable[[Any, Any], None]:
        def done(result: Any, msg_id: Any) -> None:
            if result == Result.Ok and msg_id is not None:
                _emit(f"R {index} {msg_id.ledger_id()} {msg_id.entry_id()} {msg_id.batch_index()}")
            else:
                _emit(f"E {index} {result}")

        return done

    for index in range(args.count):
        key = f"k{index % args.keys}" if args.keys else None
        producer.send_async(
            f"{args.name}:{index}".encode(), callback(index), partition_key=key
        )
    producer.flush()
    _emit("DONE")
    sys.stdin.readline()  # stay connected until told (or killed)
    client.close()


def _consume(args: argparse.Namespace) -> None:
    from pulsarlab import Client, ConsumerType, InitialPosition, Timeout

    rng = random.Random(args.seed)
    client = Client(args.url, operation_timeout_seconds=10)
    consumer = client.subscribe(
        args.topic,
        args.sub,
        consumer_type=getattr(ConsumerType, args.type),
        initial_position=InitialPosition.Earliest,
        receiver_queue_size=args.queue,
        consumer_name=args.name or None,
    )
    _emit("READY")
    received = 0
    while True:
        if args.hold and received >= args.hold:
            _emit("HOLD")
            sys.stdin.readline()  # hold the unacked messages until killed
            os._exit(0)
        try:
            msg = consumer.receive(timeout_millis=200)
        except Timeout:
            continue
        received += 1
        mid = msg.message_id()
        where = f"{mid.ledger_id()} {mid.entry_id()} {mid.batch_index()}"
        _emit(f"G {where} {msg.data().decode()}")
        roll = rng.random()
        if roll < args.cumulative:
            _emit(f"C {where}")
            consumer.acknowledge_cumulative(msg)
        elif roll < args.cumulative + args.ack:
            _emit(f"A {where}")
            consumer.acknowledge(msg)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="fault-test child process")
    roles = parser.add_subparsers(dest="role", required=True)
    produce = roles.add_parser("produce")
    produce.add_argument("url")
    produce.add_argument("topic")
    produce.add_argument("name")
    produce.add_argument("count", type=int)
    produce.add_argument("--batch", type=int, default=1)
    produce.add_argument("--keys", type=int, default=0)
    produce.add_argument("--pending", type=int, default=64)
    produce.add_argument("--send-timeout", type=int, default=30_000)
    produce.set_defaults(func=_produce)
    consume = roles.add_parser("consume")
    consume.add_argument("url")
    consume.add_argument("topic")
    consume.add_argument("sub")
    consume.add_argument("type")
    consume.add_argument("--name", default="")
    consume.add_argument("--ack", type=float, default=1.0)
    consume.add_argument("--cumulative", type=float, default=0.0)
    consume.add_argument("--seed", type=int, default=0)
    consume.add_argument("--hold", type=int, default=0)
    consume.add_argument("--queue", type=int, default=100)
    consume.set_defaults(func=_consume)
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
