"""The ``%pulsar`` grammar: the argument parsers of every sub-command and of ``%%pulsar spark``.

Parsing only: a malformed line is a one-line :class:`PulsarMagicError`; what each command
does lives with the magics (:mod:`.magics`).
"""

from __future__ import annotations

import argparse
from typing import Any

from .broker.cli_security import add_client_options
from .broker.client.enums import ConsumerType
from .cluster.connection import CLIENTS
from .runtime import PulsarMagicError, parse_setting

__all__ = ["SUB_TYPES", "build_parser", "build_spark_cell_parser", "subparsers"]

# --type value -> member name of the connected client's ConsumerType (pulsarlab's or pulsar's)
SUB_TYPES = {t.wire_name.lower(): t.name for t in ConsumerType}


# -- argument parsing ---------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    """argparse that raises a one-line :class:`PulsarMagicError` instead of exiting."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("add_help", False)
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.add_argument("-h", "--help", action="store_true", help="show this help")

    def error(self, message: str) -> Any:  # type: ignore[override]
        raise PulsarMagicError(f"{self.prog}: {message} (see {self.prog} --help)")

    def exit(self, status: int = 0, message: str | None = None) -> Any:  # type: ignore[override]
        raise PulsarMagicError(f"{self.prog}: {(message or 'bad arguments').strip()}")


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _setting(text: str) -> tuple[str, Any]:
    try:
        return parse_setting(text)
    except PulsarMagicError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _retention(text: str) -> tuple[int, int]:
    """``MINUTES,MB`` (each an int >= -1; -1 means unlimited, as in Pulsar)."""
    parts = [part.strip() for part in text.split(",")]
    try:
        minutes, size_mb = (int(part) for part in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected MINUTES,MB (e.g. 60,100; -1 for unlimited), not {text!r}"
        ) from None
    if minutes < -1 or size_mb < -1:
        raise argparse.ArgumentTypeError(f"must be -1 (unlimited) or more, not {text!r}")
    return minutes, size_mb


def _property(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"properties are KEY=VALUE, not {text!r}")
    return name, value


