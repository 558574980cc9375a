"""``pulsarlab token …`` and ``pulsarlab curve …``: make keys and tokens, like ``pulsar tokens``.

* ``token create-secret-key [--output FILE] [--base64]`` — a random HS256 key (32 bytes from
  :mod:`secrets`), written mode 0600 or printed in base64;
* ``token create-key-pair --output-private-key F --output-public-key F [-a RS256]`` — a
  key pair (DER) for tokens checked with the broker's ``token_public_key``;
* ``token create (--secret-key K | --private-key K [-a RS256]) --subject ROLE
  [--expiry-time 1y]`` — a token;
* ``token show TOKEN`` — its claims (unchecked); ``token validate (--secret-key K |
  --public-key K [-a RS256]) TOKEN`` — its role if the signature and expiry hold;
* ``curve create-keypair --output-dir DIR [--name server]`` — ``DIR/server.key`` (secret,
  0600, for the broker's ``curve_secret_key_file``) and ``DIR/server.pub`` (for clients).

``admin namespaces permissions|grant-permission|revoke-permission`` manage roles like
``pulsar-admin namespaces``. The client commands take ``--token`` / ``$PULSARLAB_TOKEN`` (a
token or ``file:///path`` of one) and ``--curve-server-key`` /
``$PULSARLAB_CURVE_SERVER_KEY`` (:func:`client_options`).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import curve, tokens


def add_security_commands(commands: Any) -> None:
    """Register ``token`` and ``curve`` on the main parser's subcommands."""
    token = commands.add_parser("token", help="secret keys and auth tokens (like pulsar tokens)")
    ops = token.add_subparsers(dest="op", required=True)
    op = ops.add_parser("create-secret-key", help="a random HS256 secret key")
    op.add_argument("-o", "--output", help="write the raw key to this file (mode 0600)")
    op.add_argument("-b", "--base64", action="store_true", help="print it base64-encoded")
    op.set_defaults(func=_create_secret_key)
    op = ops.add_parser("create-key-pair",
                        help="a private/public key pair (DER) for token_public_key")
    op.add_argument("--output-private-key", required=True, help="file for the private key")
    op.add_argument("--output-public-key", required=True, help="file for the public key")
    _add_algorithm(op)
    op.set_defaults(func=_create_key_pair)
    op = ops.add_parser("create", help="a token whose subject is ROLE")
    key = op.add_mutually_exclusive_group(required=True)
    key.add_argument("--secret-key",
                     help="file:///path/to/key (or a path) or data:;base64,<key>")
    key.add_argument("--private-key", help="a private key from create-key-pair (as above)")
    _add_algorithm(op)
    op.add_argument("-s", "--subject", required=True, help="the role the token carries")
    op.add_argument("-e", "--expiry-time", help="valid for this long: 30m, 12h, 7d, 1y …")
    op.set_defaults(func=_create_token)
    op = ops.add_parser("show", help="print a token's claims (without checking it)")
    op.add_argument("token")
    op.set_defaults(func=_show_token)
    op = ops.add_parser("validate", help="check a token against a secret or public key")
    key = op.add_mutually_exclusive_group(required=True)
    key.add_argument("--secret-key", help="as for create")
    key.add_argument("--public-key", help="the public key from create-key-pair")
    _add_algorithm(op)
    op.add_argument("token")
    op.set_defaults(func=_validate_token)

    keys = commands.add_parser("curve", help="CurveZMQ key pairs for encrypted connections")
    ops = keys.add_subparsers(dest="op", required=True)
    op = ops.add_parser("create-keypair", help="write NAME.key (secret, 0600) and NAME.pub")
    op.add_argument("-o", "--output-dir", required=True, help="directory for the key files")
    op.add_argument("-n", "--name", default="server", help="file name stem (default server)")
    op.set_defaults(func=_create_keypair)


def add_client_options(parser: argparse.ArgumentParser) -> None:
    """``--token`` and ``--curve-server-key`` for a command that talks to a broker."""
    parser.add_argument(
        "--token", help="auth token, or file:///path of one (default $PULSARLAB_TOKEN)"
    )
    parser.add_argument(
        "--curve-server-key", metavar="KEY",
        help="the broker's CURVE public key: Z85 or a .pub path "
             "(default $PULSARLAB_CURVE_SERVER_KEY)",
    )


