"""Driver-side broker metadata for the Spark source: topics, partitions, last entries.

Planning a batch or a micro-batch opens no durable subscription. It goes through
:class:`pulsarlab.Admin` (the broker's admin REST API) — or, for a Pulsar cluster with
``admin.url``, through its admin REST API with :class:`pulsarlab.cluster.RestAdmin`, which has
the same method names; there a topic's latest position comes from its internal stats
(``lastConfirmedEntry`` and the ledger list, which also feeds admission control). A
``pulsar://`` cluster given without ``admin.url`` is planned over Pulsar's binary protocol
(:mod:`.binary_lookup`: partitioned metadata, namespace listings, ``GET_LAST_MESSAGE_ID``),
which knows no ledger list — see that module for what this costs. ``admin.url`` is preferred
when given. Broker errors become one-line :class:`PulsarSparkError`\\ s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from .options import ClientSecurity, PulsarSparkError, SourceOptions, namespace_pattern
from .positions import Position

__all__ = ["BrokerMetadata", "PartitionInfo"]

log = logging.getLogger("pulsarlab.spark")

T = TypeVar("T")


@dataclass(frozen=True)
class PartitionInfo:
    """One partition topic (or non-partitioned topic) as the broker sees it now."""

    topic: str
    index: int
    exists: bool
    latest: Position | None  # the last entry; None when the partition holds nothing
    ledgers: tuple[tuple[int, int], ...] = ()


class BrokerMetadata:
    """Lists topics and partitions and reads their last entries (lazy admin connection)."""

    def __init__(
        self, service_url: str, timeout_ms: int, security: ClientSecurity | None = None,
        admin_url: str | None = None,
    ) -> None:
        self.service_url = service_url
        self.timeout_ms = timeout_ms
        self.security = security or ClientSecurity()
        self.admin_url = admin_url
        self._admin: Any = None

    @property
    def binary(self) -> bool:
        """Whether planning uses Pulsar's binary protocol (a cluster without ``admin.url``)."""
        return self.service_url.startswith("pulsar") and self.admin_url is None

    def _new_admin(self) -> Any:
        if self.binary:
            from .binary_lookup import BinaryLookup

            return BinaryLookup(self.service_url, self.timeout_ms, self.security)
        if self.service_url.startswith("pulsar"):  # a cluster: its admin.url
            from ..cluster.rest import RestAdmin

            return RestAdmin(self.admin_url, token=self.security.token,
                             timeout_seconds=self.timeout_ms / 1000)
        from ..broker.admin import Admin

        return Admin(self.admin_url or self.service_url, timeout_seconds=self.timeout_ms / 1000,
                     **self.security.client_kwargs())

    def _call(self, what: str, fn: Callable[[Any], T]) -> T:
        from ..broker.client.exceptions import ConnectError, PulsarException, Timeout
        from ..broker.errors import PulsarLabError
        from ..cluster.rest import ClusterAdminError

        if self._admin is None:
            try:
                self._admin = self._new_admin()
            except ValueError:  # a zmq:// URL whose broker is not on this machine
                raise PulsarSparkError(
                    f"no pulsarlab broker at {self.service_url} runs on this machine: give its "
                    "admin REST API with option 'admin.url' (http://host:port, the broker's "
                    "web_url)"
                ) from None
        try:
            return fn(self._admin)
        except PulsarException as exc:  # pulsarlab's client: the binary protocol
            if isinstance(exc, ConnectError | Timeout):
                self.close()
                raise PulsarSparkError(
                    f"no answer from the Pulsar broker at {self.service_url} within "
                    f"{self.timeout_ms / 1000:g} s while {what} over the binary protocol "
                    "(no admin.url): check option 'service.url', or give the cluster's admin "
                    "REST API with option 'admin.url'"
                ) from None
            raise PulsarSparkError(f"{what}: {exc}") from None
        except ClusterAdminError as exc:
            raise PulsarSparkError(f"{what}: {exc}") from None
        except OSError as exc:  # TimeoutError included
            if self.admin_url is not None:
                raise PulsarSparkError(
                    f"no answer from the admin REST API at {self.admin_url} while {what}: "
                    f"{getattr(exc, 'reason', exc)} (check option 'admin.url')"
                ) from None
            if not isinstance(exc, TimeoutError):
                raise
            self.close()
            raise PulsarSparkError(
                f"no answer from a pulsarlab broker at {self.service_url} within "
                f"{self.timeout_ms / 1000:g} s while {what} (check option 'service.url'; the "
                "broker must be reachable from the Spark driver and executors)"
            ) from None
        except PulsarLabError as exc:
            raise PulsarSparkError(f"{what}: {exc}") from None

    def close(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None:
            admin.close()

    # -- topics ---------------------------------------------------------------------------

    def topics(self, opts: SourceOptions) -> list[str]:
        """The (possibly partitioned) topics ``opts`` selects; a pattern is listed now."""
        if opts.topics_pattern is None:
            return list(opts.topics)
        from ..broker.topic_name import TopicName

        regex, namespace = namespace_pattern(opts.topics_pattern)
        names = self._call(
            f"listing namespace {namespace}",
            lambda a: a.topics_of_namespace(namespace) if self.binary
            else a.topics.get_list(namespace),
        )
        found = set()
        for name in names or []:
            parsed = TopicName.get(name).partitioned_topic_name
            if parsed.persistent and regex.fullmatch(str(parsed)):
                found.add(str(parsed))
        return sorted(found)

    def partitions(self, topic: str) -> list[str]:
        """The partition topics of ``topic`` (``[topic]`` when it is not partitioned)."""
        from ..broker.topic_name import TopicName

        if self.binary:
            return self._call(f"looking up {topic}", lambda a: a.partitions(topic))
        meta = self._call(
            f"looking up {topic}", lambda a: a.topics.get_partitioned_topic_metadata(topic)
        )
        n = int((meta or {}).get("partitions") or 0)
        if n <= 0:
            return [topic]
        parsed = TopicName.get(topic)
        return [str(parsed.partition(i)) for i in range(n)]

    def partition_info(self, topic: str) -> PartitionInfo:
        """The last entry and ledgers of one partition topic (``exists=False`` if missing)."""
        from ..broker.errors import TopicNotFound
        from ..broker.topic_name import TopicName

        index = TopicName.get(topic).partition_index
        if self.binary:
            return self._call(f"reading the last message id of {topic}",
                              lambda a: _info_from_last_id(a, topic, index))
        stats = self._call(
            f"reading the stats of {topic}",
            lambda a: _internal_stats_or_none(a, topic, TopicNotFound),
        )
        if stats is None:
            return PartitionInfo(topic, index, False, None)
        return _info_from_stats(topic, index, stats)

    def snapshot(self, opts: SourceOptions) -> dict[str, PartitionInfo]:
        """Every partition topic ``opts`` selects, by name (sorted), with its last entry."""
        out: dict[str, PartitionInfo] = {}
        for topic in self.topics(opts):
            for name in self.partitions(topic):
                out[name] = self.partition_info(name)
        if self.binary and self._admin is not None:
            self._admin.keep_only(set(out))
        return dict(sorted(out.items()))


def _info_from_last_id(lookup: Any, topic: str, index: int) -> PartitionInfo:
    """A partition's last entry from ``GET_LAST_MESSAGE_ID``. No ledger list exists here: the
    current ledger alone (``(ledger, last entry + 1)``) is what admission control counts."""
    from ..broker.client.exceptions import TopicNotFound

    try:
        last = lookup.last_message_id(topic)
    except TopicNotFound:  # a broker that does not auto-create topics
        return PartitionInfo(topic, index, False, None)
    if last is None:
        return PartitionInfo(topic, index, True, None)
    ledger, entry = last.ledger_id(), last.entry_id()
    return PartitionInfo(topic, index, True, Position(ledger, entry, index, -1),
                         ((ledger, entry + 1),))


def _internal_stats_or_none(admin: Any, topic: str, not_found: type[Exception]) -> Any:
    from ..cluster.rest import ClusterAdminError

    try:
        return admin.topics.get_internal_stats(topic)
    except not_found:
        return None
    except ClusterAdminError as exc:  # a cluster's REST API: 404 is an unknown topic
        if exc.status == 404:
            return None
        raise


def _info_from_stats(topic: str, index: int, stats: dict[str, Any]) -> PartitionInfo:
    ledgers = tuple(
        (int(info["ledgerId"]), int(info.get("entries") or 0))
        for info in stats.get("ledgers") or []
    )
    latest: Position | None = None
    lac = str(stats.get("lastConfirmedEntry") or "")
    ledger_text, _, entry_text = lac.partition(":")
    try:
        ledger, entry = int(ledger_text), int(entry_text)
    except ValueError:
        ledger, entry = -1, -1
    if ledger >= 0 and entry >= 0:
        latest = Position(ledger, entry, index, -1)
    else:
        for ledger_id, entries in reversed(ledgers):
            if entries > 0:
                latest = Position(ledger_id, entries - 1, index, -1)
                break
    return PartitionInfo(topic, index, True, latest, ledgers)
