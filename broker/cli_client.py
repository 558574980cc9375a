"""``pulsarlab produce | consume | admin``: the client side of the command line.

Modelled on ``pulsar-client produce/consume`` and ``pulsar-admin topics …``: the broker
URL comes from ``--url`` or ``$PULSARLAB_URL`` (default ``zmq://127.0.0.1:6651``); ``admin``
talks to the broker's admin REST API at ``--admin-url`` or ``$PULSARLAB_ADMIN_URL`` (default
``http://127.0.0.1:8080``) and prints the same JSON ``pulsar-admin`` prints.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .cli_security import add_client_options, add_namespace_commands, client_options, namespace_op
from .client.enums import ConsumerType

DEFAULT_URL = "zmq://127.0.0.1:6651"
DEFAULT_ADMIN_URL = "http://127.0.0.1:8080"  # where `pulsarlab broker` serves it by default
ADMIN_URL_VARIABLE = "PULSARLAB_ADMIN_URL"
SUB_TYPES = tuple(t.wire_name for t in ConsumerType)


def _url(args: argparse.Namespace) -> str:
    return args.url or os.environ.get("PULSARLAB_URL", DEFAULT_URL)


def _add_url(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url", help=f"broker service URL (default $PULSARLAB_URL or {DEFAULT_URL})"
    )
    add_client_options(parser)  # --token, --curve-server-key


def _admin_url(args: argparse.Namespace) -> str:
    """The admin REST API: ``--admin-url``, ``$PULSARLAB_ADMIN_URL``, ``--url`` (a zmq://
    one is refused by ``Admin`` with what to pass instead), else the web port a ``pulsarlab
    broker`` serves by default."""
    return args.admin_url or os.environ.get(ADMIN_URL_VARIABLE) or args.url or DEFAULT_ADMIN_URL


def _add_admin_url(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--admin-url", help=f"the broker's admin REST API (default ${ADMIN_URL_VARIABLE} or "
                            f"{DEFAULT_ADMIN_URL})"
    )
    parser.add_argument("--url", help=argparse.SUPPRESS)  # an http(s):// --url is taken too
    parser.add_argument("--tls-trust-certs", metavar="CA_FILE",
                        help="the CA file of an https:// admin URL")
    add_client_options(parser)  # --token


def add_client_commands(commands: Any) -> None:
    """Register ``produce``, ``consume`` and ``admin`` on the main parser's subcommands."""
    produce = commands.add_parser("produce", help="send messages to a topic")
    produce.add_argument("topic")
    produce.add_argument("-m", "--messages", action="append", required=True,
                         help="message body (repeatable)")
    produce.add_argument("-n", "--num-produce", type=int, default=1,
                         help="how many times to send the messages")
    produce.add_argument("-k", "--key", help="partition key")
    _add_url(produce)
    produce.set_defaults(func=_produce)

    consume = commands.add_parser("consume", help="receive messages from a topic")
    consume.add_argument("topic")
    consume.add_argument("-s", "--subscription-name", required=True)
    consume.add_argument("-n", "--num-messages", type=int, default=1, help="0 = until Ctrl-C")
    consume.add_argument("-t", "--subscription-type", choices=SUB_TYPES, default="Exclusive")
    consume.add_argument("-p", "--subscription-position", choices=("Latest", "Earliest"),
                         default="Latest")
    consume.add_argument("--timeout-ms", type=int, default=10_000,
                         help="give up after this long without a message")
    _add_url(consume)
    consume.set_defaults(func=_consume)

    admin = commands.add_parser("admin", help="pulsar-admin style administration")
    groups = admin.add_subparsers(dest="group", required=True)
    topics = groups.add_parser("topics", help="topics, subscriptions and stats")
    ops = topics.add_subparsers(dest="op", required=True)
    for name, help_text in (
        ("stats", "topic stats (pulsar-admin topics stats)"),
        ("stats-internal", "managed ledger and cursor internals"),
        ("partitioned-stats", "stats aggregated over partitions"),
        ("subscriptions", "subscription names"),
        ("delete", "delete a topic"),
        ("create", "create a non-partitioned topic"),
        ("terminate", "terminate a topic: no more messages (prints its last message id)"),
        ("partitioned-terminate", "terminate every partition of a partitioned topic"),
    ):
        op = ops.add_parser(name, help=help_text)
        op.add_argument("topic")
        _add_admin_url(op)
    ops.choices["delete"].add_argument("-f", "--force", action="store_true")
    op = ops.add_parser("list", help="topics of a namespace")
    op.add_argument("namespace", nargs="?", default="public/default")
    _add_admin_url(op)
    op = ops.add_parser("create-partitioned-topic", help="create a partitioned topic")
    op.add_argument("topic")
    op.add_argument("-p", "--partitions", type=int, required=True)
    _add_admin_url(op)
    op = ops.add_parser("peek-messages", help="look at the next messages of a subscription")
    op.add_argument("topic")
    op.add_argument("-s", "--subscription", required=True)
    op.add_argument("-n", "--count", type=int, default=1)
    _add_admin_url(op)
    op = ops.add_parser("reset-cursor", help="move a subscription to a time or id")
    op.add_argument("topic")
    op.add_argument("-s", "--subscription", required=True)
    where = op.add_mutually_exclusive_group(required=True)
    where.add_argument("-t", "--time", type=int, help="publish time in ms since the epoch")
    where.add_argument("--earliest", action="store_true")
    where.add_argument("--latest", action="store_true")
    _add_admin_url(op)
    add_namespace_commands(groups, _add_admin_url)
    admin.set_defaults(func=_admin)


