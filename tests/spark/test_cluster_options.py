"""Options for a Pulsar cluster: ``service.url`` ``pulsar://…`` with or without ``admin.url``
(without it the driver plans over the binary protocol; pure)."""

from __future__ import annotations

import pytest

from pulsarlab.broker import local_brokers
from pulsarlab.spark.options import PulsarSparkError, parse_sink_options, parse_source_options


def test_pulsar_service_url_takes_the_admin_url() -> None:
    opts = parse_source_options({"service.url": "pulsar://broker:6650",
                                 "admin.url": "http://broker:8080", "topic": "t"},
                                streaming=False)
    assert opts.service_url == "pulsar://broker:6650"
    assert opts.admin_url == "http://broker:8080"
    secure = parse_source_options({"service.url": "pulsar+ssl://broker:6651",
                                   "admin.url": "https://broker:8443", "topic": "t"},
                                  streaming=True)
    assert secure.admin_url == "https://broker:8443"


def test_the_admin_url_is_optional_and_checked_for_a_cluster() -> None:
    for url in ("pulsar://b:6650", "pulsar+ssl://b:6651"):
        for client in ("pulsarlab", "official"):  # official: pulsarlab's client plans
            opts = parse_source_options({"service.url": url, "topic": "t", "client": client},
                                        streaming=True)
            assert (opts.admin_url, opts.client) == (None, client)
    with pytest.raises(PulsarSparkError, match=r"'admin\.url' must look like http://host:port"):
        parse_source_options({"service.url": "pulsar://b:6650", "admin.url": "b:8080",
                              "topic": "t"}, streaming=False)


def test_zmq_takes_the_admin_url_or_finds_its_broker_and_the_sink_takes_a_cluster() -> None:
    opts = parse_source_options({"service.url": "zmq://b:6651", "admin.url": "http://b:8080",
                                 "topic": "t"}, streaming=False)
    assert opts.admin_url == "http://b:8080"
    opts = parse_source_options({"service.url": "zmq://b:6651", "topic": "t"}, streaming=False)
    assert opts.admin_url is None  # no broker of this process there: Admin says what to pass
    local_brokers.register("zmq://b:6651", "http://b:41234")  # as Broker.start does
    try:
        opts = parse_source_options({"service.url": "zmq://b:6651", "topic": "t"},
                                    streaming=False)
    finally:
        local_brokers.unregister("zmq://b:6651")
    assert opts.admin_url == "http://b:41234"  # resolved on the driver, for the workers
    # the sink writes with pulsarlab's client, which speaks pulsar:// too (no admin.url needed)
    assert parse_sink_options({"service.url": "pulsar://b:6650", "topic": "t"}).service_url \
        == "pulsar://b:6650"
    with pytest.raises(PulsarSparkError, match="must look like zmq://host:port or pulsar://"):
        parse_sink_options({"service.url": "http://b:8080", "topic": "t"})
