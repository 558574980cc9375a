"""Options of the ``pulsar`` Spark data source, parsed into frozen dataclasses.

Pure Python (no PySpark, no broker): :func:`parse_source_options` and
:func:`parse_sink_options` turn the string-valued, case-insensitive option map Spark hands a
data source into validated settings, and raise :class:`PulsarSparkError` — a one-line message
naming the option and the problem — for anything wrong. The offsets JSON accepted by
``startingOffsets``/``endingOffsets`` is parsed by :func:`parse_offsets_spec`; its format is
described in :mod:`pulsarlab.spark`.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .positions import Position

__all__ = [
    "OffsetsSpec",
    "PulsarSparkError",
    "SinkOptions",
    "SourceOptions",
    "parse_offsets_spec",
    "parse_sink_options",
    "parse_source_options",
]

DEFAULT_POLL_TIMEOUT_MS = 120_000
DEFAULT_CONNECTION_TIMEOUT_MS = 10_000
DEFAULT_RECEIVER_QUEUE_SIZE = 10_000
DEFAULT_ROWS_PER_BATCH = 10_000

# StreamNative pulsar-spark options that mean nothing here; accepted (and ignored) so that
# queries written for that connector port unchanged.
_IGNORED = frozenset(
    {
        "subscriptionprefix",
        "predefinedsubscription",
        "allowdifferenttopicschemas",
        "waitingfornonexistedtopic",
        "topic.schema.class",
    }
)
# StreamNative options with no pulsarlab equivalent (yet): an error rather than a surprise.
_UNSUPPORTED = {
    "startingtime": "startingTime",
    "endingtime": "endingTime",
    "maxbytespertrigger": "maxBytesPerTrigger",
}
_IGNORED_PREFIXES = ("pulsar.client.", "pulsar.admin.", "pulsar.reader.", "pulsar.producer.")
# StreamNative's connector passes client authentication as pulsar.client.* options; these
# are read (the other pulsar.client.* keys are accepted and ignored).
_TOKEN_PLUGINS = frozenset(
    {"org.apache.pulsar.client.impl.auth.AuthenticationToken", "AuthenticationToken", "token"}
)

_SOURCE_KEYS = frozenset(
    {
        "service.url",
        "admin.url",
        "topic",
        "topics",
        "topicspattern",
        "path",
        "startingoffsets",
        "endingoffsets",
        "failondataloss",
        "maxoffsetspertrigger",
        "polltimeoutms",
        "connectiontimeoutms",
        "receiverqueuesize",
        "rowsperbatch",
        "client",
    }
)
CLIENTS = ("pulsarlab", "official")
"""``client``: the Pulsar client the executors read a ``pulsar://`` cluster with."""


