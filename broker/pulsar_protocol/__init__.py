"""Apache Pulsar's binary protocol (``pulsar://``) for the official ``pulsar-client``.

:mod:`.framing` cuts a TCP byte stream into commands and lays out outgoing frames,
:mod:`.metadata` maps Pulsar's ``MessageMetadata`` to the core's, and :mod:`.session` is
one connection's protocol state (sans-I/O: bytes in, bytes out, core calls in between).
The broker's loop (:mod:`pulsarlab.broker.server`) owns the sockets.
"""

from .framing import FrameDecoder, FrameError
from .session import PulsarSession

__all__ = ["FrameDecoder", "FrameError", "PulsarSession"]
