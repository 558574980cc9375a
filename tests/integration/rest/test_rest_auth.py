"""REST with authentication and authorization on: Bearer tokens, 401 and 403."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from pulsarlab import Broker

from .conftest import Rest

BASE = "/admin/v2/persistent/public/default"


@pytest.fixture(scope="module")
def secured():
    with Broker(storage="memory", authentication_enabled=True, authorization_enabled=True,
                super_user_roles="admin") as running:
        yield running


@pytest.fixture(scope="module")
def admin_rest(secured):
    return Rest(secured.web_url, secured.create_token("admin"))


def test_no_or_bad_token_is_401(secured):
    anonymous = Rest(secured.web_url).get("/admin/v2/tenants")
    assert anonymous.status == 401 and "Authorization: Bearer" in anonymous.reason
    forged = Rest(secured.web_url, "not.a.token").get("/admin/v2/tenants")
    assert forged.status == 401 and "authentication failed" in forged.reason
    request = urllib.request.Request(secured.web_url + "/admin/v2/tenants",
                                     headers={"Authorization": "Basic YWRtaW46YWRtaW4="})
    with pytest.raises(urllib.error.HTTPError) as basic:
        urllib.request.urlopen(request, timeout=30)
    assert basic.value.code == 401


def test_superuser_may_do_everything(admin_rest):
    assert admin_rest.put("/admin/v2/tenants/acme").status == 204
    assert admin_rest.put("/admin/v2/namespaces/acme/ns").status == 204
    assert admin_rest.put(f"{BASE}/secured").status == 204
    assert admin_rest.post("/admin/v2/namespaces/public/default/permissions/reader",
                           ["consume"]).status == 204


def test_roles_get_lookups_by_namespace_permission_and_nothing_else(secured, admin_rest):
    assert admin_rest.put(f"{BASE}/guarded").status == 204
    assert admin_rest.post("/admin/v2/namespaces/public/default/permissions/viewer",
                           ["consume"]).status == 204
    viewer = Rest(secured.web_url, secured.create_token("viewer"))
    assert viewer.get(f"{BASE}/guarded/stats").status == 200
    assert viewer.get(f"{BASE}/guarded/partitions").json == {"partitions": 0, "deleted": False}
    assert "persistent://public/default/guarded" in viewer.get(BASE).json
    refused = viewer.put(f"{BASE}/another")
    assert refused.status == 403 and "'viewer' is not a superuser" in refused.reason
    assert viewer.delete(f"{BASE}/guarded").status == 403
    assert viewer.get("/admin/v2/tenants").status == 403
    stranger = Rest(secured.web_url, secured.create_token("stranger"))
    lookup = stranger.get(f"{BASE}/guarded/stats")
    assert lookup.status == 403 and "not authorized" in lookup.reason
    assert admin_rest.get(f"{BASE}/guarded/stats").status == 200


def test_a_topic_grant_covers_that_topic_and_its_partitions_only(secured, admin_rest):
    """PulsarAuthorizationProvider.checkPermission: the namespace's grants, then the
    topic's own (``destination_auth``; a partition checks its partitioned topic)."""
    assert admin_rest.put(f"{BASE}/granted/partitions", 2).status == 204
    assert admin_rest.put(f"{BASE}/other").status == 204
    assert admin_rest.post(f"{BASE}/granted/permissions/topical", ["consume"]).status == 204
    topical = Rest(secured.web_url, secured.create_token("topical"))
    assert topical.get(f"{BASE}/granted/partitions").json == {"partitions": 2, "deleted": False}
    assert topical.get(f"{BASE}/granted-partition-0/stats").status == 200
    assert topical.get(f"{BASE}/other/stats").status == 403
    assert topical.post(f"{BASE}/granted/permissions/topical", ["produce"]).status == 403
    assert admin_rest.delete(f"{BASE}/granted/permissions/topical").status == 204
    assert topical.get(f"{BASE}/granted/partitions").status == 403


def test_authentication_without_authorization_lets_any_valid_token_in():
    with Broker(storage="memory", authentication_enabled=True) as broker:
        anyone = Rest(broker.web_url, broker.create_token("anyone"))
        assert anyone.put("/admin/v2/tenants/free").status == 204
        assert Rest(broker.web_url).get("/admin/v2/tenants").status == 401
