"""The ``pulsarlab`` command line.

``pulsarlab broker`` opens (and, after a crash, recovers) a broker data directory and
serves it over ZeroMQ, and its admin REST API over HTTP, printing their URLs; ``produce``,
``consume`` and ``admin`` talk to a running broker like ``pulsar-client`` and
``pulsar-admin`` do; ``token`` and ``curve`` make auth keys and tokens (like ``pulsar
tokens``) and CurveZMQ key pairs; ``tutorials`` copies the tutorial notebooks out of the
installed package.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import signal
import sys
import threading
from collections.abc import Sequence

from .cli_client import add_client_commands
from .cli_security import add_security_commands
from .client.exceptions import PulsarException
from .errors import InvalidArgument, PulsarLabError
from .pulsar_conf import JVM_PROPERTIES, PulsarConf, jvm_options, read_pulsar_conf
from .security import provider_names
from .server import Broker
from .service import BrokerService
from .settings import parse_setting

log = logging.getLogger("pulsarlab.broker.cli")


def _parse_setting(text: str) -> tuple[str, object]:
    try:
        return parse_setting(text)
    except InvalidArgument as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pulsarlab", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    broker = commands.add_parser("broker", help="run a standalone broker on a data directory")
    broker.add_argument("--data-dir", default="data", help="where ledgers and metadata live")
    broker.add_argument("--storage", choices=("durable", "memory"), default="durable")
    broker.add_argument(
        "--host", default="127.0.0.1",
        help="address to bind (default loopback; any other needs "
             "--set authentication_enabled=true --set token_secret_key=file:///KEY)",
    )
    broker.add_argument(
        "--config", metavar="FILE",
        help="Pulsar's standalone.conf or broker.conf: its keys become settings (keys "
             "pulsarlab has no setting for are listed once as ignored; --set overrides)",
    )
    broker.add_argument(
        "-D", dest="jvm_options", action="append", default=[], metavar="NAME=VALUE",
        help="a JVM system property as Pulsar reads it, e.g. "
             "-Dpulsar.auth.basic.conf=FILE (PULSAR_EXTRA_OPTS' -D options are read too)",
    )
    broker.add_argument(
        "--port", type=int, default=6651,
        help="ZeroMQ port for pulsarlab clients (0 picks a free port)",
    )
    broker.add_argument(
        "--pulsar-port", type=int, default=None,
        help="pulsar:// port for the official pulsar-client (default: brokerServicePort "
             "of --config, else 6650 as pulsar standalone; 0 picks a free port)",
    )
    broker.add_argument("--events-port", type=int, default=0, help="0 picks a free port")
    broker.add_argument(
        "--web-port", type=int, default=None,
        help="port of the admin REST API, /admin/v2 (default: webServicePort of --config, "
             "else 8080 like pulsar standalone; 0 picks a free port)",
    )
    broker.add_argument(
        "--set", dest="settings", action="append", type=_parse_setting, default=[],
        metavar="NAME=VALUE", help="a broker setting in broker.conf's snake_case names",
    )
    broker.add_argument("--once", action="store_true", help="recover, report and exit")
    broker.set_defaults(func=_run_broker)
    add_client_commands(commands)
    add_security_commands(commands)  # pulsarlab token …, pulsarlab curve …
    from ..kernelspec import add_kernel_commands  # pulsarlab kernel install|uninstall

    add_kernel_commands(commands)
    tutorials = commands.add_parser(
        "tutorials", help="copy the tutorial notebooks (and their data) into a folder",
    )
    tutorials.add_argument("dir", nargs="?", default=None,
                           help="where to copy them (default ./pulsarlab-tutorials)")
    tutorials.add_argument("--force", action="store_true",
                           help="overwrite tutorial files you changed there")
    tutorials.set_defaults(func=_copy_tutorials)
    return parser


def _copy_tutorials(args: argparse.Namespace) -> int:
    from ..tutorials import DEFAULT_DIR, copy_tutorials

    report = copy_tutorials(args.dir or DEFAULT_DIR, force=args.force)
    print("\n".join(report.lines()))
    return 0


def _settings(args: argparse.Namespace) -> dict[str, object]:
    """The broker's settings: --config's file, then -D options, the port flags and --set."""
    conf = read_pulsar_conf(args.config) if args.config else PulsarConf()
    extra = [o for o in shlex.split(os.environ.get("PULSAR_EXTRA_OPTS", "")) if o.startswith("-D")]
    jvm = jvm_options(extra + [f"-D{o}" for o in args.jvm_options])
    if conf.ignored:
        log.info("%s: %d keys ignored (pulsarlab has no such setting): %s",
                 args.config, len(conf.ignored), ", ".join(conf.ignored))
    if jvm.ignored:
        log.info("JVM options ignored (pulsarlab reads only %s): %s",
                 ", ".join(f"-D{name}" for name in JVM_PROPERTIES), " ".join(jvm.ignored))
    settings: dict[str, object] = {**conf.settings, **jvm.settings}
    for name, flag, default in (("broker_service_port", args.pulsar_port, 6650),
                                ("web_service_port", args.web_port, 8080)):
        settings[name] = flag if flag is not None else settings.get(name, default)
    settings.update(args.settings)
    providers = provider_names(str(settings.get("authentication_providers", "")))
    token_auth = "token" in providers or not providers
    has_key = settings.get("token_secret_key") or settings.get("token_public_key")
    if settings.get("authentication_enabled") and token_auth and not has_key:
        raise ValueError(
            "authentication_enabled needs --set token_secret_key=file:///PATH "
            "(make one with: pulsarlab token create-secret-key --output PATH) "
            "or token_public_key"
        )
    return settings


def _run_broker(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    settings = _settings(args)
    data_dir = None if args.storage == "memory" else args.data_dir
    broker = Broker(
        data_dir, args.host, args.port, storage=args.storage, events_port=args.events_port,
        **settings,
    ).start()

    def summary(service: BrokerService) -> dict:
        return {
            name: {
                "entries": topic.ledger.number_of_entries,
                "subscriptions": {
                    sub_name: sub.cursor.number_of_entries_in_backlog()
                    for sub_name, sub in topic.subscriptions.items()
                },
            }
            for name, topic in service.topics.items()
        }

    report = {
        "status": "ready",
        "service_url": broker.service_url,
        "pulsar_url": broker.pulsar_url,
        "pulsar_ssl_url": broker.pulsar_ssl_url,
        "events_url": broker.events_url,
        "web_url": broker.web_url,
        "web_url_tls": broker.web_url_tls,
        "storage": args.storage,
        "data_dir": data_dir,
        "topics": broker.call(summary),
        "authentication": broker.settings.authentication_enabled,
        "authorization": broker.settings.authorization_enabled,
        # Clients need this public key (curve_server_key) when the broker encrypts.
        "curve_public_key": broker.curve_public_key,
    }
    print(json.dumps(report, indent=2), flush=True)
    if args.once:
        broker.stop()
        return 0
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        while not stop.is_set() and broker.running:
            stop.wait(0.5)
    finally:
        broker.stop()
    if broker.loop_error is not None:  # the loop died: a supervisor must see a failure
        print(f"pulsarlab: error: the broker loop crashed: {broker.loop_error!r}",
              file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (PulsarLabError, PulsarException, OSError, ValueError) as exc:  # OSError: unreachable
        print(f"pulsarlab: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
