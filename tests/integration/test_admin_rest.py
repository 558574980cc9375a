"""``pulsarlab.Admin`` over the broker's ``/admin/v2`` REST API: every method against a
running broker, what it can be constructed from, credentials (token, basic, https with a CA
file) and Pulsar's error answers mapped onto the broker errors callers catch."""

from __future__ import annotations

import base64
import http.server
import json
import threading
from collections.abc import Iterator

import pytest

from pulsarlab import Admin, Broker, Client
from pulsarlab.broker import errors
from pulsarlab.broker.admin_http import error_for
from pulsarlab.broker.client import AuthenticationBasic, AuthenticationToken, MessageId

from .client_support import receive_n, unique


@pytest.fixture
def admin(broker: Broker) -> Iterator[Admin]:
    with Admin(broker.web_url, timeout_seconds=20) as a:
        yield a


# -- construction ---------------------------------------------------------------------------


def test_constructed_from_a_web_url_a_broker_or_its_service_url(broker: Broker) -> None:
    for target in (broker.web_url, broker, broker.service_url,
                   broker.service_url.replace("zmq://", "tcp://")):
        with Admin(target) as a:
            assert a.web_url == broker.web_url
            assert a.clusters.get_clusters() == ["standalone"]


def test_an_unknown_zmq_url_says_what_to_pass() -> None:
    with pytest.raises(ValueError, match=r"web service URL \(http://host:port"):
        Admin("zmq://127.0.0.1:1")
    with pytest.raises(ValueError, match="http://host:port or https://host:port"):
        Admin("pulsar://127.0.0.1:6650")
    with pytest.raises(TypeError, match="web service URL"):
        Admin(6650)


def test_a_stopped_broker_is_forgotten() -> None:
    b = Broker(storage="memory").start()
    url = b.service_url
    b.stop()
    with pytest.raises(ValueError, match="no broker started on this machine"):
        Admin(url)


def test_nothing_listening_is_one_connection_error() -> None:
    with Broker(storage="memory") as b:
        url = b.web_url
    with Admin(url, timeout_seconds=5) as a, pytest.raises(ConnectionError,
                                                           match="no admin REST API answered"):
        a.clusters.get_clusters()


# -- every method ---------------------------------------------------------------------------


def test_topics_lifecycle_and_lists(admin: Admin) -> None:
    ns = f"public/{unique('ns')}"
    admin.namespaces.create_namespace(ns)
    plain, parted = f"persistent://{ns}/plain", f"persistent://{ns}/parted"
    admin.topics.create_non_partitioned_topic(plain)
    admin.topics.create_partitioned_topic(parted, 2)
    metadata = admin.topics.get_partitioned_topic_metadata  # Pulsar's JSON for it
    assert metadata(parted) == {"partitions": 2, "deleted": False}
    assert metadata(plain) == {"partitions": 0, "deleted": False}
    admin.topics.update_partitioned_topic(parted, 3)
    assert admin.topics.get_partitioned_topic_metadata(parted)["partitions"] == 3
    with pytest.raises(errors.PartitionsNotIncreased):
        admin.topics.update_partitioned_topic(parted, 1)
    # a partitioned topic by its parent name, as before; get_topics lists partitions
    assert admin.topics.get_list(ns) == [parted, plain]
    assert admin.topics.get_partitioned_topic_list(ns) == [parted]
    assert admin.namespaces.get_topics(ns) == sorted(
        [plain, *(f"{parted}-partition-{i}" for i in range(3))])
    assert admin.topics.get_list("public/never-made") == []
    admin.topics.delete(parted)  # a partitioned topic with its partitions
    admin.topics.delete(plain)
    assert admin.topics.get_list(ns) == []
    with pytest.raises(errors.TopicNotFound):
        admin.topics.delete(plain)
    admin.namespaces.delete_namespace(ns)


