"""REST: /admin/v2/clusters, /admin/v2/tenants and /admin/v2/namespaces with policies."""

from __future__ import annotations

from pulsarlab import Admin

NS = "/admin/v2/namespaces"


def test_the_standalone_cluster(rest, broker):
    assert rest.get("/admin/v2/clusters").json == ["standalone"]
    data = rest.get("/admin/v2/clusters/standalone").json
    assert (data["serviceUrl"], data["brokerServiceUrl"]) == (broker.web_url, broker.pulsar_url)
    # ClusterDataImpl's defaults for a cluster without TLS, as Pulsar's answer has them (the
    # 3.3 line: no brokerClientSslFactoryPlugin, a 4.0 field)
    assert (data["brokerClientTlsEnabled"], data["tlsAllowInsecureConnection"]) == (False, False)
    assert data["brokerClientTlsTrustStoreType"] == "JKS"
    assert "brokerClientSslFactoryPlugin" not in data
    missing = rest.get("/admin/v2/clusters/elsewhere")
    assert missing.status == 404 and "'elsewhere' does not exist" in missing.reason


def test_tenants_create_get_update_delete(rest):
    assert {"public", "pulsar"} <= set(rest.get("/admin/v2/tenants").json)
    created = rest.put("/admin/v2/tenants/acme",
                       {"adminRoles": ["ops"], "allowedClusters": ["standalone"]})
    assert created.status == 204 and created.body == b""
    assert rest.put("/admin/v2/tenants/acme", {}).status == 409
    assert rest.get("/admin/v2/tenants/acme").json == {
        "adminRoles": ["ops"], "allowedClusters": ["standalone"],
    }
    assert rest.post("/admin/v2/tenants/acme", {"adminRoles": ["x"]}).status == 204
    assert rest.get("/admin/v2/tenants/acme").json["adminRoles"] == ["x"]
    bad_cluster = rest.put("/admin/v2/tenants/other", {"allowedClusters": ["nowhere"]})
    assert bad_cluster.status == 412 and "do not exist" in bad_cluster.reason
    assert rest.put(f"{NS}/acme/orders").status == 204
    busy = rest.delete("/admin/v2/tenants/acme")
    assert busy.status == 409 and "acme/orders" in busy.reason
    assert rest.delete("/admin/v2/tenants/acme?force=true").status == 204
    assert rest.get("/admin/v2/tenants/acme").status == 404
    assert rest.post("/admin/v2/tenants/acme", {}).status == 404
    assert rest.delete("/admin/v2/tenants/acme").status == 404


def test_namespaces_create_list_get_delete(rest):
    assert rest.put("/admin/v2/tenants/shop").status == 204
    assert rest.put(f"{NS}/shop/ns1",
                    {"message_ttl_in_seconds": 60, "deduplicationEnabled": True}).status == 204
    assert rest.put(f"{NS}/shop/ns1").status == 409
    assert rest.put(f"{NS}/ghost/ns1").status == 404
    assert rest.get(f"{NS}/shop").json == ["shop/ns1"]
    assert rest.get(f"{NS}/ghost").status == 404
    policies = rest.get(f"{NS}/shop/ns1").json
    assert policies["message_ttl_in_seconds"] == 60 and policies["deduplicationEnabled"] is True
    assert policies["replication_clusters"] == ["standalone"]
    assert set(policies["auth_policies"]) == {
        "namespace_auth", "destination_auth", "subscription_auth_roles",
    }
    assert rest.get(f"{NS}/shop/missing").status == 404
    assert rest.put("/admin/v2/persistent/shop/ns1/t").status == 204
    assert rest.get(f"{NS}/shop/ns1/topics").json == ["persistent://shop/ns1/t"]
    busy = rest.delete(f"{NS}/shop/ns1")
    assert busy.status == 409 and "persistent://shop/ns1/t" in busy.reason
    assert rest.delete(f"{NS}/shop/ns1?force=true").status == 204
    assert rest.get("/admin/v2/persistent/shop/ns1/t/stats").status == 404
    assert rest.delete(f"{NS}/shop/ns1").status == 404
    assert rest.delete(f"{NS}/shop/ns1?force=maybe").status == 400


