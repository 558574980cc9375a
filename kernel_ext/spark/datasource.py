"""The ``pulsar`` data source for PySpark's Python Data Source API (PySpark >= 4.0).

Importable without IPython or a running session: Spark's Python workers import this module
to run the reader and writer classes (their instances are pickled; nothing here holds a
socket when it is pickled). See :mod:`pulsarlab.spark` for options and offset formats.

Where each method runs (PySpark 4.x): ``schema()``, ``reader()`` and ``partitions()`` in
planner workers; ``read()`` and ``write()`` in executor workers; the stream reader's
``initialOffset``/``latestOffset``/``partitions``/``commit`` in one long-lived Python process
per query, while its ``read()`` runs on a separate, pickled instance. So a partition carries
everything its ``read()`` needs and clients are created inside ``read()``/``write()``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    BinaryType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from .cluster_reading import read_range_official
from .metadata import BrokerMetadata, PartitionInfo
from .options import PulsarSparkError, SourceOptions, parse_sink_options, parse_source_options
from .positions import Position, advance, count_entries, split_budget
from .reading import COLUMN_TYPES, ReadSettings, read_range
from .writing import check_sink_schema, write_rows

try:  # PySpark >= 4.0 has DataSourceArrowWriter; >= 4.1 the streaming Arrow writer
    from pyspark.sql.datasource import DataSourceArrowWriter as _BatchWriterBase
except ImportError:  # pragma: no cover
    _BatchWriterBase = DataSourceWriter  # type: ignore[assignment,misc]
try:
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamWriterBase
except ImportError:  # pragma: no cover
    from pyspark.sql.datasource import DataSourceStreamWriter as _StreamWriterBase
try:  # PySpark >= 4.2: admission control and Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxRows,
        ReadMinRows,
        SupportsTriggerAvailableNow,
    )

    _STREAM_BASES: tuple[type, ...] = (DataSourceStreamReader, SupportsTriggerAvailableNow)
    HAS_ADMISSION_CONTROL = True
except ImportError:  # pragma: no cover - PySpark 4.0/4.1
    ReadAllAvailable = ReadMaxRows = ReadMinRows = None  # type: ignore[assignment,misc]
    _STREAM_BASES = (DataSourceStreamReader,)
    HAS_ADMISSION_CONTROL = False

__all__ = [
    "SCHEMA",
    "PulsarDataSource",
    "PulsarPartition",
]

log = logging.getLogger("pulsarlab.spark")

SCHEMA = StructType(
    [
        StructField("value", BinaryType()),
        StructField("__key", BinaryType()),
        StructField("__topic", StringType()),
        StructField("__messageId", BinaryType()),
        StructField("__publishTime", TimestampType()),
        StructField("__eventTime", TimestampType()),
        StructField("__messageProperties", MapType(StringType(), StringType())),
        StructField("__producerName", StringType()),
        StructField("__sequenceId", LongType()),
    ]
)
"""The source's schema: StreamNative pulsar-spark's columns, then two cheap extras."""

# An idle query with the default trigger asks for the latest offset ~80 times a second;
# the broker is asked at most this often (a stale answer only delays data to the next batch).
_METADATA_REFRESH_S = 0.25


@dataclass(frozen=True)
class PulsarPartition(InputPartition):
    """One topic partition's range ``(start, end]`` and how to read it (plain data)."""

    topic: str
    start: tuple[int, int, int, int]
    end: tuple[int, int, int, int]
    settings: ReadSettings


def _columns(schema: StructType) -> list[tuple[str, str]]:
    """``schema`` as (column, type) pairs; a subset of :data:`SCHEMA` is a projection."""
    out = []
    for field in schema.fields:
        allowed = COLUMN_TYPES.get(field.name)
        kind = field.dataType.simpleString()
        if allowed is None:
            raise PulsarSparkError(
                f"column {field.name!r} is not produced by the pulsar source (columns: "
                f"{', '.join(COLUMN_TYPES)})"
            )
        if kind not in allowed:
            raise PulsarSparkError(
                f"column {field.name!r} can be read as {' or '.join(allowed)}, not {kind}"
            )
        out.append((field.name, kind))
    if not out:
        raise PulsarSparkError("the schema given to the pulsar source has no columns")
    return out


