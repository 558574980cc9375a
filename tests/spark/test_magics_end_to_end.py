"""R-KERNEL + R-SPARK end to end: a shell loads the extension, starts a broker, produces,
consumes and runs a Spark SQL query over the topic with real Spark (the shared session)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def shell(tmp_path, monkeypatch) -> Any:
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    ip = InteractiveShell.instance(config=config)
    ip.run_line_magic("load_ext", "pulsarlab")
    yield ip
    ip.run_line_magic("pulsar", "stop")


def test_load_start_produce_consume_and_query(shell, spark) -> None:
    def cell(code: str) -> Any:
        result = shell.run_cell(code)
        assert result.success, result.error_in_exec or result.error_before_exec
        return result.result

    cell("%pulsar start --memory")
    cell("%%pulsar produce e2e-orders\nalpha\nbeta\ngamma")
    consumed = cell("%pulsar consume e2e-orders --sub audit --earliest -n 3 --timeout 10000")
    assert sorted(m["value"] for m in consumed) == ["alpha", "beta", "gamma"]
    cell("%pulsar spark")
    assert shell.user_ns["spark"] is spark
    frame = cell(
        "%%pulsar spark e2e-orders --view orders\n"
        "select cast(value as string) as v from orders order by v"
    )
    assert list(frame["v"]) == ["alpha", "beta", "gamma"]


def test_spark_sql_over_a_cluster_topic(shell, spark, broker) -> None:
    """``%pulsar connect pulsar://…``: ``%%pulsar spark`` reads with service.url pulsar://
    and the connection's admin.url, like any other magic on a cluster."""
    def cell(code: str) -> Any:
        result = shell.run_cell(code)
        assert result.success, result.error_in_exec or result.error_before_exec
        return result.result

    cell(f"%pulsar connect {broker.pulsar_url} --admin-url {broker.web_url} --allow-writes")
    cell("%%pulsar produce cluster-orders\nalpha\nbeta")
    frame = cell(
        "%%pulsar spark cluster-orders --view orders\n"
        "select cast(value as string) as v from orders order by v"
    )
    assert list(frame["v"]) == ["alpha", "beta"]
