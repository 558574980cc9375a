"""Apache Pulsar's binary protocol (``pulsar://``) for the official ``pulsar-client``.

:mod:`.framing` cuts a TCP byte stream into commands and lays out outgoing frames,
:mod:`.metadata` maps Pulsar's ``MessageMetadata`` to the core's, and :mod:`.session` is
one connection's protocol state (sans-I/O: bytes in, bytes out, core calls in between).
The broker's loop (:mod:`pulsarlab.broker.server`) owns the sockets.
"""

from typing import Any

__all__ = ["FrameDecoder", "FrameError", "PulsarSession"]


def __getattr__(name: str) -> Any:
    # Lazy: the client imports this package's framing and protobuf modules, never the
    # session (which pulls in the broker's core).
    if name == "PulsarSession":
        from .session import PulsarSession

        return PulsarSession
    if name in ("FrameDecoder", "FrameError"):
        from . import framing

        return getattr(framing, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
