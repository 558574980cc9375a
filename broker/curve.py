"""CurveZMQ key handling: key files, loading, and turning CURVE on for a socket.

With CURVE the broker's ROUTER socket encrypts every connection (Curve25519 handshake,
per-connection keys); a client must know the broker's *public* key to talk to it at all,
and one with a wrong key gets no answer. Client keys are throw-away pairs made per
connection: who a client is stays the job of the auth token (:mod:`.tokens`).

Key files are the ZeroMQ certificate format (``zmq.auth.load_certificate`` reads them):

* ``NAME.key`` holds the public and the secret key (Z85) and is written mode 0600 — keep it
  with the broker (e.g. next to its data directory, not in a notebook or a repository);
* ``NAME.pub`` holds the public key only and may be handed to every client.

``pulsarlab curve create-keypair --output-dir DIR`` writes both. The broker reads the secret
file named by the ``curve_secret_key_file`` setting; clients take the public key as
``curve_server_key=`` (``Client``, ``Admin``), ``--curve-server-key`` or
``$PULSARLAB_CURVE_SERVER_KEY`` (command line): a 40-character Z85 key or a path to
``NAME.pub``.
"""

from __future__ import annotations

import os
from pathlib import Path

import zmq
import zmq.auth
import zmq.utils.z85

from .tokens import write_secret_file

__all__ = ["apply_client", "apply_server", "create_keypair_files", "load_public_key",
           "load_secret_key"]

Z85_KEY_LENGTH = 40


def _cert(public: bytes, secret: bytes | None) -> bytes:
    lines = [
        "#   ZeroMQ CURVE certificate written by pulsarlab",
        "#   " + ("SECRET: keep this file private (mode 0600)" if secret else "public key"),
        "metadata",
        "curve",
        f'    public-key = "{public.decode("ascii")}"',
    ]
    if secret is not None:
        lines.append(f'    secret-key = "{secret.decode("ascii")}"')
    return ("\n".join(lines) + "\n").encode("ascii")


def create_keypair_files(directory: str | os.PathLike[str], name: str = "server") -> tuple[
    Path, Path
]:
    """Write ``NAME.pub`` (0644) and ``NAME.key`` (0600) in ``directory``; return both paths."""
    if not zmq.has("curve"):
        raise RuntimeError("this libzmq was built without CURVE support")
    public, secret = zmq.curve_keypair()
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    secret_path = write_secret_file(folder / f"{name}.key", _cert(public, secret))
    public_path = folder / f"{name}.pub"
    public_path.write_bytes(_cert(public, None))
    os.chmod(public_path, 0o644)
    return public_path, secret_path


def load_secret_key(path: str | os.PathLike[str]) -> tuple[bytes, bytes]:
    """``(public, secret)`` from a ``NAME.key`` file; refuses one others can read."""
    target = Path(path)
    try:
        mode = target.stat().st_mode
    except OSError as exc:
        raise ValueError(f"cannot read the CURVE secret key file {str(target)!r}: "
                         f"{exc.strerror}") from None
    if mode & 0o077:
        raise ValueError(
            f"the CURVE secret key file {str(target)!r} is readable by others "
            f"(mode {mode & 0o777:o}); chmod 600 it"
        )
    public, secret = zmq.auth.load_certificate(target)
    if not secret:
        raise ValueError(f"{str(target)!r} has no secret-key (is it the .pub file?)")
    return public, secret


def load_public_key(spec: str | bytes) -> bytes:
    """A server public key given as 40 Z85 characters or a path to a ``NAME.pub``/``.key``."""
    raw = spec.encode("ascii") if isinstance(spec, str) else spec
    if len(raw) == Z85_KEY_LENGTH and not os.path.exists(raw):
        try:
            zmq.utils.z85.decode(raw)
        except (ValueError, KeyError):
            raise ValueError("a CURVE public key is 40 Z85 characters") from None
        return raw
    try:
        public, _secret = zmq.auth.load_certificate(os.fsdecode(raw))
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"CURVE server key must be 40 Z85 characters or a .pub file path ({exc})"
        ) from None
    return public


def apply_server(sock: zmq.Socket, secret: bytes) -> None:
    """Make ``sock`` a CURVE server with ``secret`` (before it binds)."""
    sock.curve_secretkey = secret
    sock.curve_server = True


def apply_client(sock: zmq.Socket, server_public: bytes) -> None:
    """Make ``sock`` a CURVE client of ``server_public`` with a fresh key pair (before connect)."""
    public, secret = zmq.curve_keypair()
    sock.curve_serverkey = server_public
    sock.curve_publickey = public
    sock.curve_secretkey = secret