class PulsarSparkError(ValueError):
    """A bad option, an unreachable broker or lost data; the message is one line."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


@dataclass(frozen=True)
class OffsetsSpec:
    """``earliest``, ``latest`` or explicit positions per partition topic.

    ``kind`` is ``"earliest"``, ``"latest"`` or ``"json"``; for ``"json"``, ``positions``
    maps full partition-topic names to a :class:`Position` or the string ``"earliest"`` /
    ``"latest"``, and partitions not listed use ``default``.
    """

    kind: str
    positions: dict[str, Position | str] = field(default_factory=dict)
    default: str = "earliest"

    def for_partition(self, topic: str) -> Position | str:
        """The position for ``topic``: a :class:`Position`, ``"earliest"`` or ``"latest"``."""
        if self.kind != "json":
            return self.kind
        return self.positions.get(topic, self.default)


@dataclass(frozen=True)
class ClientSecurity:
    """How readers, writers and the driver's admin connection authenticate; plain data.

    ``token`` is the auth token itself (read from ``file://`` on the driver, so executors need
    no access to the file); ``curve_server_key`` is the broker's CURVE public key.
    """

    token: str | None = None
    curve_server_key: str | None = None

    def client_kwargs(self) -> dict[str, object]:
        """Keyword arguments for ``pulsarlab.Client`` and ``pulsarlab.Admin``."""
        kwargs: dict[str, object] = {}
        if self.token is not None:
            from ..broker.client.auth import AuthenticationToken

            kwargs["authentication"] = AuthenticationToken(self.token)
        if self.curve_server_key is not None:
            kwargs["curve_server_key"] = self.curve_server_key
        return kwargs

    def __repr__(self) -> str:  # never print a token in a plan or a log line
        token = "<set>" if self.token is not None else None
        return f"ClientSecurity(token={token}, curve_server_key={self.curve_server_key!r})"


def parse_client_security(opts: dict[str, str]) -> ClientSecurity:
    """``pulsar.client.authPluginClassName`` + ``pulsar.client.authParams`` (StreamNative's
    names; a token plugin with ``token:<token>``, ``file:///path`` or the bare token), and
    ``pulsar.client.curveServerKey`` (pulsarlab's CURVE extension)."""
    plugin = opts.get("pulsar.client.authpluginclassname", "").strip()
    params = opts.get("pulsar.client.authparams", "").strip()
    token = None
    if plugin or params:
        if plugin not in _TOKEN_PLUGINS:
            raise PulsarSparkError(
                "option 'pulsar.client.authPluginClassName' must be "
                "org.apache.pulsar.client.impl.auth.AuthenticationToken (token authentication "
                f"is the only kind pulsarlab has), not {plugin or 'missing'!r}"
            )
        from ..broker.tokens import read_token

        try:
            token = read_token(params.removeprefix("token:"))
        except ValueError as exc:
            raise PulsarSparkError(f"option 'pulsar.client.authParams': {exc}") from None
        if not token:
            raise PulsarSparkError(
                "option 'pulsar.client.authParams' needs a token: 'token:<token>' or "
                "'file:///path/to/token'"
            )
    curve = opts.get("pulsar.client.curveserverkey", "").strip() or None
    return ClientSecurity(token=token, curve_server_key=curve)


@dataclass(frozen=True)
class SourceOptions:
    """What a reader needs, validated; picklable (plain data)."""

    service_url: str
    topics: tuple[str, ...] = ()
    topics_pattern: str | None = None
    starting: OffsetsSpec = OffsetsSpec("earliest")
    ending: OffsetsSpec = OffsetsSpec("latest")
    fail_on_data_loss: bool = True
    max_offsets_per_trigger: int | None = None
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    connection_timeout_ms: int = DEFAULT_CONNECTION_TIMEOUT_MS
    receiver_queue_size: int = DEFAULT_RECEIVER_QUEUE_SIZE
    rows_per_batch: int = DEFAULT_ROWS_PER_BATCH
    security: ClientSecurity = field(default_factory=lambda: ClientSecurity())
    admin_url: str | None = None
    """A Pulsar cluster's admin REST API (with a ``pulsar://`` service URL); None plans over
    the binary protocol."""
    client: str = "pulsarlab"
    """Which client reads on the executors: ``pulsarlab`` (any URL) or ``official``
    (``pulsar-client``; ``pulsar://`` only)."""

    @property
    def subscription_label(self) -> str:
        """How the topic selection reads in messages."""
        if self.topics_pattern is not None:
            return f"topicsPattern {self.topics_pattern!r}"
        return ", ".join(self.topics)


@dataclass(frozen=True)
class SinkOptions:
    """What a writer needs, validated."""

    service_url: str
    topic: str | None = None
    connection_timeout_ms: int = DEFAULT_CONNECTION_TIMEOUT_MS
    batching_enabled: bool = True
    security: ClientSecurity = field(default_factory=lambda: ClientSecurity())


# -- parsing ----------------------------------------------------------------------------------


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): ("" if v is None else str(v)) for k, v in dict(options).items()}


def _check_keys(opts: dict[str, str], allowed: frozenset[str], what: str) -> None:
    for key in sorted(opts):
        if key in allowed or key in _IGNORED or key.startswith(_IGNORED_PREFIXES):
            continue
        raise PulsarSparkError(f"unknown {what} option {key!r} (options: {_names(allowed)})")


def _names(keys: frozenset[str]) -> str:
    spelled = {
        "service.url": "service.url", "topic": "topic", "topics": "topics",
        "topicspattern": "topicsPattern", "path": "path",
        "startingoffsets": "startingOffsets", "endingoffsets": "endingOffsets",
        "failondataloss": "failOnDataLoss", "maxoffsetspertrigger": "maxOffsetsPerTrigger",
        "polltimeoutms": "pollTimeoutMs", "connectiontimeoutms": "connectionTimeoutMs",
        "receiverqueuesize": "receiverQueueSize", "rowsperbatch": "rowsPerBatch",
        "batchingenabled": "batchingEnabled",
    }
    return ", ".join(spelled.get(k, k) for k in sorted(keys))


