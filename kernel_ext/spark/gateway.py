"""The driver JVM's stderr without its start-up notices.

Spark 4 starts the driver JVM with ``--add-modules=jdk.incubator.vector``, so every JVM
prints ``WARNING: Using incubator modules: jdk.incubator.vector`` as its first line. The
JVM inherits the kernel's stderr, which ipykernel copies into the running cell: a notebook
would show that line as an error box. :func:`launch_filtered_gateway` starts the py4j
gateway with the JVM's stderr on a pipe and one daemon thread that copies every other line
to this process's stderr (Spark's own errors still reach the cell).
"""

from __future__ import annotations

import re
import sys
import threading
from subprocess import PIPE
from typing import IO, Any

__all__ = ["JVM_NOTICES", "copy_stderr", "launch_filtered_gateway"]

JVM_NOTICES = (
    re.compile(r"^WARNING: Using incubator modules: "),
)
"""Lines the JVM prints at start-up that say nothing about the user's job."""


def copy_stderr(stream: IO[bytes], out: IO[str] | None = None) -> None:
    """Copy ``stream``'s lines to ``out`` (default: ``sys.stderr`` at each line), except
    :data:`JVM_NOTICES`; returns at end of stream."""
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace")
        if any(notice.match(line) for notice in JVM_NOTICES):
            continue
        target = out if out is not None else sys.stderr
        target.write(line)
        target.flush()


def launch_filtered_gateway(conf: Any) -> Any:
    """Start the driver JVM for ``conf`` (a ``SparkConf``) as ``SparkContext``'s gateway."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway(conf, popen_kwargs={"stderr": PIPE})
    proc = getattr(gateway, "proc", None)
    if proc is not None and proc.stderr is not None:
        threading.Thread(
            target=copy_stderr, args=(proc.stderr,), name="pulsarlab-jvm-stderr", daemon=True
        ).start()
    SparkContext._ensure_initialized(gateway=gateway, conf=conf)
    return gateway
