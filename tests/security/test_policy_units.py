"""Sans-I/O: the loopback rule, the authenticator, limits, topic quotas and permissions."""

from __future__ import annotations

import pytest

from pulsarlab.broker import BrokerService, BrokerSettings, ManualClock, tokens
from pulsarlab.broker.authorization import Authorizer
from pulsarlab.broker.errors import (
    AuthenticationError,
    AuthorizationError,
    ConsumerBusy,
    InvalidArgument,
    NotAllowed,
    ProducerBusy,
    TooManyConnections,
)
from pulsarlab.broker.limits import (
    check_connections,
    check_consumers,
    check_producers,
)
from pulsarlab.broker.security import Authenticator, check_bind, events_host, is_loopback
from pulsarlab.broker.storage import DurableStorage, MemoryStorage

AUTH = {"authentication_enabled": True}


def settings(**kwargs) -> BrokerSettings:
    return BrokerSettings.from_kwargs(**kwargs)


# -- binding ---------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"])
def test_loopback_addresses(host):
    assert is_loopback(host)
    check_bind(host, settings())


@pytest.mark.parametrize("host", ["0.0.0.0", "*", "10.0.0.5", "::", "eth0", "example.org"])
def test_other_addresses_need_authentication(host):
    assert not is_loopback(host)
    with pytest.raises(InvalidArgument, match=f"refusing to listen on {host}.*authentication"):
        check_bind(host, settings())
    check_bind(host, settings(**AUTH))


def test_the_event_stream_stays_on_loopback_when_authentication_is_on():
    assert events_host("0.0.0.0", settings(**AUTH)) == "127.0.0.1"
    assert events_host("127.0.0.1", settings(**AUTH)) == "127.0.0.1"
    assert events_host("::1", settings(**AUTH)) == "::1"
    assert events_host("127.0.0.1", settings()) == "127.0.0.1"


# -- authentication --------------------------------------------------------------------------


def test_the_authenticator_accepts_its_own_tokens_and_names_each_failure(tmp_path):
    key = tokens.create_secret_key()
    path = tokens.write_secret_file(tmp_path / "secret.key", key)
    auth = Authenticator(settings(token_secret_key=f"file://{path}", **AUTH))
    assert auth.authenticate(tokens.create_token(key, "alice")) == "alice"
    assert auth.authenticate(auth.create_token("bob")) == "bob"
    with pytest.raises(AuthenticationError, match="authentication required"):
        auth.authenticate(None)
    with pytest.raises(AuthenticationError, match="signature does not match"):
        auth.authenticate(tokens.create_token(tokens.create_secret_key(), "alice"))
    with pytest.raises(AuthenticationError, match="must be a string"):
        auth.authenticate(42)
    with pytest.raises(AuthenticationError, match="expired"):
        auth.authenticate(auth.create_token("alice", expires_in_seconds=-1))


def test_without_a_key_the_authenticator_makes_a_random_one():
    a, b = Authenticator(settings(**AUTH)), Authenticator(settings(**AUTH))
    assert a.authenticate(a.create_token("x")) == "x"
    with pytest.raises(AuthenticationError):
        b.authenticate(a.create_token("x"))


def test_a_bad_secret_key_setting_is_a_clear_error():
    with pytest.raises(InvalidArgument, match="token_secret_key: cannot read"):
        Authenticator(settings(token_secret_key="file:///nonexistent/k", **AUTH))


def test_tokens_cannot_be_made_with_authentication_off():
    with pytest.raises(InvalidArgument, match="not enabled"):
        Authenticator(settings()).create_token("x")


# -- settings --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["max_connections", "max_producers_per_connection", "max_consumers_per_connection",
             "max_topics", "max_topics_per_namespace"],
)
def test_negative_limits_are_refused(name):
    with pytest.raises(InvalidArgument, match=f"{name} must be >= 0"):
        settings(**{name: -1})


def test_authorization_needs_authentication():
    with pytest.raises(InvalidArgument, match="authorization_enabled needs authentication"):
        settings(authorization_enabled=True)


# -- per-connection limits -------------------------------------------------------------------


def test_connection_producer_and_consumer_limits():
    s = settings(max_connections=2, max_producers_per_connection=3,
                 max_consumers_per_connection=1)
    check_connections(s, 2)
    with pytest.raises(TooManyConnections, match="max_connections=2"):
        check_connections(s, 3)
    assert TooManyConnections.code == "ConnectError"
    check_producers(s, 2)
    with pytest.raises(ProducerBusy, match="max_producers_per_connection"):
        check_producers(s, 3)
    check_consumers(s, 0)
    with pytest.raises(ConsumerBusy, match="max_consumers_per_connection"):
        check_consumers(s, 1)


def test_zero_means_no_limit():
    s = settings(max_connections=0, max_producers_per_connection=0,
                 max_consumers_per_connection=0)
    check_connections(s, 10**6)
    check_producers(s, 10**6)
    check_consumers(s, 10**6)


# -- topic quotas, in the core ---------------------------------------------------------------


def _service(**kwargs) -> BrokerService:
    return BrokerService(MemoryStorage(), ManualClock(), settings(**kwargs))


def test_max_topics_counts_every_partition_and_refuses_the_next_topic():
    service = _service(max_topics=4)
    service.create_partitioned_topic("p", 3)
    service.get_topic("a")
    with pytest.raises(NotAllowed, match="max_topics is 4"):
        service.get_topic("b")
    with pytest.raises(NotAllowed, match="max_topics"):
        service.create_partitioned_topic("q", 1)
    assert service.get_partitioned_topic_metadata("q") == 0  # nothing half-created
    service.get_topic("a")  # existing topics stay usable
    service.delete_topic("a")
    service.get_topic("b")