def _service_url(opts: dict[str, str], *, cluster_ok: bool = False) -> str:
    url = opts.get("service.url", "").strip()
    if not url:
        raise PulsarSparkError(
            "option 'service.url' is required, e.g. .option('service.url', "
            "'zmq://127.0.0.1:6650')"
        )
    if cluster_ok and re.fullmatch(r"pulsar(\+ssl)?://[^/\s:]+:\d+/?", url):
        return url
    if not re.fullmatch(r"(zmq|tcp|pulsarlab)://[^/\s:]+:\d+/?", url):
        what = "zmq://host:port or pulsar://host:port" if cluster_ok else "zmq://host:port"
        raise PulsarSparkError(f"option 'service.url' must look like {what}, not {url!r}")
    return url


def _admin_url(opts: dict[str, str], service_url: str) -> str | None:
    """``admin.url``: the admin REST API topic metadata comes from. With a ``pulsar://``
    service URL it is optional (preferred when given): without it the driver plans over
    Pulsar's binary protocol (:mod:`.binary_lookup`). With ``zmq://`` it defaults to the web
    URL of the broker this process started there, found here on the driver (Spark plans in
    worker processes, which know no broker)."""
    url = opts.get("admin.url", "").strip() or None
    if url is None:
        if service_url.startswith("pulsar"):
            return None
        from ..broker import local_brokers

        return local_brokers.web_url_for(service_url)
    if not re.fullmatch(r"https?://[^/\s]+/?", url):
        raise PulsarSparkError(f"option 'admin.url' must look like http://host:port, not {url!r}")
    return url


def _topic_name(name: str, option: str) -> str:
    from ..broker.topic_name import TopicName

    try:
        parsed = TopicName.get(name)
    except Exception as exc:  # InvalidTopicName
        raise PulsarSparkError(f"option {option!r}: {exc}") from None
    if not parsed.persistent:
        raise PulsarSparkError(
            f"option {option!r}: {name!r} is non-persistent; only persistent topics keep "
            "messages to read"
        )
    return str(parsed)


def _bool(opts: dict[str, str], key: str, spelled: str, default: bool) -> bool:
    raw = opts.get(key)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise PulsarSparkError(f"option {spelled!r} must be true or false, not {raw!r}")


def _positive_int(opts: dict[str, str], key: str, spelled: str, default: int | None) -> int | None:
    raw = opts.get(key)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise PulsarSparkError(
            f"option {spelled!r} must be a positive integer, not {raw!r}"
        ) from None
    if value <= 0:
        raise PulsarSparkError(f"option {spelled!r} must be a positive integer, not {raw!r}")
    return value


def _topic_selection(opts: dict[str, str]) -> tuple[tuple[str, ...], str | None]:
    given = [
        spelled
        for key, spelled in (("topic", "topic"), ("topics", "topics"),
                             ("topicspattern", "topicsPattern"), ("path", "path"))
        if opts.get(key, "").strip()
    ]
    if len(given) != 1:
        if not given:
            raise PulsarSparkError(
                "give exactly one of the options 'topic', 'topics' or 'topicsPattern' "
                "(none was given)"
            )
        raise PulsarSparkError(
            "give exactly one of the options 'topic', 'topics' or 'topicsPattern' "
            f"(got {' and '.join(repr(g) for g in given)})"
        )
    which = given[0]
    raw = opts[which.lower()].strip()
    if which in ("topic", "path"):
        return (_topic_name(raw, which),), None
    if which == "topics":
        names = [t.strip() for t in raw.split(",")]
        if any(not t for t in names):
            raise PulsarSparkError(
                f"option 'topics' must be a comma-separated list of topic names, not {raw!r}"
            )
        return tuple(dict.fromkeys(_topic_name(t, "topics") for t in names)), None
    namespace_pattern(raw)  # validates
    return (), raw


