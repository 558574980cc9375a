"""Advertised listeners: LOOKUP answers the named listener's URLs, an unknown name gets
Pulsar's ServiceNotReady, and a malformed advertisedListeners is refused at start."""

from __future__ import annotations

import pytest

from pulsarlab.broker.errors import InvalidArgument, ServiceNotReady
from pulsarlab.broker.listeners import AdvertisedListeners, Listener
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api

from .support import Harness, T, command

SPEC = ("internal:pulsar://10.0.0.5:6650,internal:pulsar+ssl://10.0.0.5:6651,"
        "external:pulsar+ssl://broker.example.com:443")


def test_parse_and_lookup() -> None:
    listeners = AdvertisedListeners.parse(SPEC)
    internal = Listener("internal", "pulsar://10.0.0.5:6650", "pulsar+ssl://10.0.0.5:6651")
    assert listeners.lookup("") == internal
    assert listeners.lookup("external") == Listener(
        "external", None, "pulsar+ssl://broker.example.com:443")
    with pytest.raises(ServiceNotReady, match=r"^the broker do not have nope listener$"):
        listeners.lookup("nope")
    assert AdvertisedListeners.parse(SPEC, "external").lookup("") == listeners.lookup("external")
    own = AdvertisedListeners.parse("", url="pulsar://127.0.0.1:6650")
    assert own.lookup("") == Listener("", "pulsar://127.0.0.1:6650", None)
    with pytest.raises(ServiceNotReady):
        own.lookup("internal")


@pytest.mark.parametrize(("spec", "internal", "message"), [
    ("internal=pulsar://h:1", "", "must look like name:pulsar://host:port"),
    ("internal:http://h:1", "", "must look like"),
    ("a:pulsar://h:1,a:pulsar://h:2", "", "listener 'a' has more than one pulsar:// URL"),
    ("a:pulsar://h:1", "b", "internal_listener_name 'b' is not one of advertised_listeners"),
    ("", "b", "internal_listener_name needs advertised_listeners"),
])
def test_malformed_listeners(spec: str, internal: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        AdvertisedListeners.parse(spec, internal)


def lookup(h: Harness, session, **fields) -> api.CommandLookupTopicResponse:
    (reply,) = h.run(session, command(T.LOOKUP, "lookupTopic", topic="t", request_id=7,
                                      **fields))
    return reply.lookupTopicResponse


def test_lookup_answers_the_named_listener() -> None:
    h = Harness()
    s = h.session()
    s.listeners = AdvertisedListeners.parse(SPEC)
    h.connect(s)
    plain = lookup(h, s)
    assert (plain.brokerServiceUrl, plain.brokerServiceUrlTls) == (
        "pulsar://10.0.0.5:6650", "pulsar+ssl://10.0.0.5:6651")
    external = lookup(h, s, advertised_listener_name="external")
    assert external.response == api.CommandLookupTopicResponse.Connect
    assert not external.HasField("brokerServiceUrl")
    assert external.brokerServiceUrlTls == "pulsar+ssl://broker.example.com:443"
    unknown = lookup(h, s, advertised_listener_name="nope")
    assert unknown.response == api.CommandLookupTopicResponse.Failed
    assert unknown.error == api.ServiceNotReady
    assert unknown.message == "the broker do not have nope listener"
    assert not s.closed
