"""The ``%pulsar spark`` / ``%%pulsar spark`` and ``%pulsar stream`` commands: a Spark
session with the ``pulsar`` data source, SQL over a topic, streaming queries and their status.

``SparkCommands`` is a part of :class:`~.magics.PulsarMagics`; it uses the magics'
``runtime`` and ``shell`` and the ``_full`` topic-name helper.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from .progress import Progress, in_kernel
from .results import JSONDict, Lines
from .runtime import BrokerRuntime, PulsarMagicError, one_line

__all__ = ["SparkCommands"]


class SparkCommands:
    """The Spark commands of the ``%pulsar`` magics."""

    runtime: BrokerRuntime
    shell: Any
    _spark_session: Any

    def _full(self, topic: str) -> str:
        raise NotImplementedError

    @staticmethod
    def _spark_module() -> Any:
        return importlib.import_module("pulsarlab.spark")

    def _spark_error(self, exc: BaseException) -> str:
        try:
            return self._spark_module().error_summary(exc)
        except Exception:
            return one_line(exc)

    def _session(self, master: str = "local[2]", conf: Sequence[tuple[str, str]] = ()) -> Any:
        pspark = self._spark_module()
        with Progress(None, "starting Spark (the first start takes a while)",
                      enabled=None if self._spark_session is None else False) as progress:
            spark = pspark.get_or_create_session(app_name="pulsarlab", master=master,
                                                 **dict(conf))
            pspark.register(spark)
            progress.update(1, force=True)
        self._spark_session = spark
        self.shell.user_ns["spark"] = spark
        return spark

    def _cmd_spark(self, args: argparse.Namespace, cell: str | None) -> Any:
        if args.spark_command == "stream":
            return getattr(self, f"_stream_{args.stream_command}")(args)
        if args.stop:
            for name in sorted(self.runtime.streams):
                self.runtime.stop_stream(name)
                print(f"stopped streaming query {name}")
            self._spark_module().stop_session()
            self._spark_session = None
            if "spark" in self.shell.user_ns:
                del self.shell.user_ns["spark"]
            print("stopped the Spark session")
            return None
        spark = self._session(args.master, args.conf)
        version = getattr(spark, "version", "?")
        print(f"Spark {version} session ready with the 'pulsar' format; bound to `spark`")
        return None

    def _reader(self, spark: Any, topic: str, streaming: bool, starting: str | None,
                ending: str | None = None) -> Any:
        reader = (spark.readStream if streaming else spark.read).format("pulsar")
        reader = reader.option("service.url", self.runtime.require_url()).option("topic", topic)
        connection = self.runtime.connection()
        if connection.admin_url:
            reader = reader.option("admin.url", connection.admin_url)
        if connection.client_name != "pulsarlab":  # the executors read with the same client
            reader = reader.option("client", connection.client_name)
        if starting:
            reader = reader.option("startingOffsets", starting)
        if ending:
            reader = reader.option("endingOffsets", ending)
        return reader.load()

    def _spark_cell(self, args: argparse.Namespace, cell: str) -> Any:
        query = cell.strip()
        if not query:
            raise PulsarMagicError("the cell is the Spark SQL query, and it is empty")
        topic = self._full(args.topic)
        self.runtime.require_url()
        spark = self._session()
        if isinstance(spark, _real_session_type()) and importlib.util.find_spec("pandas") is None:
            raise PulsarMagicError("showing a Spark result needs pandas: pip install pandas")
        view = args.view or _view_name(topic)
        self._reader(spark, topic, False, args.starting, args.ending).createOrReplaceTempView(
            view
        )
        with Progress(None, f"running Spark SQL over {view}"):
            result = spark.sql(query)
            if args.limit:
                frame = result.limit(args.limit + 1).toPandas()
                if len(frame) > args.limit:
                    frame = frame.head(args.limit)
                    print(f"showing the first {args.limit} rows (--limit 0 for all)")
            else:
                frame = result.toPandas()
        return frame

    def _stream_start(self, args: argparse.Namespace) -> None:
        topic = self._full(args.topic)
        rt = self.runtime
        rt.require_url()
        name = args.name or _view_name(topic)
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise PulsarMagicError(f"--name must be an identifier (a table name), not {name!r}")
        if name in rt.streams:
            if _query_active(rt.streams[name]):
                raise PulsarMagicError(f"a streaming query named {name} is already running")
            rt.stop_stream(name)
        spark = self._session()
        checkpoint = args.checkpoint or tempfile.mkdtemp(prefix=f"pulsarlab-stream-{name}-")
        try:
            df = self._reader(spark, topic, True, args.starting)
            writer = (df.writeStream.format(args.sink).queryName(name).outputMode("append")
                      .option("checkpointLocation", checkpoint))
            if args.available_now:
                writer = writer.trigger(availableNow=True)
            else:
                writer = writer.trigger(processingTime=f"{args.interval:g} seconds")
            query = writer.start()
        except BaseException:
            if not args.checkpoint:
                shutil.rmtree(checkpoint, ignore_errors=True)
            raise
        rt.add_stream(name, query, None if args.checkpoint else checkpoint)
        where = (f"memory table {name} (spark.table({name!r}))" if args.sink == "memory"
                 else "the console (the kernel's terminal)")
        print(f"streaming query {name} started: {topic} → {where}")
        return None

    def _stream_status(self, args: argparse.Namespace) -> Any:
        rt = self.runtime
        if args.name is not None and args.name not in rt.streams:
            raise PulsarMagicError(f"no streaming query named {args.name}")
        names = [args.name] if args.name else sorted(rt.streams)
        if not names:
            return Lines([], title="streaming queries:", empty="(none started here)")
        if args.watch > 0:
            self._watch(names, args.watch)
        statuses = [JSONDict(_stream_status(name, rt.streams[name]), title=f"stream {name}")
                    for name in names]
        return statuses[0] if args.name else statuses

    def _watch(self, names: list[str], seconds: float) -> None:
        from IPython.display import display

        def text() -> str:
            lines = []
            for name in names:
                s = _stream_status(name, self.runtime.streams[name])
                lines.append(f"{name}: {s['state']}, {s['message']}, batch {s['batch']}, "
                             f"{s['rows_last_batch']} rows last batch, "
                             f"{s['rows_per_second']} rows/s")
            return "\n".join(lines)

        live = in_kernel(self.shell)
        handle = display(_Text(text()), display_id=True) if live else None
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
            if handle is not None:
                handle.update(_Text(text()))

    def _stream_stop(self, args: argparse.Namespace) -> None:
        rt = self.runtime
        if args.name is not None and args.name not in rt.streams:
            raise PulsarMagicError(f"no streaming query named {args.name}")
        names = [args.name] if args.name else sorted(rt.streams)
        for name in names:
            rt.stop_stream(name)
            print(f"stopped streaming query {name}")
        if not names:
            print("no streaming query to stop")
        return None


def _real_session_type() -> tuple[type, ...]:
    """PySpark's SparkSession class, if PySpark is importable (fakes are not checked)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return ()
    return (SparkSession,)


class _Text:
    """Plain text for a display handle (shown as-is, not as a string repr)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text)


def _query_active(query: Any) -> bool:
    try:
        return bool(query.isActive)
    except Exception:
        return False


def _stream_status(name: str, query: Any) -> dict[str, Any]:
    """A streaming query's state, status message and last progress as one flat dict."""
    status = dict(getattr(query, "status", None) or {})
    progress = dict(getattr(query, "lastProgress", None) or {})
    info: dict[str, Any] = {
        "name": name,
        "id": str(getattr(query, "id", "")),
        "state": "active" if _query_active(query) else "stopped",
        "message": status.get("message", ""),
        "batch": progress.get("batchId"),
        "rows_last_batch": progress.get("numInputRows"),
        "rows_per_second": progress.get("processedRowsPerSecond"),
    }
    try:
        error = query.exception()
    except Exception:
        error = None
    if error is not None:
        info["error"] = one_line(error)
    return info


def _view_name(topic: str) -> str:
    local = topic.rstrip("/").rsplit("/", 1)[-1]
    name = re.sub(r"\W", "_", local)
    return name if name and not name[0].isdigit() else f"t_{name}"