def test_subscriptions_cursors_and_messages(admin: Admin, client) -> None:
    topic = f"persistent://public/default/{unique('cursor')}"
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode(), properties={"i": str(i)}, partition_key=f"k{i}")
           for i in range(5)]
    admin.topics.create_subscription(topic, "from-start", "earliest")
    admin.topics.create_subscription(topic, "at-end")  # latest by default
    admin.topics.create_subscription(topic, "at-id", ids[2])
    admin.topics.create_subscription(topic, "at-tuple", (ids[3].ledger_id(), ids[3].entry_id()))
    assert admin.topics.get_subscriptions(topic) == ["at-end", "at-id", "at-tuple", "from-start"]
    with pytest.raises(errors.SubscriptionAlreadyExists):
        admin.topics.create_subscription(topic, "at-end")

    def backlog(sub: str) -> int:
        return admin.topics.get_stats(topic)["subscriptions"][sub]["msgBacklog"]

    assert [backlog(s) for s in ("from-start", "at-end", "at-id", "at-tuple")] == [5, 0, 3, 2]
    peeked = admin.topics.peek_messages(topic, "from-start", 2)
    assert [p["payload"] for p in peeked] == [b"m0", b"m1"]
    first = peeked[0]
    assert first["messageId"] == f"{ids[0].ledger_id()}:{ids[0].entry_id()}:-1"
    assert first["topic"] == topic
    meta = first["metadata"]
    assert meta["properties"] == {"i": "0"} and meta["partition_key"] == "k0"
    assert meta["sequence_id"] == 0 and meta["producer_name"] == producer.producer_name()
    assert isinstance(meta["publish_time"], int) and meta["publish_time"] > 0
    assert len(admin.topics.peek_messages(topic, "from-start", 50)) == 5  # fewer than asked
    assert admin.topics.peek_messages(topic, "at-end", 3) == []
    latest = admin.topics.examine_message(topic, "latest", 1)
    assert latest["payload"] == b"m4" and latest["metadata"]["properties"] == {"i": "4"}
    assert admin.topics.examine_message(topic, "earliest", 2)["payload"] == b"m1"

    admin.topics.skip_messages(topic, "from-start", 2)
    assert backlog("from-start") == 3
    admin.topics.skip_all_messages(topic, "from-start")
    assert backlog("from-start") == 0
    admin.topics.reset_cursor(topic, "from-start", "earliest")
    assert backlog("from-start") == 5
    admin.topics.reset_cursor(topic, "from-start", ids[3])
    assert backlog("from-start") == 2
    admin.topics.reset_cursor(topic, "from-start", "latest")
    assert backlog("from-start") == 0
    admin.topics.reset_cursor(topic, "from-start", timestamp=0)
    assert backlog("from-start") == 5
    admin.topics.expire_messages(topic, "from-start", 0)
    assert backlog("from-start") == 0
    last = admin.topics.get_last_message_id(topic)
    assert (last["ledgerId"], last["entryId"]) == (ids[4].ledger_id(), ids[4].entry_id())
    admin.topics.delete_subscription(topic, "at-id")
    assert "at-id" not in admin.topics.get_subscriptions(topic)
    with pytest.raises(errors.SubscriptionNotFound):
        admin.topics.delete_subscription(topic, "at-id")
    with pytest.raises(errors.SubscriptionNotFound):
        admin.topics.skip_messages(topic, "nobody", 1)


def test_partitioned_peek_and_stats(admin: Admin, client) -> None:
    topic = f"persistent://public/default/{unique('parts')}"
    admin.topics.create_partitioned_topic(topic, 2)
    admin.topics.create_subscription(topic, "s", "earliest")
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(4):
        producer.send(f"m{i}".encode(), partition_key=f"key-{i}")
    peeked = admin.topics.peek_messages(topic, "s", 3)
    assert len(peeked) == 3
    assert {p["topic"] for p in peeked} <= {f"{topic}-partition-0", f"{topic}-partition-1"}
    stats = admin.topics.get_partitioned_stats(topic)
    assert stats["metadata"]["partitions"] == 2 and stats["msgInCounter"] == 4
    assert set(stats["partitions"]) == {f"{topic}-partition-{i}" for i in range(2)}
    # without perPartition Pulsar leaves the partitions map empty
    assert admin.topics.get_partitioned_stats(topic, per_partition=False)["partitions"] == {}
    assert admin.topics.get_subscriptions(topic) == ["s"]
    admin.topics.create_subscription(topic, "later")
    assert admin.topics.get_subscriptions(topic) == ["later", "s"]
    ends = admin.topics.terminate_partitioned_topic(topic)
    assert set(ends) == {"0", "1"}


