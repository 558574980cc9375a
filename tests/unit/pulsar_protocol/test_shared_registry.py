"""The schema registry and the authorizer belong to the core: a schema a pulsar:// client
registers is the admin API's (what REST calls), and a permission granted through the admin
API is what every session checks, whichever transport carries it."""

from __future__ import annotations

import pytest

from pulsarlab.broker.admin_handler import AdminHandler
from pulsarlab.broker.errors import AuthorizationError
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api

from .support import Harness, T, command

T_NAME = "persistent://public/default/t"


def test_every_face_and_the_admin_api_share_the_cores_registry_and_authorizer() -> None:
    h = Harness()
    for admin in (h.admin, AdminHandler(h.service)):
        assert admin.schemas is h.service.schemas
        assert admin.authorizer is h.service.authorizer
    s = h.session()
    assert (s.schemas, s.authorizer) == (h.service.schemas, h.service.authorizer)


def test_a_schema_registered_over_pulsar_is_the_admin_apis() -> None:
    h = Harness()
    s = h.session()
    h.connect(s)
    schema = api.Schema(name="Order", schema_data=b'{"type":"string"}', type=api.Schema.Json)
    h.run(s, command(T.GET_OR_CREATE_SCHEMA, "getOrCreateSchema", request_id=1, topic="t",
                     schema=schema))
    found = h.admin.call("schemas.get_schema", {"topic": "t"})
    assert (found["type"], found["data"], found["version"]) == ("JSON", '{"type":"string"}', 0)


def test_a_permission_granted_through_the_admin_api_is_what_a_session_checks() -> None:
    h = Harness(authentication_enabled=True, authorization_enabled=True)
    s = h.session()
    with pytest.raises(AuthorizationError):
        s.authorizer.check_topic("app", T_NAME, "produce")
    h.admin.call("namespaces.grant_permission",
                 {"namespace": "public/default", "role": "app", "actions": ["produce"]})
    s.authorizer.check_topic("app", T_NAME, "produce")
