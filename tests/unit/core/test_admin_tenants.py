"""R-ADMIN: clusters, tenants, namespaces and the topic operations the REST API added."""

import pytest

from pulsarlab.broker.admin_handler import AdminHandler
from pulsarlab.broker.errors import (
    ClusterNotFound,
    InvalidArgument,
    NamespaceAlreadyExists,
    NamespaceNotEmpty,
    NamespaceNotFound,
    NotAllowed,
    PartitionsNotIncreased,
    TenantAlreadyExists,
    TenantNotEmpty,
    TenantNotFound,
    TopicNotFound,
)
from pulsarlab.broker.storage import MemoryStorage


def _admin(harness) -> AdminHandler:
    return AdminHandler(harness.service)


def test_standalone_cluster_and_default_tenants(harness):
    admin = _admin(harness)
    assert admin.call("clusters.get_clusters", {}) == ["standalone"]
    with pytest.raises(ClusterNotFound, match="'us-west' does not exist"):
        admin.call("clusters.get_cluster", {"cluster": "us-west"})
    assert admin.call("tenants.get_tenants", {}) == ["public", "pulsar"]
    assert admin.call("namespaces.get_namespaces", {"tenant": "public"}) == [
        "public/default", "public/functions",
    ]
    assert admin.call("tenants.get_tenant_info", {"tenant": "public"}) == {
        "adminRoles": [], "allowedClusters": ["standalone"],
    }


def test_tenant_lifecycle(harness):
    admin = _admin(harness)
    admin.call("tenants.create_tenant", {"tenant": "acme", "config": {"adminRoles": ["ops"]}})
    with pytest.raises(TenantAlreadyExists):
        admin.call("tenants.create_tenant", {"tenant": "acme"})
    with pytest.raises(NotAllowed, match="do not exist"):
        admin.call("tenants.create_tenant",
                   {"tenant": "b", "config": {"allowedClusters": ["elsewhere"]}})
    with pytest.raises(InvalidArgument, match="not valid"):
        admin.call("tenants.create_tenant", {"tenant": "a/b"})
    admin.call("tenants.update_tenant", {"tenant": "acme", "config": {"adminRoles": ["x"]}})
    assert admin.call("tenants.get_tenant_info", {"tenant": "acme"})["adminRoles"] == ["x"]
    admin.call("namespaces.create_namespace", {"namespace": "acme/orders"})
    with pytest.raises(TenantNotEmpty, match="acme/orders"):
        admin.call("tenants.delete_tenant", {"tenant": "acme"})
    admin.call("tenants.delete_tenant", {"tenant": "acme", "force": True})
    assert "acme" not in admin.call("tenants.get_tenants", {})
    with pytest.raises(TenantNotFound):
        admin.call("tenants.get_tenant_info", {"tenant": "acme"})


def test_namespace_lifecycle_and_policies_survive_restart(make_harness):
    harness = make_harness(MemoryStorage())
    admin = _admin(harness)
    with pytest.raises(TenantNotFound):
        admin.call("namespaces.create_namespace", {"namespace": "nobody/ns"})
    admin.call("namespaces.create_namespace",
               {"namespace": "public/ns", "policies": {"message_ttl_in_seconds": 30}})
    with pytest.raises(NamespaceAlreadyExists):
        admin.call("namespaces.create_namespace", {"namespace": "public/ns"})
    assert admin.call("namespaces.get_policies",
                      {"namespace": "public/ns"})["message_ttl_in_seconds"] == 30
    admin.call("namespaces.remove_message_ttl", {"namespace": "public/ns"})
    assert "message_ttl_in_seconds" not in admin.call("namespaces.get_policies",
                                                      {"namespace": "public/ns"})
    harness.publish("public/ns/t", 1)
    with pytest.raises(NamespaceNotEmpty, match="public/ns/t"):
        admin.call("namespaces.delete_namespace", {"namespace": "public/ns"})
    admin.call("namespaces.grant_permission",
               {"namespace": "public/ns", "role": "r", "actions": ["consume"]})
    again = AdminHandler(harness.service)
    assert "public/ns" in again.call("namespaces.get_namespaces", {"tenant": "public"})
    again.call("namespaces.delete_namespace", {"namespace": "public/ns", "force": True})
    assert harness.service.list_topics("public/ns") == []
    assert again.call("namespaces.get_permissions", {"namespace": "public/ns"}) == {}
    with pytest.raises(NamespaceNotFound):
        again.call("namespaces.delete_namespace", {"namespace": "public/ns"})
    with pytest.raises(NamespaceNotFound):
        again.call("namespaces.remove_retention", {"namespace": "public/ns"})