def _arrow_schema(schema: StructType) -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(schema, timezone="UTC")
    except TypeError:  # pragma: no cover - older signature without timezone
        return to_arrow_schema(schema)


def _settings(opts: SourceOptions) -> ReadSettings:
    return ReadSettings(
        service_url=opts.service_url,
        poll_timeout_ms=opts.poll_timeout_ms,
        connection_timeout_ms=opts.connection_timeout_ms,
        receiver_queue_size=opts.receiver_queue_size,
        rows_per_batch=opts.rows_per_batch,
        fail_on_data_loss=opts.fail_on_data_loss,
        security=opts.security,
        client=opts.client,
    )


def _read(partition: InputPartition, schema: StructType) -> Any:
    if not isinstance(partition, PulsarPartition):  # Spark reads InputPartition(None) for []
        return
    read = read_range_official if partition.settings.client == "official" else read_range
    yield from read(
        partition.topic,
        Position(*partition.start),
        Position(*partition.end),
        partition.settings,
        _columns(schema),
        _arrow_schema(schema),
    )


def _check_known(spec_positions: dict[str, Any], known: dict[str, PartitionInfo],
                 option: str) -> None:
    for name in spec_positions:
        if name not in known:
            raise PulsarSparkError(
                f"option {option!r} names {name}, which is not a partition of the topics read "
                f"({', '.join(known) or 'none found'})"
            )


def _resolve_start(opts: SourceOptions, info: PartitionInfo) -> Position:
    spec = opts.starting.for_partition(info.topic)
    if spec == "earliest":
        return Position.earliest(info.index)
    if spec == "latest":
        return info.latest or Position.earliest(info.index)
    assert isinstance(spec, Position)
    return spec


# -- batch ------------------------------------------------------------------------------------


class PulsarBatchReader(DataSourceReader):
    """Batch read: one Spark partition per topic partition, ``(startingOffsets,
    endingOffsets]`` resolved against the broker when the query is planned."""

    def __init__(self, schema: StructType, opts: SourceOptions) -> None:
        self.schema = schema
        self.opts = opts
        _columns(schema)

    def partitions(self) -> list[InputPartition]:
        opts = self.opts
        meta = BrokerMetadata(opts.service_url, opts.connection_timeout_ms, opts.security,
                              opts.admin_url)
        try:
            known = meta.snapshot(opts)
        finally:
            meta.close()
        missing = [name for name, info in known.items() if not info.exists]
        if missing:
            raise PulsarSparkError(f"topic {missing[0]} does not exist")
        if not known:
            log.info("no topic matches %s", opts.subscription_label)
        for spec, option in ((opts.starting, "startingOffsets"), (opts.ending, "endingOffsets")):
            if spec.kind == "json":
                _check_known(spec.positions, known, option)
        settings = _settings(opts)
        out: list[InputPartition] = []
        for name, info in known.items():
            if info.latest is None:
                continue
            start = _resolve_start(opts, info)
            spec = opts.ending.for_partition(name)
            end = info.latest if spec in ("latest", "earliest") else spec
            assert isinstance(end, Position)
            if end.key > info.latest.key:
                end = info.latest
            if end.key <= start.key:
                continue
            out.append(PulsarPartition(name, tuple(start), tuple(end), settings))
        return out

    def read(self, partition: InputPartition) -> Any:
        return _read(partition, self.schema)


# -- streaming --------------------------------------------------------------------------------


def _to_offset(positions: dict[str, Position]) -> dict[str, list[int]]:
    return {name: positions[name].to_json() for name in sorted(positions)}