def client_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments for ``Client``/``Admin`` from the options or the environment."""
    from .client.auth import AuthenticationToken

    options: dict[str, Any] = {}
    token = getattr(args, "token", None) or os.environ.get("PULSARLAB_TOKEN")
    if token:
        options["authentication"] = AuthenticationToken(tokens.read_token(token))
    key = getattr(args, "curve_server_key", None) or os.environ.get("PULSARLAB_CURVE_SERVER_KEY")
    if key:
        options["curve_server_key"] = key
    return options


def _create_secret_key(args: argparse.Namespace) -> int:
    key = tokens.create_secret_key()
    if args.output:
        path = tokens.write_secret_file(args.output, key)
        print(f"secret key written to {path} (mode 0600)", file=sys.stderr)
    if args.base64 or not args.output:
        print(base64.b64encode(key).decode())
    return 0


def _load_key(spec: str) -> bytes:
    return tokens.load_secret_key(spec)


def _add_algorithm(op: argparse.ArgumentParser) -> None:
    op.add_argument("-a", "--algorithm", default="RS256", choices=tokens.PUBLIC_ALGORITHMS,
                    help="the signature algorithm of a key pair (tokenPublicAlg; RS256)")


def _create_key_pair(args: argparse.Namespace) -> int:
    private, public = tokens.create_key_pair(args.algorithm)
    tokens.write_secret_file(args.output_private_key, private)
    Path(args.output_public_key).write_bytes(public)
    print(f"private key written to {args.output_private_key} (mode 0600), public key to "
          f"{args.output_public_key}; the broker takes token_public_key=file://"
          f"{Path(args.output_public_key).resolve()} token_public_alg={args.algorithm}",
          file=sys.stderr)
    return 0


def _create_token(args: argparse.Namespace) -> int:
    expires_at = None
    if args.expiry_time:
        expires_at = int(time.time()) + tokens.parse_duration(args.expiry_time)
    key: bytes | tokens.PrivateKey = (
        tokens.PrivateKey.load(args.private_key, args.algorithm) if args.private_key
        else _load_key(args.secret_key)
    )
    print(tokens.create_token(key, args.subject, expires_at))
    return 0


def _show_token(args: argparse.Namespace) -> int:
    try:
        claims = tokens.decode_claims(args.token)
    except tokens.InvalidToken as exc:
        raise ValueError(str(exc)) from None
    print(json.dumps(claims))
    return 0


def _validate_token(args: argparse.Namespace) -> int:
    try:
        key: bytes | tokens.PublicKey = (
            tokens.PublicKey.load(args.public_key, args.algorithm) if args.public_key
            else _load_key(args.secret_key)
        )
        role = tokens.verify_token(key, args.token)
    except tokens.InvalidToken as exc:
        raise ValueError(f"invalid token: {exc}") from None
    print(role)
    return 0


def _create_keypair(args: argparse.Namespace) -> int:
    public_path, secret_path = curve.create_keypair_files(args.output_dir, args.name)
    public, _secret = curve.load_secret_key(secret_path)
    print(json.dumps({"public_key": public.decode(), "public_key_file": str(public_path),
                      "secret_key_file": str(secret_path)}, indent=2))
    return 0


def add_namespace_commands(groups: Any, add_url: Callable[[argparse.ArgumentParser], None]) -> None:
    """``pulsarlab admin namespaces permissions|grant-permission|revoke-permission``."""
    namespaces = groups.add_parser("namespaces", help="namespace permissions (pulsar-admin's)")
    ops = namespaces.add_subparsers(dest="op", required=True)
    op = ops.add_parser("permissions", help="roles and their actions on a namespace")
    op.add_argument("namespace")
    add_url(op)
    op = ops.add_parser("grant-permission", help="let a role produce and/or consume")
    op.add_argument("namespace")
    op.add_argument("--role", required=True)
    op.add_argument("--actions", required=True, help="comma-separated: produce,consume")
    add_url(op)
    op = ops.add_parser("revoke-permission", help="take a role's actions away")
    op.add_argument("namespace")
    op.add_argument("--role", required=True)
    add_url(op)


def namespace_op(namespaces: Any, args: argparse.Namespace) -> Any:
    """Run one ``admin namespaces`` command."""
    if args.op == "permissions":
        return namespaces.get_permissions(args.namespace)
    if args.op == "grant-permission":
        actions = [a.strip() for a in args.actions.split(",") if a.strip()]
        return namespaces.grant_permission(args.namespace, args.role, actions)
    return namespaces.revoke_permission(args.namespace, args.role)
