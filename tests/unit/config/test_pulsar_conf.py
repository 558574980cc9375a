"""Pulsar's standalone.conf / broker.conf keys as broker settings (broker/pulsar_conf.py)."""

from __future__ import annotations

import pytest

from pulsarlab.broker.errors import InvalidArgument
from pulsarlab.broker.pulsar_conf import (
    jvm_options,
    parse_properties,
    read_pulsar_conf,
    setting_name,
    settings_from_properties,
)
from pulsarlab.broker.settings import BrokerSettings

CONF = """\
# The broker's ports
brokerServicePort=6650
brokerServicePortTls=
webServicePort : 8080
webServicePortTls=8443
! a comment in Java's other style
tlsCertificateFilePath=/etc/pulsar/broker.cert.pem
tlsKeyFilePath=/etc/pulsar/broker.key-pk8.pem
tlsRequireTrustedClientCertOnConnect=true
tlsAllowInsecureConnection=false
authenticationEnabled=true
authenticationProviders=org.apache.pulsar.broker.authentication.AuthenticationProviderTls,\\
  org.apache.pulsar.broker.authentication.AuthenticationProviderToken
authorizationEnabled=true
tokenSecretKey=data:;base64,c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0
superUserRoles=admin,proxy
anonymousUserRole=anonymous
maxUnackedMessagesPerConsumer=1000
maxUnackedMessagesPerSubscription=4000
subscriptionKeySharedUseConsistentHashing=false
managedLedgerCacheSizeMB=64
advertisedListeners=internal:pulsar://127.0.0.1:6650,external:pulsar://broker.example:6650
internalListenerName=internal
zookeeperServers=
clusterName=standalone
bookkeeperNumberOfChannelsPerBookie=16
"""


def test_each_key_maps_onto_its_setting() -> None:
    conf = settings_from_properties(CONF, "standalone.conf")
    assert conf.settings == {
        "broker_service_port": 6650,
        "web_service_port": 8080,
        "web_service_port_tls": 8443,
        "tls_certificate_file_path": "/etc/pulsar/broker.cert.pem",
        "tls_key_file_path": "/etc/pulsar/broker.key-pk8.pem",
        "tls_require_trusted_client_cert_on_connect": True,
        "tls_allow_insecure_connection": False,
        "authentication_enabled": True,
        "authentication_providers": "tls,token",
        "authorization_enabled": True,
        "token_secret_key": "data:;base64,c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0",
        "super_user_roles": "admin,proxy",
        "anonymous_user_role": "anonymous",
        "max_unacked_messages_per_consumer": 1000,
        "max_unacked_messages_per_subscription": 4000,
        "key_shared_use_consistent_hashing": False,
        "managed_ledger_cache_size_mb": 64,
        "advertised_listeners":
            "internal:pulsar://127.0.0.1:6650,external:pulsar://broker.example:6650",
        "internal_listener_name": "internal",
    }
    # an empty value keeps the default (brokerServicePortTls= is "no TLS listener")
    assert "broker_service_port_tls" not in conf.settings
    assert conf.ignored == ["zookeeperServers", "clusterName",
                            "bookkeeperNumberOfChannelsPerBookie"]
    settings = BrokerSettings.from_kwargs(**conf.settings)
    assert settings.max_unacked_messages_per_consumer == 1000


@pytest.mark.parametrize(("line", "message"), [
    ("brokerServicePort=66x50", "standalone.conf:2: brokerServicePort='66x50': must be an integer"),
    ("authenticationEnabled=yes",
     "standalone.conf:2: authenticationEnabled='yes': must be true or false"),
    ("authenticationProviders=com.example.MyProvider",
     "standalone.conf:2: authenticationProviders='com.example.MyProvider': authentication "
     "provider 'com.example.MyProvider' is not one pulsarlab has"),
])
def test_a_malformed_value_is_one_line_naming_the_key(line: str, message: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        settings_from_properties(f"# head\n{line}\n", "standalone.conf")
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_java_properties_syntax() -> None:
    text = "a=1\n  b : two words \nc\\:d=e\\u0041\\\n   f\n\n# x=y\nempty\n"
    assert parse_properties(text) == [
        (1, "a", "1"), (2, "b", "two words"), (3, "c:d", "eAf"), (7, "empty", ""),
    ]


def test_names() -> None:
    assert setting_name("brokerServicePortTls") == "broker_service_port_tls"
    assert setting_name("tlsTrustCertsFilePath") == "tls_trust_certs_file_path"
    assert setting_name("authenticationRefreshCheckSeconds") == (
        "authentication_refresh_check_seconds"
    )
    assert setting_name("basicAuthConf") == "basic_auth_conf"
    assert setting_name("brokerMaxConnections") == "max_connections"
    assert setting_name("pulsarVersion") is None  # pulsarlab's own, not a Pulsar key
    assert setting_name("zookeeperServers") is None


def test_jvm_options() -> None:
    conf = jvm_options(["-Dpulsar.auth.basic.conf=/etc/pulsar/users", "-Xmx1g",
                        "-Dlog4j.level=debug"])
    assert conf.settings == {"basic_auth_conf": "/etc/pulsar/users"}
    assert conf.ignored == ["-Xmx1g", "log4j.level"]


def test_an_unreadable_file_is_one_line(tmp_path) -> None:
    with pytest.raises(InvalidArgument, match=r"cannot read the config file .*nope\.conf"):
        read_pulsar_conf(tmp_path / "nope.conf")