def test_stats_unload_terminate_compact(admin: Admin, client) -> None:
    topic = f"persistent://public/default/{unique('life')}"
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic, batching_enabled=False)
    last = [producer.send(f"m{i}".encode(), partition_key="k") for i in range(3)][-1]
    receive_n(consumer, 3)
    stats = admin.topics.get_stats(topic)
    assert stats["msgInCounter"] == 3 and "s" in stats["subscriptions"]
    internal = admin.topics.get_internal_stats(topic)
    assert internal["numberOfEntries"] == 3 and "s" in internal["cursors"]
    admin.topics.unload(topic)
    assert admin.topics.compaction_status(topic)["status"] == "NOT_RUN"
    admin.topics.compact(topic)
    assert admin.topics.compaction_status(topic)["status"] in ("RUNNING", "SUCCESS")
    end = admin.topics.terminate_topic(topic)
    assert (end["ledgerId"], end["entryId"]) == (last.ledger_id(), last.entry_id())


def test_namespaces_policies_and_permissions(admin: Admin) -> None:
    ns = f"public/{unique('pol')}"
    admin.namespaces.create_namespace(ns)
    assert ns in admin.namespaces.get_namespaces("public")
    with pytest.raises(errors.NamespaceAlreadyExists):
        admin.namespaces.create_namespace(ns)
    n = admin.namespaces
    n.set_retention(ns, 60, 100)
    n.set_message_ttl(ns, 120)
    n.set_deduplication_status(ns, True)
    n.set_compaction_threshold(ns, 1 << 20)
    n.set_encryption_required(ns, True)
    n.set_backlog_quota(ns, 1 << 30, "producer_exception")
    policies = n.get_policies(ns)  # Pulsar's Policies JSON
    assert policies["retention_policies"] == {"retentionTimeInMinutes": 60,
                                              "retentionSizeInMB": 100}
    assert policies["message_ttl_in_seconds"] == 120
    assert policies["deduplicationEnabled"] is True
    assert policies["compaction_threshold"] == 1 << 20
    assert policies["encryption_required"] is True
    quota = policies["backlog_quota_map"]["destination_storage"]
    assert (quota["limitSize"], quota["policy"]) == (1 << 30, "producer_exception")
    for remove in (n.remove_retention, n.remove_message_ttl, n.remove_deduplication_status,
                   n.remove_compaction_threshold, n.remove_backlog_quota):
        remove(ns)
    policies = n.get_policies(ns)
    for key in ("retention_policies", "message_ttl_in_seconds", "deduplicationEnabled",
                "compaction_threshold"):
        assert key not in policies, key
    assert policies["backlog_quota_map"] == {}
    n.grant_permission(ns, "alice", {"produce", "consume"})
    n.grant_permission(ns, "bob", ["consume"])
    assert n.get_permissions(ns) == {"alice": ["consume", "produce"], "bob": ["consume"]}
    n.revoke_permission(ns, "alice")
    assert n.get_permissions(ns) == {"bob": ["consume"]}
    with pytest.raises(errors.NamespaceNotFound):
        n.set_message_ttl("public/not-there", 5)
    with pytest.raises(errors.InvalidArgument, match="tenant/namespace"):
        n.get_policies("no-slash")
    admin.topics.create_non_partitioned_topic(f"persistent://{ns}/t")
    with pytest.raises(errors.NamespaceNotEmpty):
        n.delete_namespace(ns)
    n.delete_namespace(ns, force=True)
    assert ns not in n.get_namespaces("public")


def test_tenants_clusters_and_schemas(admin: Admin) -> None:
    tenant = unique("tenant")
    admin.tenants.create_tenant(tenant, {"adminRoles": ["ops"], "allowedClusters": ["standalone"]})
    assert tenant in admin.tenants.get_tenants()
    assert admin.tenants.get_tenant_info(tenant)["adminRoles"] == ["ops"]
    admin.tenants.update_tenant(tenant, {"adminRoles": ["ops", "dev"],
                                         "allowedClusters": ["standalone"]})
    assert admin.tenants.get_tenant_info(tenant)["adminRoles"] == ["dev", "ops"]
    with pytest.raises(errors.TenantAlreadyExists):
        admin.tenants.create_tenant(tenant)
    admin.namespaces.create_namespace(f"{tenant}/ns")
    with pytest.raises(errors.TenantNotEmpty):
        admin.tenants.delete_tenant(tenant)
    admin.tenants.delete_tenant(tenant, force=True)
    with pytest.raises(errors.TenantNotFound):
        admin.tenants.get_tenant_info(tenant)
    assert admin.clusters.get_clusters() == ["standalone"]
    assert "serviceUrl" in admin.clusters.get_cluster("standalone")
    with pytest.raises(errors.ClusterNotFound):
        admin.clusters.get_cluster("elsewhere")

    name = unique("schema")
    topic = f"persistent://public/default/{name}"
    with pytest.raises(errors.TopicNotFound, match="Schema not found"):
        admin.schemas.get_schema(topic)
    admin.request("POST", f"schemas/public/default/{name}/schema",
                  {"type": "STRING", "schema": "", "properties": {}})
    schema = admin.schemas.get_schema(topic)
    assert schema["type"] == "STRING" and schema["version"] == 0
    assert admin.schemas.get_schema(topic, 0)["type"] == "STRING"


