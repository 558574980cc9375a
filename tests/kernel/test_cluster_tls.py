"""``%pulsar connect pulsar+ssl://…``: the magics over TLS (pulsar+ssl:// and https://) with
the cluster's CA file, against a pulsarlab broker's TLS listeners."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pulsarlab import Broker

pytest.importorskip("pulsar", reason="the official pulsar-client (dev extra) is needed")


@pytest.fixture(scope="module")
def tls_cluster(tls_pki) -> Iterator[tuple[Broker, str]]:
    pki = tls_pki
    broker = Broker(storage="memory", broker_service_port_tls=0, web_service_port_tls=0,
                    tls_certificate_file_path=pki.broker_cert,
                    tls_key_file_path=pki.broker_key)
    broker.start()
    yield broker, pki.ca
    broker.stop()


def test_connect_pulsar_ssl_produce_and_consume(run, runtime, tls_cluster) -> None:
    broker, ca = tls_cluster
    ran = run(f"%pulsar connect {broker.pulsar_ssl_url} --admin-url {broker.web_url_tls} "
              f"--tls-trust-certs {ca} --allow-writes")
    try:
        assert ran.success, ran.out
        assert ran.out.startswith(f"connected to {broker.pulsar_ssl_url} "
                                  f"(admin {broker.web_url_tls}, writes allowed")
        sent = run("%%pulsar produce tls-orders\none\ntwo")
        assert sent.success, sent.out
        got = run("%pulsar consume tls-orders --sub s --earliest -n 2")
        assert got.success, got.out
        assert [m["value"] for m in got.value] == ["one", "two"]
        assert run("%pulsar stats tls-orders").value["msgInCounter"] == 2
    finally:
        run("%pulsar stop")


def test_connect_without_the_ca_file_fails_in_one_line(run, runtime, tls_cluster) -> None:
    broker, _ca = tls_cluster
    ran = run(f"%pulsar connect {broker.pulsar_ssl_url} --admin-url {broker.web_url_tls}")
    assert not ran.success
    assert "Traceback" not in ran.out