def build_parser() -> argparse.ArgumentParser:
    """The ``%pulsar`` line-magic parser (every level has an explicit ``-h/--help``)."""
    parser = _Parser(
        prog="%pulsar",
        description="Run a pulsarlab broker and work with its topics from a notebook.",
        epilog="Each subcommand has its own --help. %%pulsar (cell magic) takes "
               "'produce TOPIC' (a message per line) and 'spark TOPIC' (Spark SQL).",
    )
    sub = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=_Parser)

    p = sub.add_parser("start", help="start a broker in the kernel (or --beside it)",
                       description="Start a broker: on a daemon thread of this kernel, or "
                                   "with --beside as a 'pulsarlab broker' child process. "
                                   "Storage is durable in a temporary directory unless "
                                   "--data-dir or --memory is given.")
    p.add_argument("--beside", action="store_true",
                   help="run 'pulsarlab broker' as a child process instead of a thread")
    p.add_argument("--data-dir", help="durable storage directory (kept after stop)")
    p.add_argument("--memory", action="store_true", help="in-memory storage, nothing on disk")
    p.add_argument("--port", type=_non_negative, default=0,
                   help="service port (default 0: a free port)")
    p.add_argument("--events-port", type=_non_negative, default=0,
                   help="event-stream port (default 0: a free port)")
    p.add_argument("--set", dest="settings", action="append", type=_setting, default=[],
                   metavar="NAME=VALUE", help="a broker setting (broker.conf snake_case name)")

    sub.add_parser("stop", help="stop the broker started here (or forget a connected one)",
                   description="Stop the broker started with %pulsar start (a connected "
                               "broker is only forgotten), its live views, streaming queries "
                               "and the magics' client.")
    sub.add_parser("status", help="the current broker, as a dict",
                   description="Show (and return as a dict) the broker the magics use.")

    p = sub.add_parser("connect", help="use a broker that runs elsewhere",
                       description="Use a running broker (checked with one admin call): a "
                                   "pulsarlab broker (zmq://) or any Pulsar cluster "
                                   "(pulsar:// with its admin REST API). A cluster is "
                                   "read-only unless --allow-writes is given; then each "
                                   "change is announced before it is made.")
    p.add_argument("url", metavar="URL",
                   help="service URL: zmq://host:port, pulsar://host:6650 or "
                        "pulsar+ssl://host:6651")
    p.add_argument("--admin-url", metavar="URL",
                   help="the admin REST API, http(s)://host:port (a cluster's default: the "
                        "service host, port 8080, or 8443 for pulsar+ssl; a zmq:// broker's "
                        "web_url, needed unless it runs on this machine)")
    p.add_argument("--token-file", metavar="F", help="a file holding the auth token")
    p.add_argument("--tls-trust-certs", metavar="CA",
                   help="CA file for pulsar+ssl:// and https:// (a cluster)")
    p.add_argument("--allow-writes", action="store_true",
                   help="let the magics change a cluster (produce, consume's acks, skip, "
                        "reset-cursor, create, policies)")
    p.add_argument("--client", choices=CLIENTS, default=None,
                   help="the Pulsar client for a pulsar:// cluster: pulsarlab (the default: "
                        "pure Python, nothing more to install, the client of the tutorials) "
                        "or official (pulsar-client, from pip install 'pulsarlab[ops]')")
    p.add_argument("--events", metavar="URL",
                   help="its event-stream URL, tcp://host:port (for %%pulsar show)")
    p.add_argument("--timeout", type=_positive, default=5000, metavar="MS",
                   help="how long to wait for the broker's answer (default 5000)")
    add_client_options(p)  # --token, --curve-server-key (brokers with auth or CURVE)

    p = sub.add_parser("topics", help="list the topics of a namespace",
                       description="List (and return) the topics of a namespace.")
    p.add_argument("namespace", nargs="?", default="public/default", metavar="NAMESPACE",
                   help="tenant/namespace (default public/default)")

    p = sub.add_parser(
        "policies", help="show or set a namespace's TTL, retention and de-duplication",
        description="Set the given namespace policies (like pulsar-admin namespaces "
        "set-message-ttl / set-retention / set-deduplication), then show them all.")
    p.add_argument("namespace", nargs="?", default="public/default", metavar="NAMESPACE",
                   help="tenant/namespace (default public/default)")
    p.add_argument("--ttl", type=_non_negative, metavar="SECONDS",
                   help="message TTL in seconds (0: messages never expire)")
    p.add_argument("--retention", type=_retention, metavar="MINUTES,MB",
                   help="retention time in minutes and size in MB (-1: unlimited), e.g. 60,100")
    p.add_argument("--dedup", choices=("on", "off"),
                   help="producer de-duplication for the namespace")

    p = sub.add_parser("create", help="create a topic",
                       description="Create a non-partitioned topic, or a partitioned one.")
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("--partitions", type=_non_negative, default=0, metavar="N",
                   help="number of partitions (default 0: not partitioned)")

    p = sub.add_parser("produce", help="send messages to a topic",
                       description="Send VALUE (the rest of the line) --count times; "
                                   "%%pulsar produce TOPIC sends each line of the cell.")
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("value", nargs="*", metavar="VALUE", help="the message (rest of the line)")
    p.add_argument("--key", help="partition key")
    p.add_argument("--count", type=_positive, default=1, metavar="N",
                   help="send the message(s) N times (default 1)")
    p.add_argument("--property", dest="properties", action="append", type=_property,
                   default=[], metavar="KEY=VALUE", help="a message property (repeatable)")

    p = sub.add_parser("consume", help="receive and acknowledge messages",
                       description="Subscribe, receive up to N messages (each within the "
                                   "timeout), acknowledge them and close the consumer.")
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("--sub", required=True, metavar="S", help="subscription name")
    p.add_argument("--type", choices=sorted(SUB_TYPES), default="exclusive",
                   help="subscription type (default exclusive)")
    p.add_argument("-n", type=_positive, default=10, dest="count", metavar="N",
                   help="at most N messages (default 10)")
    p.add_argument("--timeout", type=_positive, default=2000, metavar="MS",
                   help="stop when no message arrives within MS ms (default 2000)")
    p.add_argument("--earliest", action="store_true",
                   help="a new subscription starts at the earliest message (default latest)")

    p = sub.add_parser("peek", help="look at a subscription's next messages",
                       description="Show a subscription's next messages without consuming.")
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("--sub", required=True, metavar="S", help="subscription name")
    p.add_argument("-n", type=_positive, default=1, dest="count", metavar="N",
                   help="how many (default 1)")

    p = sub.add_parser("stats", help="topic stats as a dict",
                       description="Topic stats as 'pulsar-admin topics stats' prints them "
                                   "(partitioned topics: partitioned-stats per partition).")
    p.add_argument("topic", metavar="TOPIC")

    p = sub.add_parser("subs", help="the subscriptions of a topic",
                       description="List (and return) a topic's subscriptions.")
    p.add_argument("topic", metavar="TOPIC")

    p = sub.add_parser("reset-cursor", help="move a subscription",
                       description="Move a subscription to the earliest or latest message, "
                                   "or to a publish time.")
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("--sub", required=True, metavar="S", help="subscription name")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--earliest", action="store_true")
    where.add_argument("--latest", action="store_true")
    where.add_argument("--time", type=_non_negative, metavar="MS",
                       help="publish time, ms since the epoch")

    p = sub.add_parser("show", help="a live widget of a topic/subscription",
                       description="Open a live view (pulsarlab.widgets) bound to the "
                                   "current broker. WIDGET is one of the VIEWS names, "
                                   "'stats' for a snapshot of the topic's stats, or 'lag' "
                                   "for backlog, unacked and rates over time.")
    p.add_argument("widget", metavar="WIDGET")
    p.add_argument("topic", nargs="?", metavar="TOPIC",
                   help="default: the topic the last magic used")
    p.add_argument("--sub", metavar="S",
                   help="subscription (default: the last one used, or the only one)")

    p = sub.add_parser("browse", help="page through a topic's messages, with filters",
                       description="Read-only: page through the stored messages of TOPIC "
                                   "from the earliest (or --latest, newest first), or a "
                                   "subscription's next messages with --sub (with redelivery "
                                   "counts), by the admin API; nothing is consumed or moved.")
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("--sub", metavar="S", help="browse this subscription's unacked backlog")
    p.add_argument("--latest", action="store_true", help="newest first (default: oldest)")
    p.add_argument("-n", type=_positive, default=20, dest="count", metavar="N",
                   help="messages a page (default 20)")
    p.add_argument("--page", type=_non_negative, default=0, metavar="P",
                   help="which page of the matches (default 0, the first)")
    p.add_argument("--scan", type=_positive, default=1000, metavar="N",
                   help="read at most N messages a partition (default 1000)")
    p.add_argument("--key", help="only messages with this key")
    p.add_argument("--property", dest="properties", action="append", type=_property,
                   default=[], metavar="KEY=VALUE", help="only messages with this property")
    p.add_argument("--since", metavar="TIME", help="published at or after (ms or ISO date)")
    p.add_argument("--until", metavar="TIME", help="published at or before (ms or ISO date)")
    p.add_argument("--grep", metavar="TEXT", help="only values containing TEXT")
    p.add_argument("--json", dest="json_path", metavar="PATH[=VALUE]",
                   help="only JSON values where PATH (a.b.0) exists, or equals VALUE")
    p.add_argument("--widget", action="store_true",
                   help="a browser widget (filter boxes, previous/next page) instead")

    p = sub.add_parser("why", help="why a subscription (or consumer) gets no messages",
                       description="Explain, from the topic's stats and internal stats, why "
                                   "a subscription or one of its consumers is not getting "
                                   "messages, with the numbers and the tutorial of each rule "
                                   "(Python: pulsarlab.diagnose).")
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("--sub", required=True, metavar="S", help="subscription name")
    p.add_argument("--consumer", metavar="NAME", help="only what concerns this consumer")

    p = sub.add_parser("tutorials", help="copy the tutorial notebooks into a folder",
                       description="Copy the tutorials shipped with pulsarlab (and their "
                                   "data) into DIR, like 'pulsarlab tutorials'. A file you "
                                   "changed there is kept unless --force is given.")
    p.add_argument("dir", nargs="?", metavar="DIR",
                   help="target folder (default ./pulsarlab-tutorials)")
    p.add_argument("--force", action="store_true", help="overwrite files you changed")

    p = sub.add_parser("help", help="this list, or one subcommand's help",
                       description="%pulsar help lists the subcommands; %pulsar help "
                                   "SUBCOMMAND [SUBCOMMAND] shows one (like --help).")
    p.add_argument("topic", nargs="*", metavar="SUBCOMMAND")

    p = sub.add_parser("spark", help="a local Spark session with the pulsar source",
                       description="Create (or reuse) a local SparkSession with the 'pulsar' "
                                   "format registered and bind it to 'spark'. "
                                   "%%pulsar spark TOPIC runs the cell as Spark SQL; "
                                   "'spark stream' manages streaming queries.")
    p.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    p.add_argument("--conf", action="append", type=_property, default=[], metavar="KEY=VALUE",
                   help="a Spark setting for a new session (repeatable)")
    p.add_argument("--stop", action="store_true",
                   help="stop the streaming queries and the Spark session")
    spark_sub = p.add_subparsers(dest="spark_command", metavar="stream", parser_class=_Parser)
    stream = spark_sub.add_parser("stream", help="streaming queries over a topic",
                                  description="Start, watch and stop Structured Streaming "
                                              "queries reading a topic.")
    stream_sub = stream.add_subparsers(dest="stream_command", metavar="ACTION",
                                       parser_class=_Parser)
    stream_sub.required = True
    s = stream_sub.add_parser("start", help="start a streaming query",
                              description="Start a streaming query from TOPIC into a memory "
                                          "table (named --name) or the console.")
    s.add_argument("topic", metavar="TOPIC")
    s.add_argument("--sink", choices=("memory", "console"), default="memory")
    s.add_argument("--name", help="query (and memory table) name (default: from the topic)")
    s.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                   help="micro-batch interval (default 1)")
    s.add_argument("--available-now", action="store_true",
                   help="process what is there now, then stop")
    s.add_argument("--starting", metavar="OFFSETS",
                   help="startingOffsets: earliest, latest (default) or JSON")
    s.add_argument("--checkpoint", metavar="DIR",
                   help="checkpoint directory (default: a temporary one, removed on stop)")
    s = stream_sub.add_parser("status", help="status and last progress of streaming queries",
                              description="Status and last progress of the streaming "
                                          "queries started here.")
    s.add_argument("name", nargs="?", metavar="NAME")
    s.add_argument("--watch", type=float, default=0.0, metavar="SECONDS",
                   help="keep the status updated for SECONDS")
    s = stream_sub.add_parser("stop", help="stop streaming queries",
                              description="Stop one streaming query, or all of them.")
    s.add_argument("name", nargs="?", metavar="NAME")
    return parser


def build_spark_cell_parser() -> argparse.ArgumentParser:
    """The ``%%pulsar spark`` parser: the cell body is Spark SQL over the topic's view."""
    p = _Parser(prog="%%pulsar spark",
                description="Register TOPIC as a temporary view and run the cell as Spark "
                            "SQL; the result is returned as a pandas DataFrame.")
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("--view", metavar="NAME",
                   help="temporary view name (default: the topic's local name)")
    p.add_argument("--limit", type=_non_negative, default=1000, metavar="N",
                   help="at most N rows to pandas (default 1000; 0: no limit)")
    p.add_argument("--starting", metavar="OFFSETS", help="startingOffsets (default earliest)")
    p.add_argument("--ending", metavar="OFFSETS", help="endingOffsets (default latest)")
    return p