class PulsarStreamReader(*_STREAM_BASES):  # type: ignore[misc]
    """Micro-batch reader: offsets are positions per partition topic (see the package doc).

    A micro-batch reads ``(start, end]`` of every partition and is a pure function of the two
    offsets, so Spark replays a batch exactly from its offset log. New partitions (and topics
    matching ``topicsPattern``) start at earliest. ``commit()`` has nothing to do: no durable
    subscription exists, Spark's checkpoint is the only record of progress.
    """

    def __init__(self, schema: StructType, opts: SourceOptions) -> None:
        self.schema = schema
        self.opts = opts
        _columns(schema)
        self._meta: BrokerMetadata | None = None
        self._snapshot: dict[str, PartitionInfo] | None = None
        self._snapshot_at = 0.0
        self._target: dict[str, Position] | None = None
        self._previous: dict[str, Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_meta"] = None
        state["_snapshot"] = None
        return state

    # -- broker state (driver-side runner process) --

    def _partitions_now(self, fresh: bool = False) -> dict[str, PartitionInfo]:
        now = time.monotonic()
        if fresh or self._snapshot is None or now - self._snapshot_at >= _METADATA_REFRESH_S:
            if self._meta is None:
                self._meta = BrokerMetadata(
                    self.opts.service_url, self.opts.connection_timeout_ms, self.opts.security,
                    self.opts.admin_url,
                )
            self._snapshot = self._meta.snapshot(self.opts)
            self._snapshot_at = time.monotonic()
        return self._snapshot

    def initialOffset(self) -> dict:
        known = self._partitions_now(fresh=True)
        if self.opts.starting.kind == "json":
            _check_known(self.opts.starting.positions, known, "startingOffsets")
        return _to_offset({name: _resolve_start(self.opts, info) for name, info in known.items()})

    def prepareForTriggerAvailableNow(self) -> None:
        known = self._partitions_now(fresh=True)
        self._target = {
            name: info.latest for name, info in known.items() if info.latest is not None
        }
        log.info("availableNow target: %s", _to_offset(self._target))

    def getDefaultReadLimit(self) -> Any:
        if HAS_ADMISSION_CONTROL and self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable() if HAS_ADMISSION_CONTROL else None

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        if start is None:  # PySpark < 4.2 calls latestOffset() without arguments
            start = self._previous or self.initialOffset()
            limit = None
        known = self._partitions_now()
        starts: dict[str, Position] = {}
        for name, value in start.items():
            starts[name] = Position.from_json(value)
        ends: dict[str, Position] = {}
        available: dict[str, int] = {}
        ledgers: dict[str, tuple[tuple[int, int], ...]] = {}
        for name in sorted(set(starts) | set(known)):
            info = known.get(name)
            begin = starts.get(name)
            if begin is None:  # a new partition: from earliest
                assert info is not None
                begin = Position.earliest(info.index)
            if info is None or not info.exists:
                if not begin.is_earliest:
                    self._data_loss(f"partition {name} disappeared (it was read to "
                                    f"{begin.ledger}:{begin.entry})")
                if info is None:
                    continue
            latest = info.latest
            if self._target is not None:
                latest = self._target.get(name)
            if latest is None:
                ends[name] = begin
                continue
            if latest.key < begin.key:
                self._data_loss(
                    f"{name} now ends at {latest.ledger}:{latest.entry}, before the offset "
                    f"{begin.ledger}:{begin.entry} already read (was the topic recreated?)"
                )
                ends[name] = latest  # partitions() reads (earliest, latest] for this case
                continue
            ends[name] = latest
            if latest.key > begin.key:
                available[name] = count_entries(begin, latest, info.ledgers)
                ledgers[name] = info.ledgers
        ends = self._limit(starts, ends, available, ledgers, limit)
        result = _to_offset(ends)
        if result == start:
            result = start
        self._previous = result
        return result

    def _limit(self, starts: dict[str, Position], ends: dict[str, Position],
               available: dict[str, int], ledgers: dict[str, Any], limit: Any) -> dict:
        if not HAS_ADMISSION_CONTROL or limit is None or isinstance(limit, ReadAllAvailable):
            return ends
        if isinstance(limit, ReadMinRows):
            if sum(available.values()) < limit.min_rows:
                return {
                    name: starts.get(name, Position.earliest(pos.partition))
                    for name, pos in ends.items()
                }
            return ends
        if isinstance(limit, ReadMaxRows):
            shares = split_budget(available, max(1, int(limit.max_rows)))
            out = dict(ends)
            for name, share in shares.items():
                begin = starts.get(name) or Position.earliest(ends[name].partition)
                out[name] = advance(begin, share, ends[name], ledgers[name]) if share else begin
            return out
        return ends  # ReadMaxFiles / ReadMaxBytes: not meaningful here

    def _data_loss(self, what: str) -> None:
        if self.opts.fail_on_data_loss:
            raise PulsarSparkError(
                f"data loss: {what}; set failOnDataLoss=false to go on from what is left"
            )
        log.warning("data loss: %s; going on (failOnDataLoss=false)", what)

    def reportLatestOffset(self) -> dict | None:
        if self._snapshot is None:
            return None
        return _to_offset(
            {name: info.latest for name, info in self._snapshot.items() if info.latest}
        )

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        settings = _settings(self.opts)
        out: list[InputPartition] = []
        for name in sorted(end):
            stop = Position.from_json(end[name])
            begin = (
                Position.from_json(start[name]) if name in start
                else Position.earliest(stop.partition)
            )
            if stop.key < begin.key:  # the topic was recreated (failOnDataLoss=false)
                begin = Position.earliest(stop.partition)
            if stop.key == begin.key:
                continue
            out.append(PulsarPartition(name, tuple(begin), tuple(stop), settings))
        return out

    def read(self, partition: InputPartition) -> Any:
        return _read(partition, self.schema)

    def commit(self, end: dict) -> None:
        log.debug("committed %s", end)

    def stop(self) -> None:
        meta, self._meta = self._meta, None
        if meta is not None:
            meta.close()


# -- sink -------------------------------------------------------------------------------------


@dataclass
class PulsarCommitMessage(WriterCommitMessage):
    """What one write task sent."""

    messages: int


def _sink_fields(schema: StructType) -> dict[str, str]:
    return {f.name: f.dataType.simpleString() for f in schema.fields}


class PulsarBatchWriter(_BatchWriterBase):  # type: ignore[misc,valid-type]
    """``df.write.format("pulsar")``: every task sends its rows and waits for the receipts."""

    def __init__(self, schema: StructType, options: dict[str, str]) -> None:
        self.opts = parse_sink_options(options)
        check_sink_schema(_sink_fields(schema), self.opts)

    def write(self, iterator: Any) -> PulsarCommitMessage:
        return PulsarCommitMessage(write_rows(self.opts, iterator))

    def commit(self, messages: list[Any]) -> None:
        sent = sum(m.messages for m in messages if isinstance(m, PulsarCommitMessage))
        log.info("wrote %d messages", sent)

    def abort(self, messages: list[Any]) -> None:
        log.warning("write aborted; messages already sent stay on the topic (at-least-once)")


class PulsarStreamWriter(_StreamWriterBase):  # type: ignore[misc,valid-type]
    """``df.writeStream.format("pulsar")``: at-least-once (a replayed batch is sent again)."""

    def __init__(self, schema: StructType, options: dict[str, str]) -> None:
        self.opts = parse_sink_options(options)
        check_sink_schema(_sink_fields(schema), self.opts)

    def write(self, iterator: Any) -> PulsarCommitMessage:
        return PulsarCommitMessage(write_rows(self.opts, iterator))

    def commit(self, messages: list[Any], batchId: int) -> None:
        log.debug("batch %d written", batchId)

    def abort(self, messages: list[Any], batchId: int) -> None:
        log.warning("batch %d aborted; sent messages stay on the topic", batchId)


# -- the data source --------------------------------------------------------------------------


class PulsarDataSource(DataSource):
    """``spark.read.format("pulsar")``, ``readStream``, ``write`` and ``writeStream``."""

    @classmethod
    def name(cls) -> str:
        return "pulsar"

    def schema(self) -> StructType:
        # Runs at load() when no schema is given: check the options now, not at the first action.
        parse_source_options(self.options, streaming=False)
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return PulsarBatchReader(schema, parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return PulsarStreamReader(schema, parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise PulsarSparkError(
                "mode('overwrite') is not supported: a topic is append-only; use mode('append')"
            )
        return PulsarBatchWriter(schema, dict(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:
        return PulsarStreamWriter(schema, dict(self.options))
