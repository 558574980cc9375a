"""Benchmark: Redis Streams end to end from Python, the peer pulsarlab is compared with.

Starts its own ``redis-server`` on 127.0.0.1 on a free port (installing the Debian package
first when it is missing and we are root), then runs one producer process (XADD of 100 B
values, pipelined 100 at a time) and one consumer process (XREADGROUP COUNT 100 + XACK of
what it read) through a consumer group, and counts msgs/s at the consumer from its first to
its last message — the way ``bench_e2e.py`` counts the broker. The server keeps everything
in memory (no RDB snapshots, no AOF): Redis's fastest setting, not a durable one.

If the server or the ``redis`` client library cannot be had, the JSON says ``"skipped"``
and why. ``bench_e2e.py`` calls :func:`redis_e2e` to put the ratio beside its own numbers.

    python bench/bench_redis.py [--messages N]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import socket
import subprocess
import tempfile
import time

PIPELINE = 100
STREAM = "bench"
GROUP = "g"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def find_redis_server(install: bool = True) -> tuple[str | None, str]:
    """The ``redis-server`` binary, installing Debian's package if allowed; else why not."""
    for candidate in (shutil.which("redis-server"), "/usr/bin/redis-server",
                      "/usr/sbin/redis-server"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate, "found"
    if not install:
        return None, "redis-server is not installed"
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return None, "redis-server is not installed and cannot be (needs root and apt-get)"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for step in (["apt-get", "install", "-y", "-qq", "redis-server"],
                 ["apt-get", "update", "-qq"],
                 ["apt-get", "install", "-y", "-qq", "redis-server"]):
        done = subprocess.run(step, env=env, capture_output=True, text=True, timeout=600)
        if step[1] == "install" and done.returncode == 0:
            break
    path = shutil.which("redis-server") or "/usr/bin/redis-server"
    if os.access(path, os.X_OK):
        return path, "installed with apt-get"
    return None, "apt-get install redis-server failed: " + (done.stderr.strip()[-200:] or "?")


def _producer(port: int, n: int, size: int, start) -> None:  # type: ignore[no-untyped-def]
    import redis

    client = redis.Redis(host="127.0.0.1", port=port)
    value = b"x" * size
    start.wait()
    sent = 0
    while sent < n:
        pipe = client.pipeline(transaction=False)
        for _ in range(min(PIPELINE, n - sent)):
            pipe.xadd(STREAM, {"d": value})
        pipe.execute()
        sent += PIPELINE
    client.close()


def _consumer(port: int, n: int, ready, out) -> None:  # type: ignore[no-untyped-def]
    import redis

    client = redis.Redis(host="127.0.0.1", port=port)
    client.xgroup_create(STREAM, GROUP, id="$", mkstream=True)
    ready.set()
    got = 0
    first = None
    while got < n:
        reply = client.xreadgroup(GROUP, "c", {STREAM: ">"}, count=PIPELINE, block=1000)
        if not reply:
            continue
        if first is None:
            first = time.perf_counter()
        ids = [msg_id for msg_id, _fields in reply[0][1]]
        client.xack(STREAM, GROUP, *ids)
        got += len(ids)
    out.put((got, time.perf_counter() - first))
    client.close()


def redis_e2e(messages: int = 200_000, size: int = 100) -> dict:
    """One producer and one consumer process through a local redis-server; msgs/s."""
    result: dict = {"bench": "redis", "messages": messages, "payload_bytes": size,
                    "pipeline": PIPELINE}
    try:
        import redis
    except ImportError:
        result["skipped"] = "the redis client library is missing: pip install 'pulsarlab[bench]'"
        return result
    server, how = find_redis_server()
    if server is None:
        result["skipped"] = how
        return result
    result["client"] = f"redis-py {redis.__version__}" + (
        " + hiredis" if getattr(redis.utils, "HIREDIS_AVAILABLE", False) else "")
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            [server, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
             "--appendonly", "no", "--dir", tmp, "--daemonize", "no", "--logfile", ""],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            client = redis.Redis(host="127.0.0.1", port=port)
            deadline = time.monotonic() + 10
            while True:
                try:
                    info = client.info("server")
                    break
                except redis.ConnectionError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        result["skipped"] = f"redis-server did not start (exit {proc.poll()})"
                        return result
                    time.sleep(0.05)
            result["redis_version"] = info.get("redis_version")
            result["server_persistence"] = "none (in memory: no RDB, no AOF)"
            ctx = mp.get_context("spawn")
            ready, start, out = ctx.Event(), ctx.Event(), ctx.Queue()
            consumer = ctx.Process(target=_consumer, args=(port, messages, ready, out))
            consumer.start()
            ready.wait(30)
            producer = ctx.Process(target=_producer, args=(port, messages, size, start))
            producer.start()
            start.set()
            got, elapsed = out.get(timeout=600)
            producer.join(60)
            consumer.join(60)
            client.close()
        finally:
            proc.terminate()
            proc.wait(30)
    result["msgs_per_s"] = round(got / elapsed)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    args = parser.parse_args()
    print(json.dumps(redis_e2e(args.messages), indent=2))


if __name__ == "__main__":
    main()
