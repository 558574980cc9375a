"""Spark on pulsarlab topics: the ``pulsar`` data source and a small-machine session.

Needs ``pip install pulsarlab[spark]`` (PySpark >= 4.0, pyarrow) and Java 17. Importing
this package is cheap: PySpark is imported only when a function below is called.

.. code-block:: python

    from pulsarlab.spark import get_or_create_session
    spark = get_or_create_session()          # tuned local[2] session, "pulsar" registered
    df = (spark.read.format("pulsar")
          .option("service.url", "zmq://127.0.0.1:6650")
          .option("topic", "events")
          .load())

Registration: :func:`get_or_create_session` registers the source;
``pulsarlab.spark.register(spark)`` (or ``spark.dataSource.register(PulsarDataSource)``)
does it on any other session. An installed (non-editable) pulsarlab also ships the top-level
module ``pyspark_pulsarlab`` whose ``DefaultSource`` PySpark registers by itself at the first
data-source lookup. On a cluster, install ``pulsarlab[spark]`` into the executors' Python
and make ``service.url`` reachable from them; nothing assumes local mode.

Source options (keys are case-insensitive; values are strings)
---------------------------------------------------------------
``service.url``         required: a pulsarlab broker's ``zmq://host:port``, or any Pulsar
                        cluster's ``pulsar://host:6650`` / ``pulsar+ssl://host:6651``
``admin.url``           the admin REST API the driver plans from, ``http(s)://host:port``;
                        with ``zmq://``, the web URL of a broker this process started there by
                        default. Optional with ``pulsar://`` (preferred when given): without
                        it the driver plans over Pulsar's binary protocol with pulsarlab's
                        client (partitioned metadata, namespace listing, last message ids;
                        also with ``client`` ``official``), which knows no ledger list — so
                        ``maxOffsetsPerTrigger`` counts only each partition's current ledger
                        (a range crossing a ledger roll-over reads the older ledgers' rest in
                        full), and a missing topic reads as empty (a broker that auto-creates
                        topics creates it) instead of failing
``client``              the client the executors read with: ``pulsarlab`` (default; any
                        URL, no extra dependency) or ``official`` (``pulsar-client`` from
                        ``pulsarlab[ops]``, on each executor; ``pulsar://`` only)
``topic``               one topic (a partitioned topic reads every partition); ``load(topic)``
                        is the same
``topics``              comma-separated topics
``topicsPattern``       a regex over full topic names in one namespace:
                        ``persistent://tenant/ns/<regex>``, ``tenant/ns/<regex>`` or a bare
                        ``<regex>`` (public/default); the namespace is listed when each batch
                        or micro-batch is planned. Exactly one of topic/topics/topicsPattern.
``startingOffsets``     ``earliest`` (batch default), ``latest`` (streaming default) or JSON
``endingOffsets``       batch only: ``latest`` (default) or JSON
``failOnDataLoss``      ``true`` (default): fail when read positions disappear (topic deleted
                        or recreated, entries trimmed); ``false``: log and go on
``maxOffsetsPerTrigger`` streaming: at most this many *entries* per micro-batch (a batched
                        entry counts once), shared among partitions in proportion to their
                        backlog (PySpark >= 4.2)
``pollTimeoutMs``       how long a task waits for a message it knows exists (120000)
``connectionTimeoutMs`` bounded wait for an unreachable broker (10000)
``receiverQueueSize``, ``rowsPerBatch``  reader queue (10000) and Arrow batch rows (10000)
``pulsar.client.authPluginClassName`` + ``pulsar.client.authParams``  token authentication,
                        as StreamNative's connector spells it: the plugin
                        ``org.apache.pulsar.client.impl.auth.AuthenticationToken`` and
                        ``token:<token>`` or ``file:///path`` (read on the driver); also for
                        writes. ``pulsar.client.curveServerKey``: the broker's CURVE key.

Options of StreamNative's connector that mean nothing here (
``subscriptionPrefix``, ``predefinedSubscription``, other ``pulsar.client.*`` …) are ignored; any
other unknown option is an error. Every bad option raises :class:`PulsarSparkError` with a
one-line message (Spark wraps it; :func:`error_summary` gets the line back).

Schema
------
``value`` binary, ``__key`` binary, ``__topic`` string (the partition topic),
``__messageId`` binary (``MessageId.serialize()``), ``__publishTime`` timestamp,
``__eventTime`` timestamp (null when unset), ``__messageProperties`` map<string,string> —
StreamNative pulsar-spark's columns — plus ``__producerName`` string and ``__sequenceId``
bigint. A user schema (``.schema("value string, __publishTime timestamp")``) that lists a
subset is a projection; ``value`` and ``__key`` may be declared ``string`` (UTF-8 decoded).
PySpark's ``Row`` refuses attribute access to names starting with ``__``: write
``row["__topic"]``, not ``row.__topic``.

Offsets (positions) and the offsets JSON
----------------------------------------
A position ``[ledger, entry, partition, batch_index]`` (the order ``str(MessageId)``
prints) says how far a partition is read, **inclusive**; ``batch_index`` ``-1`` means the whole
entry, ``[-1, -1, partition, -1]`` means nothing read. ``startingOffsets`` reads the messages
*after* its position and ``endingOffsets`` reads *through* its position, so the end of one read
is the start of the next with no gap and no overlap. The JSON is an object keyed by full
partition-topic names (``persistent://public/default/t-partition-0``, or the topic itself if
it is not partitioned)::

    {"persistent://public/default/t-partition-0": [12, 41, 0, -1],
     "persistent://public/default/t-partition-1": "earliest"}

A value may also be ``"earliest"``, ``"latest"``, ``[ledger, entry]``, or a base64 string of
``MessageId.serialize()`` (a ``__messageId`` cell). Partitions not listed start at earliest
(``startingOffsets``) or end at latest (``endingOffsets``). Streaming checkpoints store the same
JSON (one key per partition, sorted), so a query's ``lastProgress["sources"][0]["endOffset"]``
can be passed as ``startingOffsets`` of a batch read; :func:`offsets_json` builds one from
message ids.

Streaming: one Spark partition per topic partition with new data; a micro-batch reads
``(start, end]`` of each partition and is a pure function of its two offsets (Spark's offset
log replays it exactly); partitions and matching topics that appear later start at earliest.
Reads use non-durable readers, so nothing on the broker holds data for Spark and ``commit()``
does nothing: the checkpoint is the only record of progress. ``Trigger.AvailableNow`` reads up
to the latest positions seen when the query starts.

Sink
----
``df.write.format("pulsar").mode("append").option("service.url", url).option("topic", t)
.save()`` (Spark refuses its default ``errorifexists`` mode for Python sources; or
``writeStream``) sends ``value`` (binary or string) with ``__key``, ``__messageProperties`` and
``__eventTime`` when present; without the ``topic`` option a ``__topic`` column picks each
row's topic. ``service.url`` is a pulsarlab broker's ``zmq://`` or any Pulsar cluster's
``pulsar://`` (no ``admin.url`` needed); the tasks write with pulsarlab's client. Every task
waits for the broker's receipts; a retried task sends again (at-least-once).
``mode("overwrite")`` is refused.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .options import PulsarSparkError
from .session import get_or_create_session, register, stop_session

if TYPE_CHECKING:
    from .datasource import PulsarDataSource

__all__ = [
    "PulsarDataSource",
    "PulsarSparkError",
    "error_summary",
    "get_or_create_session",
    "offsets_json",
    "register",
    "stop_session",
]


def __getattr__(name: str) -> Any:
    if name == "PulsarDataSource":
        from .datasource import PulsarDataSource

        return PulsarDataSource
    raise AttributeError(f"module 'pulsarlab.spark' has no attribute {name!r}")


def offsets_json(positions: Mapping[str, Any]) -> str:
    """The offsets JSON for ``{partition topic: position}``.

    A position is a :class:`~pulsarlab.MessageId` (read *through* it), a
    ``[ledger, entry, partition, batch_index]`` list, ``"earliest"`` or ``"latest"``.
    """
    from ..broker.message_id import MessageId
    from ..broker.topic_name import TopicName

    out: dict[str, Any] = {}
    for topic, value in positions.items():
        name = str(TopicName.get(topic))
        if isinstance(value, MessageId):
            value = [value.ledger_id(), value.entry_id(), value.partition(), value.batch_index()]
        elif isinstance(value, bytes | bytearray):
            value = base64.b64encode(bytes(value)).decode("ascii")
        elif not isinstance(value, str):
            value = [int(v) for v in value]
        out[name] = value
    return json.dumps(dict(sorted(out.items())))


_LINE = re.compile(r"PulsarSparkError: (.+)")


def error_summary(exc: BaseException) -> str:
    """One line for an error from a pulsar read or write (Spark wraps worker tracebacks)."""
    text = str(exc)
    found = _LINE.findall(text)
    if found:
        return found[-1].strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
