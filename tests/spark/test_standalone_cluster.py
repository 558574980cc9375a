"""Spark beyond local[N]: a real standalone cluster (a master and two workers on loopback,
started from pyspark's own ``spark-class``) reads a partitioned topic, one Spark partition
per topic partition, on both workers.

The driver runs in its own process (this test run already has a local SparkContext, and a
process has one), started by :func:`pulsarlab.spark.get_or_create_session` with
``master="spark://…"``. Every JVM is kept small; all are stopped by pid.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import unique

START_TIMEOUT_S = 180
JAVA_OPTS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_class() -> str:
    found = shutil.which("spark-class", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("pyspark's spark-class is not next to this interpreter")
    return found


def _wait_for(path: Path, text: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        if process.poll() is not None:
            raise AssertionError(f"{path.name}: exited {process.returncode}: "
                                 f"{path.read_text(errors='replace')[-1500:]}")
        time.sleep(0.2)
    raise AssertionError(f"{path.name} did not log {text!r} within {START_TIMEOUT_S} s")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory) -> Iterator[str]:
    """``spark://127.0.0.1:PORT`` of a master with two 1-core workers (work dirs w0, w1)."""
    spark_class = _spark_class()
    root = tmp_path_factory.mktemp("standalone")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_MEMORY": "256m",
           "SPARK_DAEMON_JAVA_OPTS": JAVA_OPTS, "PYSPARK_PYTHON": sys.executable}
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    processes: list[subprocess.Popen] = []

    def launch(name: str, *args: str) -> tuple[subprocess.Popen, Path]:
        log = root / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen([spark_class, *args], stdout=out,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env=env, cwd=root, start_new_session=True)
        processes.append(process)
        return process, log

    try:
        master, log = launch("master", "org.apache.spark.deploy.master.Master",
                             "--host", "127.0.0.1", "--port", str(port),
                             "--webui-port", str(_free_port()))
        _wait_for(log, "I have been elected leader", master)
        for i in range(2):
            worker, log = launch(f"worker{i}", "org.apache.spark.deploy.worker.Worker",
                                 "--host", "127.0.0.1", "--port", "0",
                                 "--webui-port", str(_free_port()), "--cores", "1",
                                 "--memory", "640m", "--work-dir", str(root / f"w{i}"), url)
            _wait_for(log, "Successfully registered with master", worker)
        yield url
    finally:
        for process in reversed(processes):
            _stop(process)


DRIVER = """
import json, os, sys, time
from pulsarlab.spark import get_or_create_session
spark = get_or_create_session("standalone-test", master=sys.argv[1], **{
    "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
    "spark.executor.memory": "512m", "spark.executor.cores": "1",
    "spark.executor.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
})
sc = spark.sparkContext
deadline = time.monotonic() + 120
while sc._jsc.sc().getExecutorMemoryStatus().size() < 3 and time.monotonic() < deadline:
    time.sleep(0.2)  # the driver plus two executors
df = (spark.read.format("pulsar").option("service.url", sys.argv[2])
      .option("topic", sys.argv[3]).load())
placed = df.rdd.mapPartitions(lambda rows: [(os.getcwd(), sum(1 for _ in rows))]).collect()
print("RESULT " + json.dumps({"partitions": df.rdd.getNumPartitions(), "placed": placed}))
spark.stop()
"""


def test_partitioned_topic_on_two_workers(standalone, broker, client, admin, tmp_path):
    topic = unique("standalone")
    admin.topics.create_partitioned_topic(topic, 3)
    with client.create_producer(topic) as producer:
        for i in range(60):
            producer.send(f"m{i}".encode(), partition_key=f"key-{i}")
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, standalone, broker.service_url, topic],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, done.stderr[-3000:]
    result = json.loads(lines[-1].removeprefix("RESULT "))
    assert result["partitions"] == 3
    assert sum(count for _, count in result["placed"]) == 60
    workers = {Path(cwd).parts[-3] for cwd, _ in result["placed"]}  # .../w0/app-…/0
    assert workers == {"w0", "w1"}
