"""A local SparkSession tuned for a small machine, with the ``pulsar`` source registered.

:func:`get_or_create_session` reuses the running session if there is one (only registering
the source on it) and otherwise starts one with: no UI, no console progress bar, as many
shuffle partitions as local cores, driver bound to 127.0.0.1, UTC session time zone, quiet
log4j2 logging from the first line, and the Python workers running this interpreter
(``PYSPARK_PYTHON``/``PYSPARK_DRIVER_PYTHON`` = ``sys.executable``, so they import the same
pulsarlab and pyarrow). ``fast_start=True`` also runs the driver JVM with the serial GC and
the C1 JIT only, which roughly halves the JVM's start-up CPU but slows long JVM-heavy jobs;
benchmarks pass ``fast_start=False``. Any ``spark.*`` setting given as a keyword wins.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["get_or_create_session", "register", "stop_session"]

_LOG4J2 = """\
# pulsarlab: Spark's own logging, errors only (written by pulsarlab.spark.session)
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.py4j.name = py4j
logger.py4j.level = error
# PySpark's "shell" logger: when its level differs from the root's, Spark prints
# "Setting default log level to WARN" at start-up whatever this file says
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""

_QUIET_LEVELS = {"ALL", "DEBUG", "ERROR", "FATAL", "INFO", "OFF", "TRACE", "WARN"}


def _log4j2_file() -> Path:
    path = Path(tempfile.gettempdir()) / "pulsarlab-spark-log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J2:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J2)
        tmp.replace(path)
    return path


def _local_cores(master: str) -> int:
    match = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\s*\d+)?\])?", master.strip())
    if not match:
        return 2
    if match.group(1) in (None, ""):
        return 1
    if match.group(1) == "*":
        return max(1, os.cpu_count() or 1)
    return max(1, int(match.group(1)))


def register(spark: SparkSession) -> None:
    """Register the ``pulsar`` format on ``spark`` (idempotent; registration is per session).

    Raises a one-line error naming the fix when Spark's Python workers run an interpreter
    that cannot import pulsarlab (see :mod:`.worker_python`)."""
    from .datasource import PulsarDataSource
    from .worker_python import check_worker_python

    check_worker_python(spark)
    spark.dataSource.register(PulsarDataSource)


def get_or_create_session(
    app_name: str = "pulsarlab",
    master: str = "local[2]",
    *,
    fast_start: bool = True,
    log_level: str = "ERROR",
    **conf: Any,
) -> SparkSession:
    """The running SparkSession (with ``pulsar`` registered), or a new tuned local one.

    ``conf`` holds extra Spark settings by their dotted names, e.g.
    ``get_or_create_session(**{"spark.driver.memory": "2g"})``; they are only applied when a
    new session starts (a running session is reused as it is).
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()
    if existing is None and SparkContext._active_spark_context is not None:
        existing = SparkSession.builder.getOrCreate()
    if existing is not None:
        register(existing)
        return existing

    level = log_level.upper()
    if level not in _QUIET_LEVELS:
        raise ValueError(f"log_level must be one of {', '.join(sorted(_QUIET_LEVELS))}")
    local = master.strip().startswith("local")
    if local:
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    cores = _local_cores(master)
    java_options = f"-Dlog4j2.configurationFile={_log4j2_file().as_uri()}"
    if fast_start:
        java_options += " -XX:+UseSerialGC -XX:TieredStopAtLevel=1"
    settings: dict[str, Any] = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(cores),
        "spark.default.parallelism": str(cores),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
        "spark.driver.extraJavaOptions": java_options,
    }
    if local:
        settings["spark.driver.host"] = "127.0.0.1"
        settings["spark.driver.bindAddress"] = "127.0.0.1"
    settings.update({str(k): v for k, v in conf.items()})
    texts = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in settings.items()}
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # not attached to an existing JVM
        from pyspark import SparkConf

        from .gateway import launch_filtered_gateway

        conf_all = SparkConf().setMaster(master).setAppName(app_name).setAll(texts.items())
        launch_filtered_gateway(conf_all)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, text in texts.items():
        builder = builder.config(key, text)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(level)
    register(spark)
    return spark


def stop_session() -> None:
    """Stop the running SparkSession, if any (the next :func:`get_or_create_session` starts
    a new one)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is None and SparkContext._active_spark_context is not None:
        spark = SparkSession.builder.getOrCreate()
    if spark is not None:
        spark.stop()
