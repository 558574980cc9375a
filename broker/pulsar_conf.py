"""Pulsar's own configuration files (``standalone.conf``, ``broker.conf``) as broker settings.

``pulsarlab broker --config standalone.conf`` reads the file as Java reads a
``.properties`` file (``key=value`` or ``key: value``, ``#``/``!`` comments, a trailing
``\\`` continues a line, ``\\uXXXX`` escapes) and maps each Java property name onto its
setting in :class:`~.settings.BrokerSettings`: broker.conf's name in snake_case
(``brokerServicePortTls`` → ``broker_service_port_tls``), or, where pulsarlab's setting is
named differently, through :data:`RENAMED`. ``authenticationProviders`` may hold Pulsar's
provider class names. An empty value keeps the default, as Pulsar does for its optional
keys (``brokerServicePortTls=`` is "no TLS listener").

A key with no pulsarlab setting is collected in :attr:`PulsarConf.ignored` (the command
line lists them once, with "ignored"); a value of the wrong type is an
:class:`~.errors.InvalidArgument` naming the file, line and key. JVM system properties
given as ``-Dname=value`` (as in ``PULSAR_EXTRA_OPTS``) map through :data:`JVM_PROPERTIES`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .errors import InvalidArgument
from .security import provider_names
from .settings import BrokerSettings

__all__ = [
    "JVM_PROPERTIES",
    "RENAMED",
    "PulsarConf",
    "jvm_options",
    "parse_properties",
    "read_pulsar_conf",
    "setting_name",
]

# Java property -> pulsarlab setting, where the snake_case of the name is not the setting.
RENAMED = {
    "subscriptionKeySharedUseConsistentHashing": "key_shared_use_consistent_hashing",
    "brokerMaxConnections": "max_connections",
    "managedLedgerMaxSizePerLedgerMbytes": "managed_ledger_max_size_per_ledger_mb",
    "delayedDeliveryTickTimeMillis": "delayed_delivery_tick_ms",
    "activeConsumerFailoverDelayTimeMillis": "active_consumer_failover_delay_ms",
    "backlogQuotaCheckIntervalInSeconds": "backlog_quota_check_interval_seconds",
}
# Settings that are pulsarlab's own (not broker.conf keys), never read from a Pulsar file.
_NOT_PULSAR = frozenset({"pulsar_version", "curve_secret_key_file", "max_topics",
                         "max_producers_per_connection", "max_consumers_per_connection",
                         "managed_ledger_cursor_persist_interval_ms"})
# JVM system properties (-Dname=value) Pulsar reads, and their settings.
JVM_PROPERTIES = {"pulsar.auth.basic.conf": "basic_auth_conf"}

_FIELDS = {f.name: f for f in fields(BrokerSettings)}
_DEFAULTS = BrokerSettings()
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


@dataclass
class PulsarConf:
    """What a Pulsar configuration file set: settings by name, and the keys it ignored."""

    settings: dict[str, Any] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)


def setting_name(key: str) -> str | None:
    """The pulsarlab setting a Java property sets, or ``None`` when there is none."""
    name = RENAMED.get(key) or _CAMEL.sub("_", key).lower()
    if name in _FIELDS and name not in _NOT_PULSAR:
        return name
    return None


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 == len(text):
            out.append(char)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2:i + 6]):
            out.append(chr(int(text[i + 2:i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Java's logical lines: comments dropped, ``\\``-continued lines joined."""
    lines: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip()
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        continued = trailing % 2 == 1
        if continued:
            line = line[:-1]
        pending = (number, line) if pending is None else (pending[0], pending[1] + line)
        if not continued:
            lines.append(pending)
            pending = None
    if pending is not None:
        lines.append(pending)
    return lines


def parse_properties(text: str) -> list[tuple[int, str, str]]:
    """``(line, key, value)`` for each property of a Java ``.properties`` text, in order."""
    out = []
    for number, line in _logical_lines(text):
        match = re.match(r"((?:\\.|[^\\=:\s])*)\s*[=:]?\s*", line)
        assert match is not None  # the pattern matches any text, perhaps emptily
        key = _unescape(match.group(1))
        out.append((number, key, _unescape(line[match.end():]).strip()))
    return out


def _convert(key: str, name: str, raw: str) -> Any:
    default = getattr(_DEFAULTS, name)
    if isinstance(default, bool):
        if raw.lower() not in ("true", "false"):
            raise ValueError("must be true or false")
        return raw.lower() == "true"
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            raise ValueError("must be an integer") from None
    if key == "authenticationProviders":
        try:
            return ",".join(provider_names(raw))
        except InvalidArgument as exc:
            raise ValueError(str(exc)) from None
    return raw


def _apply(conf: PulsarConf, where: str, key: str, name: str | None, raw: str) -> None:
    if name is None:
        if key not in conf.ignored:
            conf.ignored.append(key)
        return
    if raw == "":
        return
    try:
        conf.settings[name] = _convert(key, name, raw)
    except ValueError as exc:
        raise InvalidArgument(f"{where}: {key}={raw!r}: {exc}") from None


def settings_from_properties(text: str, source: str = "config") -> PulsarConf:
    """Map the properties of ``text`` (a file called ``source`` in errors) onto settings."""
    conf = PulsarConf()
    for number, key, raw in parse_properties(text):
        _apply(conf, f"{source}:{number}", key, setting_name(key), raw)
    return conf


def read_pulsar_conf(path: str | Path) -> PulsarConf:
    """Read ``standalone.conf`` / ``broker.conf``; an unreadable file is a one-line error."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InvalidArgument(
            f"cannot read the config file {str(path)!r}: {exc.strerror}"
        ) from None
    return settings_from_properties(text, Path(path).name)


def jvm_options(options: list[str]) -> PulsarConf:
    """Settings from ``-Dname=value`` options (``pulsar.auth.basic.conf`` …); other
    ``-D`` names and other JVM options are ignored."""
    conf = PulsarConf()
    for option in options:
        body = option[2:] if option.startswith("-D") else option
        key, sep, value = body.partition("=")
        if not option.startswith("-D") or not sep:
            conf.ignored.append(option)
            continue
        _apply(conf, "-D", key, JVM_PROPERTIES.get(key), value.strip())
    return conf