def namespace_pattern(pattern: str) -> tuple[re.Pattern[str], str]:
    """``topicsPattern`` → (regex over full topic names, the namespace to list).

    Java's rules: ``persistent://tenant/ns/regex`` and ``tenant/ns/regex`` list that namespace;
    a bare regex lists ``public/default``. The regex must match a whole topic name.
    """
    text = pattern.strip()
    try:
        if "://" in text:
            domain, _, rest = text.partition("://")
            parts = rest.split("/", 2)
            if domain != "persistent" or len(parts) < 3 or not parts[0] or not parts[1]:
                raise PulsarSparkError(
                    f"option 'topicsPattern' must be persistent://tenant/namespace/<regex>, "
                    f"tenant/namespace/<regex> or <regex>, not {pattern!r}"
                )
            return re.compile(text), f"{parts[0]}/{parts[1]}"
        parts = text.split("/", 2)
        if len(parts) == 3 and re.fullmatch(r"[-=:.\w]+", parts[0]) and re.fullmatch(
            r"[-=:.\w]+", parts[1]
        ):
            return re.compile(re.escape(f"persistent://{parts[0]}/{parts[1]}/") + parts[2]), (
                f"{parts[0]}/{parts[1]}"
            )
        return re.compile(re.escape("persistent://public/default/") + text), "public/default"
    except re.error as exc:
        raise PulsarSparkError(
            f"option 'topicsPattern' is not a valid regular expression: {exc}"
        ) from None


def parse_offsets_spec(raw: str | None, option: str, default: str) -> OffsetsSpec:
    """Parse ``earliest``, ``latest`` or the offsets JSON (see :mod:`pulsarlab.spark`)."""
    if raw is None or raw.strip() == "":
        return OffsetsSpec(default)
    text = raw.strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetsSpec(text.lower())
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise PulsarSparkError(
            f"option {option!r} must be 'earliest', 'latest' or a JSON object of positions "
            f"per partition topic; JSON error: {exc}"
        ) from None
    if not isinstance(data, dict) or not data:
        raise PulsarSparkError(
            f"option {option!r}: the JSON must be a non-empty object "
            '{"<partition topic>": [ledger, entry, partition, batch_index], ...}'
        )
    positions: dict[str, Position | str] = {}
    for name, value in data.items():
        topic = _topic_name(name, option)
        positions[topic] = _position_value(value, topic, option)
    return OffsetsSpec("json", positions, default)