def _produce(args: argparse.Namespace) -> int:
    from .client import Client

    client = Client(_url(args), **client_options(args))
    try:
        producer = client.create_producer(args.topic)
        sent = 0
        for _ in range(args.num_produce):
            for body in args.messages:
                producer.send(body.encode(), partition_key=args.key)
                sent += 1
        producer.close()
    finally:
        client.close()
    print(f"{sent} messages successfully produced")
    return 0


def _consume(args: argparse.Namespace) -> int:
    from .client import Client, InitialPosition, Timeout

    position = (
        InitialPosition.Earliest if args.subscription_position == "Earliest"
        else InitialPosition.Latest
    )
    client = Client(_url(args), **client_options(args))
    received = 0
    try:
        consumer = client.subscribe(
            args.topic, args.subscription_name,
            consumer_type=ConsumerType.from_wire_name(args.subscription_type),
            initial_position=position,
        )
        while args.num_messages == 0 or received < args.num_messages:
            try:
                msg = consumer.receive(timeout_millis=args.timeout_ms)
            except Timeout:
                break
            key = msg.partition_key()
            print(
                f"----- got message -----\nkey:[{key}], properties:{msg.properties()}, "
                f"content:{msg.data().decode(errors='replace')}"
            )
            consumer.acknowledge(msg)
            received += 1
        consumer.close()
    finally:
        client.close()
    print(f"{received} messages successfully consumed")
    return 0


def _admin(args: argparse.Namespace) -> int:
    from .admin import Admin

    with Admin(_admin_url(args), tls_trust_certs_file_path=args.tls_trust_certs,
               **client_options(args)) as admin:
        topics = admin.topics
        op = args.op
        result: Any
        if args.group == "namespaces":
            result = namespace_op(admin.namespaces, args)
        elif op == "stats":
            result = topics.get_stats(args.topic)
        elif op == "stats-internal":
            result = topics.get_internal_stats(args.topic)
        elif op == "partitioned-stats":
            result = topics.get_partitioned_stats(args.topic)
        elif op == "subscriptions":
            result = topics.get_subscriptions(args.topic)
        elif op == "delete":
            result = topics.delete(args.topic, force=args.force)
        elif op == "create":
            result = topics.create_non_partitioned_topic(args.topic)
        elif op == "terminate":
            result = topics.terminate_topic(args.topic)
        elif op == "partitioned-terminate":
            result = topics.terminate_partitioned_topic(args.topic)
        elif op == "list":
            result = topics.get_list(args.namespace)
        elif op == "create-partitioned-topic":
            result = topics.create_partitioned_topic(args.topic, args.partitions)
        elif op == "peek-messages":
            result = [
                {**m, "payload": m["payload"].decode(errors="replace")}
                for m in topics.peek_messages(args.topic, args.subscription, args.count)
            ]
        else:  # reset-cursor
            message_id = "earliest" if args.earliest else "latest" if args.latest else None
            result = topics.reset_cursor(
                args.topic, args.subscription, message_id=message_id, timestamp=args.time
            )
    if result is not None:
        json.dump(result, sys.stdout, indent=2, default=str)
        print()
    return 0
