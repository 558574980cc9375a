"""The broker's Prometheus samples, named and labelled as Pulsar 3.3 exposes them.

Pulsar's ``NamespaceStatsAggregator`` and ``TopicStats.printTopicStats`` write one gauge
family per metric (``pulsar_rate_in``, ``pulsar_subscription_back_log``,
``pulsar_consumer_available_permits``, ``pulsar_in_messages_total`` …, every one of them
typed ``gauge``, the ``_total`` ones too) with the labels ``cluster``, ``namespace``,
``topic`` and, per subscription, ``subscription`` and, per consumer, ``consumer_name`` and
``consumer_id``. The topic-level families that have a broker default open with a sample
labelled only ``cluster`` (value 0). With ``expose_topic_level_metrics_in_prometheus`` off,
the same figures are summed per namespace. This module only gathers the numbers (on the
broker thread, from the stats every topic reports); ``web/metrics.py`` writes them out.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .service import BrokerService

Labels = dict[str, str]
Samples = dict[str, list[tuple[Labels, float]]]
"""metric name -> (labels, value) samples, in the order they are written."""

# Topic gauges Pulsar writes with a broker default (``writeMetricWithBrokerDefault``).
_WITH_BROKER_DEFAULT = (
    "pulsar_subscriptions_count", "pulsar_producers_count", "pulsar_consumers_count",
    "pulsar_rate_in", "pulsar_rate_out", "pulsar_throughput_in", "pulsar_throughput_out",
    "pulsar_storage_size", "pulsar_storage_logical_size", "pulsar_msg_backlog",
)
# Topic gauges summed per namespace when topic-level metrics are off.
_NAMESPACE_SUMS = (
    *_WITH_BROKER_DEFAULT, "pulsar_storage_backlog_size",
    "pulsar_in_bytes_total", "pulsar_in_messages_total",
)

# name -> the field of a subscription's stats it reads (booleans become 0/1).
SUBSCRIPTION_METRICS: dict[str, str] = {
    "pulsar_subscription_back_log": "msgBacklog",
    "pulsar_subscription_back_log_no_delayed": "msgBacklogNoDelayed",
    "pulsar_subscription_delayed": "msgDelayed",
    "pulsar_subscription_msg_rate_redeliver": "msgRateRedeliver",
    "pulsar_subscription_unacked_messages": "unackedMessages",
    "pulsar_subscription_blocked_on_unacked_messages": "blockedSubscriptionOnUnackedMsgs",
    "pulsar_subscription_msg_rate_out": "msgRateOut",
    "pulsar_subscription_msg_ack_rate": "messageAckRate",
    "pulsar_subscription_msg_throughput_out": "msgThroughputOut",
    "pulsar_out_bytes_total": "bytesOutCounter",
    "pulsar_out_messages_total": "msgOutCounter",
    "pulsar_subscription_last_expire_timestamp": "lastExpireTimestamp",
    "pulsar_subscription_last_acked_timestamp": "lastAckedTimestamp",
    "pulsar_subscription_last_consumed_flow_timestamp": "lastConsumedFlowTimestamp",
    "pulsar_subscription_last_consumed_timestamp": "lastConsumedTimestamp",
    "pulsar_subscription_last_mark_delete_advanced_timestamp": "lastMarkDeleteAdvancedTimestamp",
    "pulsar_subscription_msg_rate_expired": "msgRateExpired",
    "pulsar_subscription_total_msg_expired": "totalMsgExpired",
}
CONSUMER_METRICS: dict[str, str] = {
    "pulsar_consumer_msg_rate_redeliver": "msgRateRedeliver",
    "pulsar_consumer_unacked_messages": "unackedMessages",
    "pulsar_consumer_blocked_on_unacked_messages": "blockedConsumerOnUnackedMsgs",
    "pulsar_consumer_msg_rate_out": "msgRateOut",
    "pulsar_consumer_msg_ack_rate": "messageAckRate",
    "pulsar_consumer_msg_throughput_out": "msgThroughputOut",
    "pulsar_consumer_available_permits": "availablePermits",
    "pulsar_out_bytes_total": "bytesOutCounter",
    "pulsar_out_messages_total": "msgOutCounter",
}


def collect(service: BrokerService, cluster: str) -> Samples:
    """Every sample of every loaded topic, as one scrape of Pulsar's ``/metrics`` has them."""
    settings = service.settings
    per_topic = settings.expose_topic_level_metrics_in_prometheus
    with_consumers = settings.expose_consumer_level_metrics_in_prometheus
    samples: Samples = {}
    topics_count: dict[str, int] = defaultdict(int)
    namespace_sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for name in sorted(service.topics):
        topic = service.topics[name]
        namespace = topic.namespace
        stats = topic.stats()
        values = _topic_values(stats, service.policies_for(topic).backlog_quota_limit_bytes)
        topics_count[namespace] += 1
        if not per_topic:
            for metric in _NAMESPACE_SUMS:
                namespace_sums[namespace][metric] += values[metric]
            continue
        labels = {"cluster": cluster, "namespace": namespace, "topic": name}
        for metric, value in values.items():
            family = samples.get(metric)
            if family is None:
                family = samples[metric] = (
                    [({"cluster": cluster}, 0.0)] if metric in _WITH_BROKER_DEFAULT else []
                )
            family.append((labels, value))
        _add_subscriptions(samples, labels, stats, topic, with_consumers)
    for namespace, count in sorted(topics_count.items()):
        ns_labels = {"cluster": cluster, "namespace": namespace}
        samples.setdefault("pulsar_topics_count", []).append((ns_labels, float(count)))
        for metric, value in namespace_sums.get(namespace, {}).items():
            samples.setdefault(metric, []).append((ns_labels, value))
    return samples