def test_namespaces_of_auto_created_topics_and_policies_exist(harness):
    admin = _admin(harness)
    harness.publish("team/events/clicks", 1)
    admin.call("namespaces.set_message_ttl", {"namespace": "ops/metrics", "value": 5})
    assert set(admin.call("tenants.get_tenants", {})) >= {"team", "ops"}
    assert admin.call("namespaces.get_namespaces", {"tenant": "team"}) == ["team/events"]
    assert admin.call("namespaces.get_namespaces", {"tenant": "ops"}) == ["ops/metrics"]


def test_update_partitioned_topic_grows_and_copies_durable_subscriptions(harness):
    admin = _admin(harness)
    admin.call("topics.create_partitioned_topic", {"topic": "p", "partitions": 2})
    admin.call("topics.create_subscription", {"topic": "p", "subscription": "s"})
    with pytest.raises(PartitionsNotIncreased, match="can't be less than the current 2"):
        admin.call("topics.update_partitioned_topic", {"topic": "p", "partitions": 1})
    admin.call("topics.update_partitioned_topic", {"topic": "p", "partitions": 4})
    assert admin.call("topics.get_partitioned_topic_metadata", {"topic": "p"}) == {
        "partitions": 4
    }
    new = harness.service.topics["persistent://public/default/p-partition-3"]
    assert list(new.subscriptions) == ["s"]
    with pytest.raises(NotAllowed, match="not a partitioned topic"):
        admin.call("topics.update_partitioned_topic", {"topic": "p-partition-0", "partitions": 2})
    with pytest.raises(TopicNotFound):
        admin.call("topics.update_partitioned_topic", {"topic": "nope", "partitions": 2})
    assert admin.call("topics.get_partitioned_topic_list", {"namespace": "public/default"}) == [
        "persistent://public/default/p"
    ]


def test_last_message_id_skip_all_and_examine(harness):
    admin = _admin(harness)
    harness.service.create_topic("t")
    empty = admin.call("topics.get_last_message_id", {"topic": "t"})
    assert empty["entryId"] == -1 and empty["partitionIndex"] == -1
    with pytest.raises(NotAllowed, match="no messages"):
        admin.call("topics.examine_message", {"topic": "t"})
    admin.call("topics.create_subscription", {"topic": "t", "subscription": "s",
                                              "message_id": "earliest"})
    positions = harness.publish("t", 3, payload=b"m")
    last = admin.call("topics.get_last_message_id", {"topic": "t"})
    assert (last["ledgerId"], last["entryId"]) == positions[-1]
    first = admin.call("topics.examine_message",
                       {"topic": "t", "initial_position": "earliest", "message_position": 1})
    assert first["messageId"] == f"{positions[0][0]}:{positions[0][1]}:-1"
    second_last = admin.call("topics.examine_message", {"topic": "t", "message_position": 2})
    assert second_last["messageId"].startswith(f"{positions[1][0]}:{positions[1][1]}:")
    beyond = admin.call("topics.examine_message", {"topic": "t", "message_position": 99})
    assert beyond["messageId"] == first["messageId"]
    admin.call("topics.skip_all_messages", {"topic": "t", "subscription": "s"})
    stats = admin.call("topics.get_stats", {"topic": "t"})
    assert stats["subscriptions"]["s"]["msgBacklog"] == 0