# -- errors ---------------------------------------------------------------------------------


def test_error_answers_become_the_broker_errors(admin: Admin) -> None:
    with pytest.raises(errors.TopicNotFound, match="not found") as caught:
        admin.topics.get_stats(f"persistent://public/default/{unique('none')}")
    assert caught.value.status == 404
    with pytest.raises(errors.InvalidTopicName):
        admin.topics.get_stats("a/b/c/d")
    with pytest.raises(errors.NotAllowed) as caught:  # Pulsar's 405, no broker class named
        admin.topics.terminate_topic("non-persistent://public/default/np")
    assert caught.value.status == 405


@pytest.mark.parametrize(("status", "reason", "expected"), [
    (404, "Subscription not found", errors.SubscriptionNotFound),
    (404, "Namespace does not exist", errors.NamespaceNotFound),
    (404, "Tenant does not exist", errors.TenantNotFound),
    (404, "Topic not found", errors.TopicNotFound),
    (409, "Subscription already exists for topic", errors.SubscriptionAlreadyExists),
    (409, "This topic already exists", errors.TopicAlreadyExists),
    (400, "Invalid message id", errors.InvalidArgument),
    (401, "Authentication required", errors.AuthenticationError),
    (403, "Don't have permission", errors.AuthorizationError),
    (412, "Namespace is not empty", errors.NotAllowed),
    (500, "Internal error", errors.PulsarLabError),
])
def test_status_and_reason_of_any_pulsar_broker(status, reason, expected) -> None:
    """A broker that names no class (Pulsar's) is read by its status and reason."""
    exc = error_for(status, reason)
    assert type(exc) is expected or issubclass(type(exc), expected)
    assert str(exc) == reason and exc.status == status


def test_a_named_class_wins_and_auth_errors_are_the_clients_too() -> None:
    from pulsarlab.broker.client import exceptions as client_errors

    assert type(error_for(404, "no", "SubscriptionNotFound")) is errors.SubscriptionNotFound
    assert isinstance(error_for(412, "x", "InvalidArgument"), errors.InvalidArgument)
    refused = error_for(401, "bad token")
    assert isinstance(refused, errors.AuthenticationError)
    assert isinstance(refused, client_errors.AuthenticationError)
    assert isinstance(error_for(403, "no", "AuthorizationError"),
                      client_errors.AuthorizationError)


# -- credentials ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def secured() -> Iterator[Broker]:
    from passlib.hash import apr_md5_crypt

    users = f"ops:{apr_md5_crypt.hash('s3cret')}\n"
    with Broker(storage="memory", authentication_enabled=True, authorization_enabled=True,
                authentication_providers="token,basic", super_user_roles="root,ops",
                basic_auth_conf="data:;base64," + base64.b64encode(users.encode()).decode()
                ) as b:
        yield b


def test_token_is_sent_as_a_bearer_header(secured: Broker) -> None:
    with Admin(secured.web_url, authentication=AuthenticationToken(secured.create_token("root"))
               ) as a:
        assert a.clusters.get_clusters() == ["standalone"]
    with Admin(secured.web_url, token=secured.create_token("root")) as a:
        assert a.tenants.get_tenants()
    with Admin(secured.web_url, authentication=AuthenticationToken(
            lambda: secured.create_token("root"))) as a:  # a supplier, read per request
        assert a.clusters.get_clusters() == ["standalone"]