def test_max_topics_per_namespace_only_counts_that_namespace():
    service = _service(max_topics_per_namespace=2)
    service.get_topic("t1/ns/a")
    service.get_topic("t1/ns/b")
    with pytest.raises(NotAllowed, match="namespace t1/ns has 2 topics"):
        service.get_topic("t1/ns/c")
    with pytest.raises(NotAllowed, match="max_topics_per_namespace is 2"):
        service.create_partitioned_topic("t1/ns/p", 1)
    service.get_topic("t1/other/c")
    service.create_partitioned_topic("t2/ns/p", 2)


# -- permissions -----------------------------------------------------------------------------


def _authorizer(metadata=None, **kwargs) -> Authorizer:
    s = settings(authorization_enabled=True, super_user_roles="root, ops", **AUTH, **kwargs)
    return Authorizer(s, metadata if metadata is not None else MemoryStorage().metadata)


def test_grant_get_and_revoke_permissions():
    authz = _authorizer()
    assert authz.get_permissions("public/default") == {}
    authz.grant_permission("public/default", "alice", ["produce", "consume", "produce"])
    authz.grant_permission("public/default", "bob", ["consume"])
    assert authz.get_permissions("public/default") == {
        "alice": ["consume", "produce"], "bob": ["consume"],
    }
    authz.grant_permission("public/default", "alice", ["produce"])  # replaces
    assert authz.get_permissions("public/default")["alice"] == ["produce"]
    authz.revoke_permission("public/default", "alice")
    assert authz.get_permissions("public/default") == {"bob": ["consume"]}
    assert authz.get_permissions("other/ns") == {}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("public", "alice", ["produce"]), "tenant/namespace"),
        (("public/default", "", ["produce"]), "role"),
        (("public/default", "alice", "produce"), "actions must be a list"),
        (("public/default", "alice", ["produce", "fly"]), "unknown action"),
    ],
)
def test_bad_grants_are_clear_errors(args, message):
    with pytest.raises(InvalidArgument, match=message):
        _authorizer().grant_permission(*args)


def test_each_action_is_checked_per_namespace():
    authz = _authorizer()
    authz.grant_permission("public/default", "producer", ["produce"])
    authz.grant_permission("public/default", "consumer", ["consume"])
    authz.check_topic("producer", "t", "produce")
    authz.check_topic("producer", "t", "lookup")
    with pytest.raises(AuthorizationError, match="'producer' is not authorized to consume"):
        authz.check_topic("producer", "t", "consume")
    authz.check_topic("consumer", "persistent://public/default/t", "consume")
    authz.check_topic("consumer", "t", "lookup")
    with pytest.raises(AuthorizationError, match="to produce in namespace public/default"):
        authz.check_topic("consumer", "t", "produce")
    with pytest.raises(AuthorizationError):
        authz.check_topic("producer", "other/ns/t", "produce")
    for action in ("produce", "consume", "lookup"):
        with pytest.raises(AuthorizationError):
            authz.check_topic("stranger", "t", action)
        with pytest.raises(AuthorizationError):
            authz.check_topic(None, "t", action)
        authz.check_topic("root", "any/where/t", action)  # superusers may do everything


def test_admin_operations_need_a_superuser_except_lookups():
    authz = _authorizer()
    authz.grant_permission("public/default", "consumer", ["consume"])
    authz.grant_permission("public/default", "producer", ["produce"])
    authz.check_admin("ops", "topics.delete", {"topic": "t"})
    authz.check_admin("ops", "namespaces.grant_permission", {})
    for role in ("consumer", "producer", "stranger", None):
        for op in ("topics.delete", "topics.create_partitioned_topic", "topics.reset_cursor",
                   "namespaces.grant_permission", "namespaces.get_permissions",
                   "namespaces.set_retention", "topics.peek_messages"):
            with pytest.raises(AuthorizationError, match="not a superuser"):
                authz.check_admin(role, op, {"topic": "t", "namespace": "public/default"})
    authz.check_admin("producer", "topics.get_stats", {"topic": "t"})
    authz.check_admin("consumer", "topics.get_partitioned_topic_metadata", {"topic": "t"})
    authz.check_admin("consumer", "topics.get_list", {"namespace": "public/default"})
    with pytest.raises(AuthorizationError, match="consume"):
        authz.check_admin("producer", "topics.get_list", {"namespace": "public/default"})
    with pytest.raises(AuthorizationError):
        authz.check_admin("stranger", "topics.get_stats", {"topic": "t"})


def test_everything_is_allowed_when_authorization_is_off():
    authz = Authorizer(settings(), MemoryStorage().metadata)
    authz.check_topic(None, "t", "produce")
    authz.check_admin(None, "topics.delete", {})


def test_permissions_are_persisted_with_the_namespace_policies(tmp_path):
    storage = DurableStorage(tmp_path / "data")
    service = BrokerService(storage, ManualClock(), settings())
    service.set_namespace_policy("public/default", "message_ttl_in_seconds", 60)
    _authorizer(storage.metadata).grant_permission("public/default", "alice", ["consume"])
    service.set_namespace_policy("public/default", "deduplication_enabled", True)
    service.close()
    reopened = DurableStorage(tmp_path / "data")
    try:
        policies = reopened.metadata.get_policies("public/default")
        assert policies["auth_policies"]["namespace_auth"] == {"alice": ["consume"]}
        assert policies["message_ttl_in_seconds"] == 60
        assert policies["deduplication_enabled"] is True
        assert _authorizer(reopened.metadata).allowed("alice", "public/default", "consume")
    finally:
        reopened.close()
