"""Attach to any broker: pulsarlab over ZeroMQ, or a Pulsar cluster by pulsar:// and REST."""

from .connection import (
    CLIENTS,
    ClusterConnection,
    Connection,
    WritesNotAllowed,
    ZmqConnection,
    open_connection,
)
from .rest import ClusterAdminError, RestAdmin

__all__ = [
    "CLIENTS",
    "ClusterAdminError",
    "ClusterConnection",
    "Connection",
    "RestAdmin",
    "WritesNotAllowed",
    "ZmqConnection",
    "open_connection",
]
