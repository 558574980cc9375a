"""Namespace permissions on a real broker: produce, consume, lookup and admin, per role."""

from __future__ import annotations

import re

import pytest

import pulsarlab
from pulsarlab import Admin, AuthenticationToken, Broker, Client
from pulsarlab.broker import errors

NS = "acme/orders"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("authz-data")
    with Broker(str(data), authentication_enabled=True, authorization_enabled=True,
                super_user_roles="root") as b:
        with Admin(b.web_url, authentication=AuthenticationToken(b.create_token("root"))) as a:
            _create_namespace(a)
            a.namespaces.grant_permission(NS, "writer", ["produce"])
            a.namespaces.grant_permission(NS, "reader", ["consume"])
            a.namespaces.grant_permission(NS, "both", {"produce", "consume"})
            a.topics.create_partitioned_topic(f"{NS}/parted", 2)
        yield b


def _create_namespace(a: Admin) -> None:
    """Permissions are granted on a namespace that exists, as on Pulsar."""
    a.tenants.create_tenant(NS.split("/")[0])
    a.namespaces.create_namespace(NS)


def client(broker, role: str) -> Client:
    return Client(broker.service_url, authentication=AuthenticationToken(broker.create_token(role)),
                  operation_timeout_seconds=10)


def admin(broker, role: str) -> Admin:
    return Admin(broker.web_url, authentication=AuthenticationToken(broker.create_token(role)))


def test_permissions_are_listed_with_pulsars_names(broker):
    with admin(broker, "root") as a:
        assert a.namespaces.get_permissions(NS) == {
            "both": ["consume", "produce"], "reader": ["consume"], "writer": ["produce"],
        }
        auth = a.namespaces.get_policies(NS)["auth_policies"]
        assert auth["namespace_auth"]["writer"] == ["produce"]


def test_produce_needs_produce(broker):
    for role in ("writer", "both"):
        c = client(broker, role)
        try:
            c.create_producer(f"{NS}/t").send(b"x")
            c.create_producer(f"{NS}/parted").send(b"x")  # every partition is checked
        finally:
            c.close()
    for role in ("reader", "stranger"):
        c = client(broker, role)
        try:
            with pytest.raises(pulsarlab.AuthorizationError, match=f"'{role}'"):
                c.create_producer(f"{NS}/t")
        finally:
            c.close()


def test_consume_needs_consume(broker):
    for role in ("reader", "both"):
        c = client(broker, role)
        try:
            c.subscribe(f"{NS}/t", f"sub-{role}").close()
            c.subscribe(f"{NS}/parted", f"sub-{role}").close()
            c.create_reader(f"{NS}/t", pulsarlab.MessageId.earliest).close()
        finally:
            c.close()
    # A writer passes the lookup and is refused the subscription; a stranger the lookup.
    for role, refused in (("writer", "consume"), ("stranger", "look up topics")):
        c = client(broker, role)
        try:
            with pytest.raises(pulsarlab.AuthorizationError, match=f"not authorized to {refused}"):
                c.subscribe(f"{NS}/t", "s")
            with pytest.raises(pulsarlab.AuthorizationError):
                c.create_reader(f"{NS}/t", pulsarlab.MessageId.earliest)
        finally:
            c.close()


def test_a_role_without_permissions_learns_nothing(broker):
    c = client(broker, "stranger")
    try:
        with pytest.raises(pulsarlab.AuthorizationError, match="look up topics"):
            c.get_topic_partitions(f"{NS}/parted")
        with pytest.raises(pulsarlab.AuthorizationError):
            c.subscribe(re.compile(f"persistent://{NS}/.*"), "pattern")
    finally:
        c.close()


def test_permissions_are_per_namespace(broker):
    c = client(broker, "both")
    try:
        with pytest.raises(pulsarlab.AuthorizationError, match="namespace public/default"):
            c.create_producer("elsewhere")
    finally:
        c.close()


def test_superusers_may_do_everything(broker):
    c = client(broker, "root")
    try:
        c.create_producer("anywhere/at-all/t").send(b"x")
        c.subscribe("anywhere/at-all/t", "s").close()
    finally:
        c.close()


def test_admin_operations_need_a_superuser(broker):
    with admin(broker, "both") as a:
        with pytest.raises(errors.AuthorizationError, match="not a superuser") as info:
            a.topics.delete(f"{NS}/t", force=True)
        assert isinstance(info.value, pulsarlab.AuthorizationError)
        with pytest.raises(errors.AuthorizationError, match="not a superuser"):
            a.namespaces.grant_permission(NS, "both", ["produce", "consume"])
        with pytest.raises(errors.AuthorizationError, match="not a superuser"):
            a.namespaces.get_permissions(NS)
        # Lookups are allowed with produce or consume, as in Pulsar.
        assert a.topics.get_partitioned_topic_metadata(f"{NS}/parted")["partitions"] == 2
        assert "msgInCounter" in a.topics.get_stats(f"{NS}/t")
    with admin(broker, "writer") as a, pytest.raises(errors.AuthorizationError, match="consume"):
        a.topics.get_list(NS)
    with admin(broker, "reader") as a:
        assert f"persistent://{NS}/t" in a.topics.get_list(NS)


def test_grant_and_revoke_take_effect_for_the_next_open(broker):
    c = client(broker, "latecomer")
    try:
        with pytest.raises(pulsarlab.AuthorizationError):
            c.create_producer(f"{NS}/late")
        with admin(broker, "root") as a:
            a.namespaces.grant_permission(NS, "latecomer", ["produce"])
        producer = c.create_producer(f"{NS}/late")
        with admin(broker, "root") as a:
            a.namespaces.revoke_permission(NS, "latecomer")
            assert "latecomer" not in a.namespaces.get_permissions(NS)
        with pytest.raises(pulsarlab.AuthorizationError):
            c.create_producer(f"{NS}/late2")
        producer.send(b"an open producer keeps its grant, as in Pulsar")
    finally:
        c.close()


def test_bad_grants_are_clear_errors(broker):
    with admin(broker, "root") as a:
        with pytest.raises(errors.InvalidArgument, match="unknown action"):
            a.namespaces.grant_permission(NS, "x", ["produce", "delete-everything"])
        with pytest.raises(errors.InvalidArgument, match="tenant/namespace"):
            a.namespaces.grant_permission("nonamespace", "x", ["produce"])


def test_permissions_survive_a_restart(tmp_path):
    settings = {"authentication_enabled": True, "authorization_enabled": True,
                "super_user_roles": "root"}
    with Broker(str(tmp_path), **settings) as b, admin(b, "root") as a:
        _create_namespace(a)
        a.namespaces.grant_permission(NS, "kept", ["consume"])
    with Broker(str(tmp_path), **settings) as b:
        c = client(b, "kept")
        try:
            c.subscribe(f"{NS}/t", "s").close()
            with pytest.raises(pulsarlab.AuthorizationError):
                c.create_producer(f"{NS}/t")
        finally:
            c.close()
