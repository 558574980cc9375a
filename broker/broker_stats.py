"""``broker-stats/topics``: every loaded topic's stats in the nested shape Pulsar's
``BrokerService.updateRates`` streams them (the document Pulsar Manager polls).

``{namespace: {bundle: {"persistent": {topic: {...}}}}}``, non-persistent topics under the
same ``"persistent"`` key as Pulsar writes them; one bundle per namespace (pulsarlab does not
split namespaces), ``0x00000000_0xffffffff``. A topic's object has the fields of
``PersistentTopic.updateRates``: ``publishers``, ``replication``, ``subscriptions`` (each with
its ``consumers`` and rates), ``producerCount``, ``averageMsgSize``, ``msgRateIn/Out``,
``msgInCount``, ``bytesInCount``, ``msgOutCount``, ``bytesOutCount``,
``msgThroughputIn/Out``, ``storageSize``, ``backlogSize``, ``pendingAddEntriesCount``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .service import BrokerService

FULL_BUNDLE = "0x00000000_0xffffffff"

_CONSUMER_FIELDS = (
    "msgRateOut", "msgThroughputOut", "msgRateRedeliver", "consumerName", "availablePermits",
    "unackedMessages", "blockedConsumerOnUnackedMsgs", "address", "connectedSince",
    "clientVersion",
)
_PUBLISHER_FIELDS = (
    "msgRateIn", "msgThroughputIn", "averageMsgSize", "producerId", "producerName",
    "address", "connectedSince", "clientVersion",
)


def topics_stats(service: BrokerService) -> dict[str, Any]:
    """The document, built from the stats every loaded topic reports now."""
    out: dict[str, Any] = {}
    for name in sorted(service.topics):
        topic = service.topics[name]
        bundle = out.setdefault(topic.namespace, {}).setdefault(FULL_BUNDLE, {})
        bundle.setdefault("persistent", {})[name] = _topic(topic.stats())
    return out


def _topic(stats: dict[str, Any]) -> dict[str, Any]:
    return {
        "publishers": [{k: p[k] for k in _PUBLISHER_FIELDS} for p in stats["publishers"]],
        "replication": {},
        "subscriptions": {name: _subscription(s) for name, s in stats["subscriptions"].items()},
        "producerCount": len(stats["publishers"]),
        "averageMsgSize": stats["averageMsgSize"],
        "msgRateIn": stats["msgRateIn"],
        "msgRateOut": stats["msgRateOut"],
        "msgInCount": stats["msgInCounter"],
        "bytesInCount": stats["bytesInCounter"],
        "msgOutCount": stats["msgOutCounter"],
        "bytesOutCount": stats["bytesOutCounter"],
        "msgThroughputIn": stats["msgThroughputIn"],
        "msgThroughputOut": stats["msgThroughputOut"],
        "storageSize": stats["storageSize"],
        "backlogSize": stats["backlogSize"],
        "pendingAddEntriesCount": 0,
    }


def _subscription(stats: dict[str, Any]) -> dict[str, Any]:
    out = {
        "consumers": [{k: c[k] for k in _CONSUMER_FIELDS} for c in stats["consumers"]],
        "msgBacklog": stats["msgBacklog"],
        "msgRateExpired": stats["msgRateExpired"],
        "msgRateOut": stats["msgRateOut"],
        "messageAckRate": stats["messageAckRate"],
        "msgThroughputOut": stats["msgThroughputOut"],
        "msgRateRedeliver": stats["msgRateRedeliver"],
        "type": stats["type"],
    }
    if stats["type"] in ("Shared", "Key_Shared"):  # individual-ack subscriptions only
        out["blockedSubscriptionOnUnackedMsgs"] = stats["blockedSubscriptionOnUnackedMsgs"]
        out["unackedMessages"] = stats["unackedMessages"]
    return out
