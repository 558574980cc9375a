"""Topic names: parsing, validation and the partition naming rule.

``{persistent|non-persistent}://tenant/namespace/topic``; a short name ``t`` means
``persistent://public/default/t`` and ``tenant/namespace/t`` means the persistent topic in that
namespace. Partition ``i`` of a partitioned topic ``T`` is the internal topic
``T-partition-i``. Tenant, namespace and topic take Pulsar's ``NamedEntity`` characters
(letters, digits, ``- _ = : .``). Bad names raise
:class:`~pulsarlab.broker.errors.InvalidTopicName` with a message that says what is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import InvalidTopicName

PARTITION_SUFFIX = "-partition-"
DEFAULT_TENANT = "public"
DEFAULT_NAMESPACE = "default"
DOMAINS = ("persistent", "non-persistent")

_NAMED_ENTITY = re.compile(r"^[-=:.\w]+$", re.ASCII)  # Java's \w: ASCII only
_CONTROL = re.compile("[\x00-\x1f\x7f]")
_PARTITION = re.compile(r"^(?P<base>.+)-partition-(?P<index>0|[1-9][0-9]*)$")
SYSTEM_TOPIC_PREFIXES = ("__change_events", "__transaction", "__")


@dataclass(frozen=True, slots=True)
class TopicName:
    """A parsed, validated topic name."""

    domain: str
    tenant: str
    namespace_portion: str
    local_name: str

    @staticmethod
    def get(name: str) -> TopicName:
        """Parse ``name`` (full or short form); raise ``InvalidTopicName`` if it is malformed."""
        if not isinstance(name, str):
            raise InvalidTopicName(
                f"topic name must be a string, not {type(name).__name__}"
            )
        if not name or name.strip() != name:
            raise InvalidTopicName(f"invalid topic name {name!r}: empty or surrounded by spaces")
        if _CONTROL.search(name):
            raise InvalidTopicName(f"invalid topic name {name!r}: contains control characters")
        if "://" in name:
            domain, _, rest = name.partition("://")
            if domain not in DOMAINS:
                raise InvalidTopicName(
                    f"invalid topic name {name!r}: domain must be 'persistent' or "
                    f"'non-persistent', not {domain!r}"
                )
            parts = rest.split("/")
            if len(parts) != 3:
                raise InvalidTopicName(
                    f"invalid topic name {name!r}: expected "
                    f"'{domain}://tenant/namespace/topic'"
                )
        else:
            domain = "persistent"
            parts = name.split("/")
            if len(parts) == 1:
                parts = [DEFAULT_TENANT, DEFAULT_NAMESPACE, parts[0]]
            elif len(parts) != 3:
                raise InvalidTopicName(
                    f"invalid short topic name {name!r}: use 'topic' or 'tenant/namespace/topic'"
                )
        tenant, namespace, local = parts
        for label, value in (("tenant", tenant), ("namespace", namespace)):
            if not value:
                raise InvalidTopicName(f"invalid topic name {name!r}: empty {label}")
            if not _NAMED_ENTITY.match(value):
                raise InvalidTopicName(
                    f"invalid topic name {name!r}: {label} {value!r} may only contain "
                    "letters, digits and - _ = : ."
                )
        if not local:
            raise InvalidTopicName(f"invalid topic name {name!r}: empty topic")
        if not _NAMED_ENTITY.match(local):  # Pulsar's NamespaceName.getTopicName checks it too
            raise InvalidTopicName(
                f"invalid topic name {name!r}: topic {local!r} may only contain "
                "letters, digits and - _ = : ."
            )
        return TopicName(domain, tenant, namespace, local)

    @property
    def namespace(self) -> str:
        return f"{self.tenant}/{self.namespace_portion}"

    @property
    def persistent(self) -> bool:
        return self.domain == "persistent"

    def __str__(self) -> str:
        return f"{self.domain}://{self.tenant}/{self.namespace_portion}/{self.local_name}"

    @property
    def partition_index(self) -> int:
        """The partition index encoded in the name, or -1 if it is not a partition."""
        match = _PARTITION.match(self.local_name)
        return int(match.group("index")) if match else -1

    @property
    def is_partition(self) -> bool:
        return self.partition_index >= 0

    @property
    def partitioned_topic_name(self) -> TopicName:
        """The parent partitioned topic of a partition (or this name itself)."""
        match = _PARTITION.match(self.local_name)
        if not match:
            return self
        return TopicName(self.domain, self.tenant, self.namespace_portion, match.group("base"))

    def partition(self, index: int) -> TopicName:
        """The internal topic of partition ``index``."""
        if not isinstance(index, int) or index < 0:
            raise InvalidTopicName(f"partition index must be an int >= 0, not {index!r}")
        return TopicName(
            self.domain,
            self.tenant,
            self.namespace_portion,
            f"{self.local_name}{PARTITION_SUFFIX}{index}",
        )

    @property
    def is_system_topic(self) -> bool:
        return self.local_name.startswith(SYSTEM_TOPIC_PREFIXES)


def full_name(name: str) -> str:
    """Normalise ``name`` to its full ``domain://tenant/namespace/topic`` form."""
    return str(TopicName.get(name))
