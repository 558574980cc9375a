"""``%pulsar`` and ``%%pulsar``: run a broker, produce, consume, inspect and query topics.

Load with ``%load_ext pulsarlab``. Every subcommand takes ``-h``/``--help``
(``%pulsar --help`` lists them):

.. code-block:: text

    %pulsar start [--beside] [--memory] [--data-dir D] [--port P] [--set NAME=VALUE]
    %pulsar stop | status | connect URL [--events URL] [--token T] [--curve-server-key K]
    %pulsar connect pulsar://host:6650 [--admin-url http://host:8080] [--token T |
                    --token-file F] [--tls-trust-certs CA] [--allow-writes]
                    [--client pulsarlab|official]   (any Pulsar; pulsarlab's client
                    unless --client official)
    %pulsar topics [NAMESPACE]            %pulsar create TOPIC [--partitions N]
    %pulsar policies [NAMESPACE] [--ttl SECONDS] [--retention MINUTES,MB] [--dedup on|off]
    %pulsar produce TOPIC [--key K] [--count N] [--property K=V] VALUE
    %%pulsar produce TOPIC                (one message per line of the cell)
    %pulsar consume TOPIC --sub S [--type shared|key_shared|failover|exclusive] [-n N]
                                  [--timeout MS] [--earliest]
    %pulsar peek TOPIC --sub S [-n N]     %pulsar stats TOPIC     %pulsar subs TOPIC
    %pulsar reset-cursor TOPIC --sub S (--earliest | --latest | --time MS)
    %pulsar show WIDGET [TOPIC] [--sub S] (a live view from pulsarlab.widgets.VIEWS)
    %pulsar why TOPIC --sub S [--consumer NAME]  (why a subscription gets no messages)
    %pulsar browse TOPIC [--sub S] [--latest] [-n N] [--page P] [--key K] [--property K=V]
                   [--since T] [--until T] [--grep TEXT] [--json PATH[=VALUE]] [--widget]
                                          (read-only: examine-message / peek)
    %pulsar show lag [TOPIC] [--sub S]    (backlog, unacked and rates over time)
    %pulsar spark [--master M] [--conf K=V]   (binds ``spark`` in the notebook)
    %pulsar tutorials [DIR] [--force]     (copies the tutorial notebooks into DIR)
    %pulsar help [SUBCOMMAND ...]         (the same as --help)
    %%pulsar spark TOPIC [--view NAME]    (the cell is Spark SQL over the topic's view)
    %pulsar spark stream start TOPIC --sink memory|console --name N
    %pulsar spark stream status [NAME] | stop [NAME]

Results are returned as objects and shown when they are a cell's value: messages as a list
of dicts (``.to_pandas()``), stats as a dict, a Spark SQL result as a pandas DataFrame.
An error is shown as one line, without a traceback, and the cell counts as failed (the error
is a :class:`~pulsarlab.runtime.PulsarMagicError`). Operations over many messages and the
Spark start show progress in a kernel.

Lifecycle: ``%pulsar start`` runs the broker on a daemon thread of the kernel (``--beside``:
as a ``pulsarlab broker`` child process). ``%pulsar stop``, ``%unload_ext pulsarlab``, a
kernel shutdown or restart (the shell's ``exit_now`` flag, set by the kernel's shutdown
handler) and interpreter exit (``atexit``) stop it, along with the magics' client, live views
and streaming queries.

Auto-load, opt-in: either add ``c.InteractiveShellApp.extensions = ["pulsarlab"]`` to an
``ipython_kernel_config.py`` (in ``$IPYTHONDIR/profile_default/`` or
``{sys.prefix}/etc/ipython/``), or install the ``pulsarlab`` kernelspec
(``pulsarlab kernel install --user``), whose kernels start with ``--ext=pulsarlab``.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class

from .extras import MissingDependency, install_hint
from .magic_grammar import build_parser, build_spark_cell_parser, subparsers
from .magic_messages import MessageCommands
from .magic_ops import OpsCommands
from .magic_spark import SparkCommands
from .magic_views import ViewCommands
from .progress import Progress
from .results import JSONDict, Lines, MessageList, admin_message_row
from .runtime import BrokerRuntime, PulsarMagicError, one_line

__all__ = [
    "PulsarMagicError",
    "PulsarMagics",
    "get_runtime",
    "load_ipython_extension",
    "unload_ipython_extension",
]

JUPYTER_HINT = "install the Jupyter extra: pip install 'pulsarlab[jupyter]'"
SPARK_HINT = "install the Spark extra: pip install 'pulsarlab[spark]' (and Java 17)"


# -- errors --------------------------------------------------------------------------------

def _expected_errors() -> tuple[type[BaseException], ...]:
    import zmq

    from .broker.client.exceptions import PulsarException
    from .broker.errors import PulsarLabError

    return (PulsarLabError, PulsarException, TimeoutError, ValueError, OSError, KeyError,
            zmq.ZMQError, RuntimeError)


def _is_spark_error(exc: BaseException) -> bool:
    return any(cls.__module__.split(".")[0] in ("pyspark", "py4j") for cls in type(exc).__mro__)


def _split(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as exc:
        raise PulsarMagicError(f"%pulsar: cannot parse the line: {exc}") from None


# -- the magics ----------------------------------------------------------------------------

@magics_class
class PulsarMagics(MessageCommands, ViewCommands, OpsCommands, SparkCommands, Magics):
    """The ``%pulsar`` / ``%%pulsar`` magics over one :class:`BrokerRuntime`."""

    def __init__(self, shell: Any, runtime: BrokerRuntime) -> None:
        super().__init__(shell)
        self.runtime = runtime
        self.parser = build_parser()
        self.spark_cell_parser = build_spark_cell_parser()
        self._spark_session: Any = None  # the session the magics last got

    @line_cell_magic
    def pulsar(self, line: str, cell: str | None = None) -> Any:
        """Run a pulsarlab broker and work with its topics; ``%pulsar --help`` lists all.

        ``%%pulsar produce TOPIC`` sends each line of the cell; ``%%pulsar spark TOPIC``
        runs the cell as Spark SQL over the topic. Errors are one line and fail the cell.
        """
        tokens = _split(line)
        cell_spark = cell is not None and bool(tokens) and tokens[0] == "spark"
        parser = self._help_target(tokens, cell_spark)
        if parser is not None:
            print(parser.format_help().rstrip())
            return None
        if cell_spark:
            args = self.spark_cell_parser.parse_args(tokens[1:])
            return self._guard("%%pulsar spark", lambda: self._spark_cell(args, cell or ""))
        args = self.parser.parse_args(tokens)
        if args.command is None:
            print(self.parser.format_help().rstrip())
            return None
        prog = f"%pulsar {args.command}"
        if cell is not None:
            prog = "%" + prog
            if args.command != "produce":
                raise PulsarMagicError(
                    "%%pulsar takes a cell only as 'produce TOPIC' or 'spark TOPIC'"
                )
        handler = getattr(self, "_cmd_" + args.command.replace("-", "_"))
        return self._guard(prog, lambda: handler(args, cell))

    def _help_target(self, tokens: Sequence[str], cell_spark: bool) -> Any:
        """The parser whose help to print when ``-h``/``--help`` (or nothing) is given."""
        if not tokens:
            return self.parser
        asks_help = "-h" in tokens or "--help" in tokens
        if tokens[0] == "help" and not cell_spark and not asks_help:  # %pulsar help [SUB …]
            return self._nested_parser(tokens[1:], strict=True)
        if not asks_help:
            return None
        if cell_spark:
            return self.spark_cell_parser
        return self._nested_parser(tokens[:tokens.index("-h" if "-h" in tokens else "--help")])

    def _nested_parser(self, path: Sequence[str], strict: bool = False) -> Any:
        """The parser of subcommand ``path`` (``strict``: an unknown name is an error)."""
        parser: argparse.ArgumentParser = self.parser
        for token in path:
            nested = subparsers(parser)
            if token in nested:
                parser = nested[token]
            elif strict:
                known = ", ".join(sorted(nested)) or "none"
                raise PulsarMagicError(f"%pulsar help: no subcommand {token!r} under "
                                       f"{parser.prog!r} (known: {known})")
        return parser

    def _guard(self, prog: str, run: Any) -> Any:
        """Run a subcommand; expected failures become one-line errors that fail the cell."""
        try:
            return run()
        except PulsarMagicError as exc:
            raise PulsarMagicError(f"{prog}: {exc}") from None
        except MissingDependency as exc:
            raise PulsarMagicError(f"{prog}: {one_line(exc)}") from None
        except ImportError as exc:
            extra = install_hint(exc.name)
            if extra is None or "[spark]" in extra:
                hint = SPARK_HINT if "spark" in prog or extra else JUPYTER_HINT
            else:
                hint = f"install it: {extra}"
            raise PulsarMagicError(f"{prog}: {one_line(exc)}; {hint}") from None
        except _expected_errors() as exc:
            raise PulsarMagicError(f"{prog}: {one_line(exc)}") from None
        except Exception as exc:
            if not _is_spark_error(exc):
                raise
            raise PulsarMagicError(f"{prog}: {self._spark_error(exc)}") from None

    # -- broker lifecycle -----------------------------------------------------------------

    def _cmd_start(self, args: argparse.Namespace, cell: str | None) -> None:
        rt = self.runtime
        if rt.running:
            print(f"a broker is already running at {rt.service_url} ({rt.mode}); "
                  "%pulsar stop first to start another")
            return None
        where = "beside the kernel" if args.beside else "in the kernel"
        with Progress(None, f"starting a broker {where}",
                      enabled=None if args.beside else False) as progress:
            status = rt.start(
                beside=args.beside, data_dir=args.data_dir, port=args.port,
                events_port=args.events_port, memory=args.memory, settings=args.settings,
            )
            progress.update(1, force=True)
        storage = f"{status['storage']} storage" + (
            f" in {status['data_dir']}" if status["data_dir"] else ""
        )
        pid = f", pid {status['pid']}" if "pid" in status else ""
        print(f"pulsarlab broker running {where} at {status['service_url']} "
              f"({storage}, events {status['events_url']}{pid})")
        return None

    def _cmd_stop(self, args: argparse.Namespace, cell: str | None) -> None:
        done = self.runtime.stop()
        print("\n".join(done) if done else "no broker to stop")
        return None

    def _cmd_status(self, args: argparse.Namespace, cell: str | None) -> JSONDict:
        return JSONDict(self.runtime.status(), title="pulsarlab broker")

    def _cmd_connect(self, args: argparse.Namespace, cell: str | None) -> None:
        from .broker.tokens import read_token

        if args.token and args.token_file:
            raise PulsarMagicError("give --token or --token-file, not both")
        token = args.token or (f"file://{args.token_file}" if args.token_file else None)
        token = token or os.environ.get("PULSARLAB_TOKEN")
        options: dict[str, Any] = {"token": read_token(token) if token else None}
        key = args.curve_server_key or os.environ.get("PULSARLAB_CURVE_SERVER_KEY")
        for name, value in (("admin_url", args.admin_url), ("curve_server_key", key),
                            ("tls_trust_certs_file_path", args.tls_trust_certs)):
            if value:
                options[name] = value
        if args.client:
            options["client"] = args.client
        status = self.runtime.connect(args.url, args.events, check_timeout=args.timeout / 1000,
                                      allow_writes=args.allow_writes, **options)
        extra = [f"events {status['events_url']}" if status["events_url"] else "",
                 f"admin {status['admin_url']}" if status.get("admin_url") else ""]
        if status.get("backend") == "cluster":
            extra.append("writes allowed" if status["writes_allowed"] else "read-only")
            if status.get("client") == "official":
                extra.append("official client")
        details = ", ".join(e for e in extra if e)
        print(f"connected to {status['service_url']}" + (f" ({details})" if details else ""))
        return None

    def _cmd_tutorials(self, args: argparse.Namespace, cell: str | None) -> None:
        from .tutorials import DEFAULT_DIR, copy_tutorials

        report = copy_tutorials(args.dir or DEFAULT_DIR, force=args.force)
        print("\n".join(report.lines()))
        return None

    # -- admin ----------------------------------------------------------------------------

    def _full(self, topic: str) -> str:
        from .broker import TopicName

        try:
            name = str(TopicName.get(topic))
        except Exception as exc:
            raise PulsarMagicError(one_line(exc)) from None
        self.runtime.last_topic = name
        return name

    def _partitions(self, topic: str) -> list[str]:
        """The partition topics of ``topic`` (``[topic]`` when it is not partitioned)."""
        from .broker import TopicName

        meta = self.runtime.admin().topics.get_partitioned_topic_metadata(topic)
        count = int(meta.get("partitions", 0))
        if count == 0:
            return [topic]
        name = TopicName.get(topic)
        return [str(name.partition(i)) for i in range(count)]

    def _cmd_topics(self, args: argparse.Namespace, cell: str | None) -> Lines:
        names = self.runtime.admin().topics.get_list(args.namespace)
        return Lines(names, title=f"topics in {args.namespace}:", empty="(no topics)")

    def _cmd_policies(self, args: argparse.Namespace, cell: str | None) -> JSONDict:
        namespaces = self.runtime.admin().namespaces
        if args.ttl is not None:
            namespaces.set_message_ttl(args.namespace, args.ttl)
        if args.retention is not None:
            namespaces.set_retention(args.namespace, *args.retention)
        if args.dedup is not None:
            namespaces.set_deduplication_status(args.namespace, args.dedup == "on")
        return JSONDict(namespaces.get_policies(args.namespace),
                        title=f"policies of {args.namespace}")

    def _cmd_create(self, args: argparse.Namespace, cell: str | None) -> None:
        topic = self._full(args.topic)
        topics = self.runtime.admin().topics
        if args.partitions:
            topics.create_partitioned_topic(topic, args.partitions)
            print(f"created {topic} with {args.partitions} partitions")
        else:
            topics.create_non_partitioned_topic(topic)
            print(f"created {topic}")
        return None

    def _cmd_stats(self, args: argparse.Namespace, cell: str | None) -> JSONDict:
        topic = self._full(args.topic)
        topics = self.runtime.admin().topics
        if self._partitions(topic) != [topic]:
            return JSONDict(topics.get_partitioned_stats(topic, per_partition=True),
                            title=f"partitioned stats of {topic}")
        return JSONDict(topics.get_stats(topic), title=f"stats of {topic}")

    def _cmd_subs(self, args: argparse.Namespace, cell: str | None) -> Lines:
        topic = self._full(args.topic)
        topics = self.runtime.admin().topics
        names: list[str] = []
        for part in self._partitions(topic):
            names += [n for n in topics.get_subscriptions(part) if n not in names]
        return Lines(sorted(names), title=f"subscriptions of {topic}:",
                     empty="(no subscriptions)")

    def _cmd_peek(self, args: argparse.Namespace, cell: str | None) -> MessageList:
        topic = self._full(args.topic)
        self.runtime.last_subscription = args.sub
        topics = self.runtime.admin().topics
        rows: list[dict[str, Any]] = []
        for part in self._partitions(topic):
            if len(rows) >= args.count:
                break
            rows += [admin_message_row(part, m)
                     for m in topics.peek_messages(part, args.sub, args.count - len(rows))]
        return MessageList(rows, f"peeked on {topic} / {args.sub}")

    def _cmd_reset_cursor(self, args: argparse.Namespace, cell: str | None) -> None:
        topic = self._full(args.topic)
        self.runtime.last_subscription = args.sub
        topics = self.runtime.admin().topics
        message_id = "earliest" if args.earliest else "latest" if args.latest else None
        for part in self._partitions(topic):
            topics.reset_cursor(part, args.sub, message_id=message_id, timestamp=args.time)
        where = message_id or f"publish time {args.time}"
        print(f"reset {args.sub} on {topic} to {where}")
        return None


# -- loading -------------------------------------------------------------------------------

def _missing_module(shell: Any, etype: type, value: BaseException, tb: Any,
                    tb_offset: int | None = None) -> None:
    """IPython custom exception handler: ``import pulsar`` (and the other modules an extra
    brings) failing in a cell is one line naming the ``pip install``, not a traceback."""
    hint = install_hint(getattr(value, "name", None))
    if hint is not None:
        line = f"{etype.__name__}: {value}: {hint}"
        value._render_traceback_ = lambda: [line]  # type: ignore[attr-defined]
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)



_STATE: dict[str, Any] = {}


def get_runtime() -> BrokerRuntime | None:
    """The runtime of the loaded extension (``None`` when it is not loaded)."""
    return _STATE.get("runtime")


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%pulsar``/``%%pulsar`` and the shutdown hooks (``%load_ext pulsarlab``)."""
    if _STATE.get("shell") is ipython:
        return
    if _STATE:
        unload_ipython_extension(_STATE["shell"])
    runtime = BrokerRuntime()
    # Spark's Python workers: this kernel's interpreter (it has pulsarlab), not the python3
    # on PATH, for any SparkSession the notebook starts itself.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    def on_exit_now(change: dict[str, Any]) -> None:
        if change.get("new"):
            runtime.shutdown()

    ipython.register_magics(PulsarMagics(ipython, runtime))
    if not getattr(ipython, "custom_exceptions", True):  # never replace someone else's
        ipython.set_custom_exc((ModuleNotFoundError,), _missing_module)
        _STATE["custom_exc"] = True
    ipython.observe(on_exit_now, names=["exit_now"])
    atexit.register(runtime.shutdown)
    _STATE.update(shell=ipython, runtime=runtime, on_exit_now=on_exit_now)
    _STATE.setdefault("custom_exc", False)


def unload_ipython_extension(ipython: Any) -> None:
    """Stop the broker and everything opened with it; remove the magics."""
    if _STATE.get("shell") is not ipython:
        return
    runtime: BrokerRuntime = _STATE["runtime"]
    runtime.shutdown()
    atexit.unregister(runtime.shutdown)
    ipython.unobserve(_STATE["on_exit_now"], names=["exit_now"])
    if _STATE.get("custom_exc"):
        ipython.set_custom_exc((), None)
    magics = ipython.magics_manager.magics
    magics["line"].pop("pulsar", None)
    magics["cell"].pop("pulsar", None)
    ipython.magics_manager.registry.pop(PulsarMagics.__name__, None)
    _STATE.clear()
