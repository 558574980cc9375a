"""The data source on a broker with token authentication (StreamNative's option names)."""

from __future__ import annotations

import pickle

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'pulsarlab[spark]')")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'pulsarlab[spark]')")

import pulsarlab
from pulsarlab.spark.options import (
    PulsarSparkError,
    parse_client_security,
    parse_sink_options,
    parse_source_options,
)

from .conftest import produce, unique

TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"


def _opts(**extra: str) -> dict[str, str]:
    return {"pulsar.client.authpluginclassname": TOKEN_PLUGIN, **extra}


def test_token_forms_and_plain_data(tmp_path):
    assert parse_client_security(_opts(**{"pulsar.client.authparams": "token:abc"})).token == "abc"
    assert parse_client_security(_opts(**{"pulsar.client.authparams": "abc"})).token == "abc"
    path = tmp_path / "token"
    path.write_text("from-file\n")
    security = parse_client_security(_opts(**{"pulsar.client.authparams": f"file://{path}"}))
    assert security.token == "from-file"
    assert "from-file" not in repr(security)  # never in a plan or a log line
    assert pickle.loads(pickle.dumps(security)) == security  # shipped to executors
    assert parse_client_security({}).client_kwargs() == {}
    kwargs = parse_client_security(
        _opts(**{"pulsar.client.authparams": "token:abc", "pulsar.client.curveserverkey": "K"})
    ).client_kwargs()
    assert kwargs["authentication"].token() == "abc" and kwargs["curve_server_key"] == "K"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"pulsar.client.authPluginClassName": "com.example.Kerberos",
          "pulsar.client.authParams": "x"}, "token authentication is the only kind"),
        ({"pulsar.client.authPluginClassName": TOKEN_PLUGIN,
          "pulsar.client.authParams": "token:"}, "needs a token"),
        ({"pulsar.client.authParams": "token:abc"}, "must be org.apache.pulsar"),
        ({"pulsar.client.authPluginClassName": TOKEN_PLUGIN,
          "pulsar.client.authParams": "file:///nonexistent/token"}, "cannot read the token file"),
    ],
)
def test_bad_auth_options_are_one_line_errors(options, message):
    base = {"service.url": "zmq://127.0.0.1:1", "topic": "t", **options}
    with pytest.raises(PulsarSparkError, match=message):
        parse_source_options(base, streaming=False)
    with pytest.raises(PulsarSparkError, match=message):
        parse_sink_options(base)


@pytest.fixture(scope="module")
def secured():
    broker = pulsarlab.Broker(storage="memory", authentication_enabled=True).start()
    yield broker
    broker.stop()


def test_read_and_write_with_a_token(spark, secured):
    token = secured.create_token("etl")
    topic = unique("auth")
    client = pulsarlab.Client(
        secured.service_url, authentication=pulsarlab.AuthenticationToken(token)
    )
    try:
        produce(client, topic, 5)
        reader = (
            spark.read.format("pulsar").option("service.url", secured.service_url)
            .option("topic", topic)
            .option("pulsar.client.authPluginClassName", TOKEN_PLUGIN)
        )
        rows = reader.option("pulsar.client.authParams", f"token:{token}").load()
        assert sorted(r.value for r in rows.select("value").collect()) == [
            f"m{i}".encode() for i in range(5)
        ]
        with pytest.raises(Exception, match=r"[Aa]uthenticat"):
            reader.option("pulsar.client.authParams", "token:wrong").load().collect()
        out = unique("auth-out")
        (rows.select("value").write.format("pulsar").mode("append")
         .option("service.url", secured.service_url).option("topic", out)
         .option("pulsar.client.authPluginClassName", TOKEN_PLUGIN)
         .option("pulsar.client.authParams", f"token:{token}").save())
        back = (spark.read.format("pulsar").option("service.url", secured.service_url)
                .option("topic", out).option("pulsar.client.authPluginClassName", TOKEN_PLUGIN)
                .option("pulsar.client.authParams", f"token:{token}").load())
        assert back.count() == 5
    finally:
        client.close()