def _topic_values(stats: dict[str, Any], backlog_quota_limit: int) -> dict[str, float]:
    subscriptions = stats["subscriptions"].values()
    return {
        "pulsar_subscriptions_count": len(stats["subscriptions"]),
        "pulsar_producers_count": len(stats["publishers"]),
        "pulsar_consumers_count": sum(len(s["consumers"]) for s in subscriptions),
        "pulsar_rate_in": stats["msgRateIn"],
        "pulsar_rate_out": stats["msgRateOut"],
        "pulsar_throughput_in": stats["msgThroughputIn"],
        "pulsar_throughput_out": stats["msgThroughputOut"],
        "pulsar_average_msg_size": stats["averageMsgSize"],
        "pulsar_storage_size": stats["storageSize"],
        "pulsar_storage_logical_size": stats["storageSize"],
        "pulsar_msg_backlog": sum(s["msgBacklog"] for s in subscriptions),
        "pulsar_storage_backlog_size": stats["backlogSize"],
        "pulsar_storage_backlog_quota_limit": backlog_quota_limit,
        "pulsar_in_bytes_total": stats["bytesInCounter"],
        "pulsar_in_messages_total": stats["msgInCounter"],
    }


def _add_subscriptions(
    samples: Samples, topic_labels: Labels, stats: dict[str, Any], topic: Any,
    with_consumers: bool,
) -> None:
    for sub_name, sub_stats in stats["subscriptions"].items():
        sub_labels = {**topic_labels, "subscription": sub_name}
        for metric, field in SUBSCRIPTION_METRICS.items():
            samples.setdefault(metric, []).append((sub_labels, float(sub_stats[field])))
        if not with_consumers:
            continue
        # The stats list the consumers in the subscription's order: pair them for the id.
        consumers = topic.subscriptions[sub_name].consumers
        for consumer, consumer_stats in zip(consumers, sub_stats["consumers"], strict=True):
            labels = {
                **sub_labels,
                "consumer_name": consumer.consumer_name,
                "consumer_id": str(consumer.consumer_id),
            }
            for metric, field in CONSUMER_METRICS.items():
                samples.setdefault(metric, []).append((labels, float(consumer_stats[field])))