def test_retention_ttl_and_deduplication(rest, broker):
    base = f"{NS}/public/default"
    for resource in ("retention", "messageTTL", "deduplication"):
        unset = rest.get(f"{base}/{resource}")  # not set: Pulsar answers 200, empty body
        assert (unset.status, unset.body) == (200, b"")
    retention = {"retentionTimeInMinutes": 60, "retentionSizeInMB": 10}
    assert rest.post(f"{base}/retention", retention).status == 204
    assert rest.get(f"{base}/retention").json == retention
    assert rest.post(f"{base}/messageTTL", 120).status == 204
    assert rest.get(f"{base}/messageTTL").json == 120
    assert rest.post(f"{base}/deduplication", True).status == 204
    assert rest.get(f"{base}/deduplication").json is True
    with Admin(broker.web_url) as admin:  # the same policies as pulsarlab.Admin sees
        stored = admin.namespaces.get_policies("public/default")
    assert stored["message_ttl_in_seconds"] == 120 and stored["retention_policies"] == retention
    bad = rest.post(f"{base}/messageTTL", -5)
    assert bad.status == 412 and "message TTL" in bad.reason
    assert rest.call("POST", f"{base}/retention", raw=b"{nope").status == 400
    assert rest.post(f"{NS}/public/missing/messageTTL", 5).status == 404
    for resource in ("retention", "messageTTL", "deduplication"):
        assert rest.delete(f"{base}/{resource}").status == 204
        removed = rest.get(f"{base}/{resource}")
        assert (removed.status, removed.body) == (200, b"")


def test_backlog_quota(rest):
    base = f"{NS}/public/default"
    assert rest.get(f"{base}/backlogQuotaMap").json == {}
    quota = {"limitSize": 1024, "limitTime": -1, "policy": "producer_exception"}
    assert rest.post(f"{base}/backlogQuota?backlogQuotaType=destination_storage",
                     quota).status == 204
    got = rest.get(f"{base}/backlogQuotaMap").json["destination_storage"]
    assert (got["limitSize"], got["policy"]) == (1024, "producer_exception")
    assert rest.post(f"{base}/backlogQuota?backlogQuotaType=message_age", quota).status == 412
    bad = rest.post(f"{base}/backlogQuota", {"limitSize": 1, "policy": "drop_everything"})
    assert bad.status == 412 and "policy must be one of" in bad.reason
    assert rest.delete(f"{base}/backlogQuota").status == 204
    assert rest.get(f"{base}/backlogQuotaMap").json == {}


def test_permissions_grant_get_revoke(rest):
    base = f"{NS}/public/default/permissions"
    assert rest.get(base).json == {}
    assert rest.post(f"{base}/alice", ["produce", "consume"]).status == 204
    assert rest.post(f"{base}/bob", ["consume"]).status == 204
    assert rest.get(base).json == {"alice": ["consume", "produce"], "bob": ["consume"]}
    unknown = rest.post(f"{base}/carol", ["produce", "functions"])
    assert unknown.status == 412 and "functions" in unknown.reason
    assert rest.post(f"{base}/carol", "produce").status == 400
    assert rest.delete(f"{base}/alice").status == 204
    assert rest.get(base).json == {"bob": ["consume"]}
    assert rest.get(f"{NS}/public/missing/permissions").status == 404


def test_deleting_partitions_of_a_plain_topic_is_a_conflict(rest):
    """Pulsar answers 409 for delete-partitioned-topic on a non-partitioned topic, 404 when
    there is no topic of that name at all."""
    plain = "/admin/v2/persistent/public/default/plain-not-parts"
    assert rest.put(plain).status == 204
    assert rest.delete(f"{plain}/partitions").status == 409
    assert rest.delete("/admin/v2/persistent/public/default/no-such/partitions").status == 404