def test_refusals_are_the_auth_errors(secured: Broker) -> None:
    with Admin(secured.web_url) as anonymous, pytest.raises(errors.AuthenticationError):
        anonymous.clusters.get_clusters()
    with Admin(secured.web_url, token="x.y.z") as wrong, pytest.raises(
            errors.AuthenticationError):
        wrong.clusters.get_clusters()
    with Admin(secured.web_url, token=secured.create_token("nobody")) as weak, pytest.raises(
            errors.AuthorizationError):
        weak.topics.get_list()


def test_basic_auth(secured: Broker) -> None:
    with Admin(secured.web_url, authentication=AuthenticationBasic("ops", "s3cret")) as a:
        assert a.clusters.get_clusters() == ["standalone"]
    user_url = secured.web_url.replace("http://", "http://ops:s3cret@")
    with Admin(user_url) as a:
        assert a.clusters.get_clusters() == ["standalone"]
    with Admin(secured.web_url, authentication=AuthenticationBasic("ops", "wrong")) as a, \
            pytest.raises(errors.AuthenticationError):
        a.clusters.get_clusters()


@pytest.fixture(scope="module")
def https_broker(tls_pki) -> Iterator[Broker]:
    with Broker(storage="memory", web_service_port_tls=0,
                tls_certificate_file_path=tls_pki.broker_cert,
                tls_key_file_path=tls_pki.broker_key,
                tls_trust_certs_file_path=tls_pki.ca) as b:
        yield b


def test_https_with_the_trusted_ca(https_broker: Broker, tls_pki) -> None:
    url = https_broker.web_url_tls
    assert url is not None and url.startswith("https://")
    with Admin(url, tls_trust_certs_file_path=tls_pki.ca) as a:
        assert a.clusters.get_clusters() == ["standalone"]
        a.topics.create_non_partitioned_topic(unique("over-tls"))
    with Admin(url, tls_trust_certs_file_path=tls_pki.other_ca) as untrusted, pytest.raises(
            ConnectionError, match="TLS"):
        untrusted.clusters.get_clusters()
    with Admin(url, tls_allow_insecure_connection=True) as insecure:
        assert insecure.clusters.get_clusters() == ["standalone"]


# -- the connection -------------------------------------------------------------------------


class _Closing(http.server.BaseHTTPRequestHandler):
    """Answers, then closes the kept-alive connection as an idle timeout would."""

    protocol_version = "HTTP/1.1"
    seen: list[str] = []  # noqa: RUF012

    def do_GET(self) -> None:
        _Closing.seen.append(self.path)
        body = json.dumps(["standalone"]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        self.close_connection = True  # no Connection: close header: the client learns late

    def log_message(self, *args: object) -> None:
        return None


def test_a_connection_closed_while_idle_is_replaced() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Closing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with Admin(f"http://127.0.0.1:{server.server_address[1]}") as a:
            for _ in range(3):
                assert a.clusters.get_clusters() == ["standalone"]
        assert _Closing.seen == ["/admin/v2/clusters"] * 3
    finally:
        server.shutdown()
        server.server_close()


def test_one_admin_many_threads(admin: Admin) -> None:
    topic = unique("threads")
    admin.topics.create_non_partitioned_topic(topic)
    results: list[int] = []

    def poll() -> None:
        for _ in range(20):
            results.append(admin.topics.get_stats(topic)["msgInCounter"])

    threads = [threading.Thread(target=poll) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [0] * 80


def test_message_id_of_the_official_shape(admin: Admin, broker: Broker) -> None:
    topic = unique("ids")
    with Client(broker.service_url) as c:
        sent = c.create_producer(topic).send(b"x")
    admin.topics.create_subscription(topic, "at", MessageId.earliest)
    assert admin.topics.peek_messages(topic, "at")[0]["messageId"].startswith(
        f"{sent.ledger_id()}:{sent.entry_id()}:")


def test_a_broker_in_another_process_is_found_by_its_service_url(tmp_path) -> None:
    """What Spark's Python workers and a kernel whose broker runs beside it rely on."""
    from faults.support import BrokerProcess

    other = BrokerProcess(tmp_path / "data").start()
    try:
        with Admin(other.service_url) as a:
            assert a.web_url == other.web_url
            assert a.clusters.get_clusters() == ["standalone"]
    finally:
        other.stop()
    with pytest.raises(ValueError, match="no broker started on this machine"):  # gone
        Admin(other.service_url)