def _position_value(value: object, topic: str, option: str) -> Position | str:
    from ..broker.topic_name import TopicName

    index = TopicName.get(topic).partition_index
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("earliest", "latest"):
            return lowered
        try:
            data = base64.b64decode(value.strip(), validate=True)
            from ..broker.message_id import MessageId

            mid = MessageId.deserialize(data)
        except (binascii.Error, ValueError):
            raise PulsarSparkError(
                f"option {option!r}: position of {topic} must be [ledger, entry, partition, "
                f"batch_index], 'earliest', 'latest' or a base64 serialized MessageId, "
                f"not {value!r}"
            ) from None
        return Position(mid.ledger_id(), mid.entry_id(), index, mid.batch_index())
    if (
        isinstance(value, list)
        and len(value) in (2, 3, 4)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        if len(value) == 2:
            ledger, entry, batch = value[0], value[1], -1
        elif len(value) == 3:
            ledger, entry, batch = value
        else:
            ledger, entry, partition, batch = value
            if partition not in (index, -1):
                raise PulsarSparkError(
                    f"option {option!r}: position {value} names partition {partition}, but "
                    f"{topic} is partition {index}"
                )
        if batch < -1 or (ledger < 0 and (ledger, entry) != (-1, -1)):
            raise PulsarSparkError(f"option {option!r}: invalid position {value} for {topic}")
        return Position(ledger, entry, index, batch)
    raise PulsarSparkError(
        f"option {option!r}: position of {topic} must be [ledger, entry, partition, batch_index],"
        f" 'earliest', 'latest' or a base64 serialized MessageId, not {json.dumps(value)}"
    )


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validate a reader's options (batch or streaming); raise :class:`PulsarSparkError`."""
    opts = _lower(options)
    for key, spelled in _UNSUPPORTED.items():
        if key in opts:
            raise PulsarSparkError(f"option {spelled!r} is not supported by pulsarlab")
    _check_keys(opts, _SOURCE_KEYS, "source")
    url = _service_url(opts, cluster_ok=True)
    topics, pattern = _topic_selection(opts)
    starting = parse_offsets_spec(
        opts.get("startingoffsets"), "startingOffsets", "latest" if streaming else "earliest"
    )
    if streaming and opts.get("endingoffsets", "").strip():
        raise PulsarSparkError("option 'endingOffsets' is for batch reads, not streaming queries")
    ending = parse_offsets_spec(opts.get("endingoffsets"), "endingOffsets", "latest")
    if ending.kind == "earliest":
        raise PulsarSparkError("option 'endingOffsets' cannot be 'earliest' (it reads nothing)")
    for spec, spelled in ((starting, "startingOffsets"), (ending, "endingOffsets")):
        if spec.kind == "json" and pattern is None:
            for name in spec.positions:
                if not any(name == t or name.startswith(t + "-partition-") for t in topics):
                    raise PulsarSparkError(
                        f"option {spelled!r} names {name}, which is not one of the topics read "
                        f"({', '.join(topics)})"
                    )
    return SourceOptions(
        service_url=url,
        topics=topics,
        topics_pattern=pattern,
        starting=starting,
        ending=ending,
        fail_on_data_loss=_bool(opts, "failondataloss", "failOnDataLoss", True),
        max_offsets_per_trigger=_positive_int(
            opts, "maxoffsetspertrigger", "maxOffsetsPerTrigger", None
        ),
        poll_timeout_ms=_positive_int(opts, "polltimeoutms", "pollTimeoutMs",
                                      DEFAULT_POLL_TIMEOUT_MS) or DEFAULT_POLL_TIMEOUT_MS,
        connection_timeout_ms=_positive_int(
            opts, "connectiontimeoutms", "connectionTimeoutMs", DEFAULT_CONNECTION_TIMEOUT_MS
        ) or DEFAULT_CONNECTION_TIMEOUT_MS,
        receiver_queue_size=_positive_int(
            opts, "receiverqueuesize", "receiverQueueSize", DEFAULT_RECEIVER_QUEUE_SIZE
        ) or DEFAULT_RECEIVER_QUEUE_SIZE,
        rows_per_batch=_positive_int(opts, "rowsperbatch", "rowsPerBatch",
                                     DEFAULT_ROWS_PER_BATCH) or DEFAULT_ROWS_PER_BATCH,
        security=parse_client_security(opts),
        admin_url=_admin_url(opts, url),
        client=_client(opts, url),
    )


def _client(opts: dict[str, str], service_url: str) -> str:
    """``client``: ``pulsarlab`` (the default) or ``official``, which reads only clusters
    (the official client does not speak zmq://)."""
    client = opts.get("client", "").strip().lower() or "pulsarlab"
    if client not in CLIENTS:
        raise PulsarSparkError(f"option 'client' must be pulsarlab or official, not {client!r}")
    if client == "official" and not service_url.startswith("pulsar"):
        raise PulsarSparkError("option 'client' official reads a pulsar:// service.url; a "
                               f"zmq:// broker ({service_url}) is read with pulsarlab's client")
    return client


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Validate a writer's options; raise :class:`PulsarSparkError`."""
    opts = _lower(options)  # unknown keys are ignored: Spark passes its own (checkpointLocation)
    url = _service_url(opts, cluster_ok=True)  # pulsarlab's client writes to either
    topic_raw = (opts.get("topic") or opts.get("path") or "").strip()
    if opts.get("topic", "").strip() and opts.get("path", "").strip():
        raise PulsarSparkError("give the target topic once: option 'topic' or save(path)")
    topic = _topic_name(topic_raw, "topic") if topic_raw else None
    return SinkOptions(
        service_url=url,
        topic=topic,
        connection_timeout_ms=_positive_int(
            opts, "connectiontimeoutms", "connectionTimeoutMs", DEFAULT_CONNECTION_TIMEOUT_MS
        ) or DEFAULT_CONNECTION_TIMEOUT_MS,
        batching_enabled=_bool(opts, "batchingenabled", "batchingEnabled", True),
        security=parse_client_security(opts),
    )