def test_lookup_in_a_missing_namespace_is_404(rest):
    assert rest.get("/lookup/v2/topic/persistent/public/no-such-ns/t").status == 404
    assert rest.get("/lookup/v2/topic/persistent/public/default/t").status == 200


def test_topic_permissions_add_to_the_namespace_grants(rest):
    """``pulsar-admin topics grant-permission / permissions / revoke-permission``: the
    topic's own grants live in ``auth_policies.destination_auth``; GET merges the
    namespace's (PersistentTopicsBase.internalGetPermissionsOnTopic)."""
    assert rest.put(f"{NS}/public/tperm").status == 204
    topic = "/admin/v2/persistent/public/tperm/orders"
    assert rest.post(f"{NS}/public/tperm/permissions/ops", ["produce"]).status == 204
    assert rest.post(f"{topic}/permissions/app", ["consume"]).status == 204
    assert rest.post(f"{topic}/permissions/ops", ["consume"]).status == 204
    assert rest.get(f"{topic}/permissions").json == {"app": ["consume"],
                                                      "ops": ["consume", "produce"]}
    auth = rest.get(f"{NS}/public/tperm").json["auth_policies"]
    assert auth["destination_auth"] == {"persistent://public/tperm/orders": {
        "app": ["consume"], "ops": ["consume"]}}
    assert auth["namespace_auth"] == {"ops": ["produce"]}
    # a partition answers with its partitioned topic's grants
    assert rest.get(f"{topic}-partition-1/permissions").json["app"] == ["consume"]
    assert rest.delete(f"{topic}/permissions/app").status == 204
    assert rest.get(f"{topic}/permissions").json == {"ops": ["consume", "produce"]}
    assert rest.post(f"{topic}/permissions/x", ["sing"]).status == 412
    assert rest.post(f"{topic}/permissions/x", "consume").status == 400
    missing = "/admin/v2/persistent/public/nope-ns/t/permissions"
    assert rest.get(missing).status == 404
    assert rest.post(f"{missing}/app", ["consume"]).status == 404


def test_policies_say_schemas_may_auto_update(rest):
    """Pulsar sets ``is_allow_auto_update_schema`` at creation (allowAutoUpdateSchemaEnabled,
    true by default); ``pulsar-admin namespaces policies`` prints it."""
    assert rest.put(f"{NS}/public/autoschema").status == 204
    assert rest.get(f"{NS}/public/autoschema").json["is_allow_auto_update_schema"] is True


def test_unknown_paths_and_methods_answer_with_a_reason(rest):
    missing = rest.get("/admin/v2/bookies")
    assert missing.status == 404 and "/admin/v2/bookies" in missing.reason
    wrong = rest.post("/admin/v2/clusters")
    assert wrong.status == 405 and wrong.json["reason"]


def test_the_zeromq_admin_has_the_same_operations(rest, broker):
    assert rest.put("/admin/v2/tenants/both").status == 204
    with Admin(broker.web_url) as admin:
        assert admin.clusters.get_clusters() == ["standalone"]
        assert admin.clusters.get_cluster("standalone")["serviceUrl"] == broker.web_url
        assert "both" in admin.tenants.get_tenants()
        admin.tenants.update_tenant("both", {"adminRoles": ["r"]})
        admin.namespaces.create_namespace("both/ns")
        assert rest.get(f"{NS}/both").json == ["both/ns"]
        assert admin.namespaces.get_namespaces("both") == ["both/ns"]
        assert admin.namespaces.get_topics("both/ns") == []
        admin.namespaces.set_message_ttl("both/ns", 9)
        admin.namespaces.remove_message_ttl("both/ns")
        assert rest.get(f"{NS}/both/ns/messageTTL").body == b""
        admin.namespaces.delete_namespace("both/ns")
        admin.tenants.delete_tenant("both")
        assert rest.get("/admin/v2/tenants/both").status == 404
