"""``%pulsar`` / ``%%pulsar`` through an InteractiveShell against an in-kernel memory broker."""

from __future__ import annotations

import datetime
import os
import time

import pytest

from pulsarlab import Broker
from pulsarlab.magics import build_parser
from pulsarlab.runtime import PulsarMagicError

SUBCOMMANDS = [
    "start", "stop", "status", "connect", "topics", "policies", "create", "produce", "consume",
    "peek",
    "stats", "subs", "reset-cursor", "show", "spark", "spark stream", "spark stream start",
    "spark stream status", "spark stream stop", "tutorials", "help",
]


def assert_one_line_error(ran, expected: str) -> None:
    """The cell failed and printed exactly ``expected``, no traceback."""
    assert ran.success is False
    assert ran.out.strip() == expected
    assert "Traceback" not in ran.out


# -- help -------------------------------------------------------------------------------------


@pytest.mark.parametrize("sub", SUBCOMMANDS)
@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_every_subcommand_has_help(run, sub: str, flag: str) -> None:
    ran = run(f"%pulsar {sub} {flag}")
    assert ran.success, ran.out
    assert ran.out.startswith(f"usage: %pulsar {sub} [-h]")
    assert "-h, --help" in ran.out
    assert ran.value is None


def test_help_wins_over_missing_arguments(run) -> None:
    ran = run("%pulsar consume --help")  # TOPIC and --sub are required, help still works
    assert ran.success
    assert "--type {exclusive,failover,key_shared,shared}" in ran.out


def test_overview_help(run) -> None:
    for line in ("%pulsar", "%pulsar --help", "%pulsar -h"):
        ran = run(line)
        assert ran.success
        assert ran.out.startswith("usage: %pulsar [-h] SUBCOMMAND ...")
        for sub in ("start", "reset-cursor", "show", "spark"):
            assert f"    {sub}" in ran.out


def test_help_subcommand(run) -> None:
    ran = run("%pulsar help")
    assert ran.success, ran.out
    assert ran.out.startswith("usage: %pulsar [-h] SUBCOMMAND ...")
    assert "    help" in ran.out and "    tutorials" in ran.out
    for line, usage in (("%pulsar help consume", "usage: %pulsar consume [-h]"),
                        ("%pulsar help spark stream start",
                         "usage: %pulsar spark stream start [-h]")):
        ran = run(line)
        assert ran.success, ran.out
        assert ran.out.startswith(usage)


def test_help_of_an_unknown_subcommand_is_one_line(run) -> None:
    assert_one_line_error(
        run("%pulsar help nosuch"),
        "%pulsar help: no subcommand 'nosuch' under '%pulsar' (known: browse, connect, "
        "consume, create, help, peek, policies, produce, reset-cursor, show, spark, start, "
        "stats, status, stop, subs, topics, tutorials, why)",
    )


def test_tutorials_copies_and_keeps_a_changed_copy(run, tmp_path) -> None:
    target = tmp_path / "t"
    ran = run(f"%pulsar tutorials {target}")
    assert ran.success, ran.out
    assert (target / "01-getting-started.ipynb").is_file()
    assert (target / "data" / "cluster-stats-3.3.json").is_file()
    assert f"copied to {target}" in ran.out and "jupyter lab" in ran.out
    (target / "01-getting-started.ipynb").write_text("{}")
    ran = run(f"%pulsar tutorials {target}")
    assert ran.success, ran.out
    assert "kept your changed copies" in ran.out and "01-getting-started.ipynb" in ran.out
    assert (target / "01-getting-started.ipynb").read_text() == "{}"
    ran = run(f"%pulsar tutorials {target} --force")
    assert ran.success and "overwritten (--force): 01-getting-started.ipynb" in ran.out
    assert (target / "01-getting-started.ipynb").read_text() != "{}"


def test_tutorials_into_a_file_is_one_line(run, tmp_path) -> None:
    (tmp_path / "f").write_text("x")
    assert_one_line_error(
        run(f"%pulsar tutorials {tmp_path / 'f'}"),
        f"%pulsar tutorials: {tmp_path / 'f'} exists and is not a folder (choose another: "
        "pulsarlab tutorials DIR)",
    )


def test_missing_optional_module_names_the_extra(run, monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pulsar", None)  # import pulsar -> ModuleNotFoundError
    ran = run("import pulsar")
    assert ran.success is False
    assert isinstance(ran.result.error_in_exec, ModuleNotFoundError)
    assert ran.out.strip() == ("ModuleNotFoundError: import of pulsar halted; None in "
                               "sys.modules: pip install 'pulsarlab[ops]'")
    monkeypatch.setitem(sys.modules, "json_not_an_extra_module", None)
    ran = run("import json_not_an_extra_module")  # other modules: IPython's usual traceback
    assert ran.success is False and "Traceback" in ran.out


def test_require_names_the_extra(monkeypatch) -> None:
    import sys

    from pulsarlab.extras import MissingDependency, require

    monkeypatch.setitem(sys.modules, "pulsar", None)
    with pytest.raises(MissingDependency) as raised:
        require("pulsar", "a Pulsar cluster connection (pulsar://)")
    assert str(raised.value) == ("a Pulsar cluster connection (pulsar://) needs 'pulsar', "
                                 "which is not installed: pip install 'pulsarlab[ops]'")
    assert isinstance(raised.value, ModuleNotFoundError) and raised.value.name == "pulsar"


def test_cell_help(run) -> None:
    ran = run("%%pulsar spark --help\nselect 1")
    assert ran.success
    assert ran.out.startswith("usage: %%pulsar spark [-h] [--view NAME]")
    ran = run("%%pulsar produce --help\nx")
    assert ran.success
    assert ran.out.startswith("usage: %pulsar produce [-h]")


def test_parser_lists_every_subcommand() -> None:
    text = build_parser().format_help()
    for sub in ("start", "stop", "status", "connect", "topics", "create", "produce", "consume",
                "peek", "stats", "subs", "reset-cursor", "show", "spark", "why", "browse"):
        assert sub in text


# -- lifecycle in the shell -------------------------------------------------------------------


def test_start_status_stop(run, runtime) -> None:
    ran = run("%pulsar start --memory")
    assert ran.success
    assert ran.out.startswith("pulsarlab broker running in the kernel at zmq://127.0.0.1:")
    assert "(memory storage, events tcp://127.0.0.1:" in ran.out
    assert runtime.mode == "kernel" and runtime.running
    assert os.environ["PULSARLAB_URL"] == runtime.service_url

    again = run("%pulsar start --memory")  # re-running a tutorial cell is not an error
    assert again.success
    assert again.out.startswith("a broker is already running at")

    status = run("%pulsar status")
    assert status.success
    assert isinstance(status.value, dict)
    assert status.value["state"] == "running"
    assert status.value["mode"] == "kernel"
    assert status.value["storage"] == "memory"
    assert status.value["service_url"] == runtime.service_url
    assert '"state": "running"' in status.out

    broker = runtime.broker
    url = runtime.service_url
    ran = run("%pulsar stop")
    assert ran.success
    assert ran.out.strip() == f"stopped the broker at {url}"
    assert not broker.running
    assert "PULSARLAB_URL" not in os.environ
    assert run("%pulsar status").value["state"] == "none"
    assert run("%pulsar stop").out.strip() == "no broker to stop"


def test_durable_start_with_data_dir_and_settings(run, runtime, tmp_path) -> None:
    data = tmp_path / "data"
    ran = run(f"%pulsar start --data-dir {data} --set max_message_size=2000000 "
              "--set broker_deduplication_enabled=true")
    assert ran.success, ran.out
    assert f"durable storage in {data}" in ran.out
    assert runtime.broker.settings.max_message_size == 2_000_000
    assert runtime.broker.settings.broker_deduplication_enabled is True
    run("%pulsar produce kept hello")
    run("%pulsar stop")
    assert run(f"%pulsar start --data-dir {data}").success  # recovered from the same dir
    assert run("%pulsar topics").value == ["persistent://public/default/kept"]
    run("%pulsar stop")


def test_live_views_know_the_version_of_the_broker_started_here(run, runtime) -> None:
    # A HashRingView draws the ring of the broker's pulsar_version: the live source of a
    # broker started by %pulsar start carries its settings to the views.
    assert run("%pulsar start --memory --set pulsar_version=4.0").success
    try:
        source = runtime.connection().live_source("ring", "sub")
        assert source.settings["pulsar_version"] == "4.0"
        assert source.settings["consistent_hashing_points"] == (
            runtime.broker.settings.subscription_key_shared_consistent_hashing_replica_points)
    finally:
        run("%pulsar stop")


def test_connect_to_a_running_broker(run, runtime) -> None:
    with Broker(storage="memory") as other:
        ran = run(f"%pulsar connect {other.service_url} --events {other.events_url}")
        assert ran.success, ran.out
        assert ran.out.strip() == f"connected to {other.service_url} (events {other.events_url})"
        assert runtime.mode == "connected"
        run("%pulsar create elsewhere")
        assert run("%pulsar topics").value == ["persistent://public/default/elsewhere"]
        ran = run("%pulsar stop")
        assert ran.out.strip() == (
            f"disconnected from {other.service_url} (that broker keeps running)"
        )
        assert other.running
        # a broker this kernel did not start is found by its admin REST API
        ran = run(f"%pulsar connect {other.service_url} --admin-url {other.web_url}")
        assert ran.success, ran.out
        assert ran.out.strip() == f"connected to {other.service_url} (admin {other.web_url})"
        assert run("%pulsar topics").value == ["persistent://public/default/elsewhere"]
        run("%pulsar stop")


# -- topics and messages ------------------------------------------------------------------------


def test_create_and_topics(run, broker) -> None:
    assert run("%pulsar topics").value == []
    ran = run("%pulsar create plain")
    assert ran.out.strip() == "created persistent://public/default/plain"
    ran = run("%pulsar create parted --partitions 3")
    assert ran.out.strip() == "created persistent://public/default/parted with 3 partitions"
    topics = run("%pulsar topics public/default")
    assert topics.success
    assert sorted(topics.value) == ["persistent://public/default/parted",
                                    "persistent://public/default/plain"]
    assert "topics in public/default:" in topics.out
    assert run("%pulsar topics other/ns").value == []


def test_namespace_policies(run, runtime, broker) -> None:
    # Pulsar's rules over the admin REST API: the namespace must exist, the answer is
    # its Policies JSON
    missing = run("%pulsar policies tenant-p/ns")
    assert_one_line_error(missing, "%pulsar policies: tenant 'tenant-p' does not exist")
    runtime.admin().tenants.create_tenant("tenant-p")
    runtime.admin().namespaces.create_namespace("tenant-p/ns")
    ran = run("%pulsar policies tenant-p/ns")
    assert ran.success and ran.value["backlog_quota_map"] == {}
    assert "message_ttl_in_seconds" not in ran.value
    ran = run("%pulsar policies tenant-p/ns --ttl 60 --retention 10,-1 --dedup on")
    assert ran.success, ran.out
    assert ran.value["message_ttl_in_seconds"] == 60
    assert ran.value["retention_policies"] == {"retentionTimeInMinutes": 10,
                                               "retentionSizeInMB": -1}
    assert ran.value["deduplicationEnabled"] is True
    assert "policies of tenant-p/ns" in ran.out
    assert run("%pulsar policies tenant-p/ns --dedup off").value["deduplicationEnabled"] is False
    assert "message_ttl_in_seconds" not in run("%pulsar policies").value  # public/default
    bad = run("%pulsar policies tenant-p/ns --retention 10")
    assert_one_line_error(bad, "%pulsar policies: argument --retention: expected MINUTES,MB "
                               "(e.g. 60,100; -1 for unlimited), not '10' "
                               "(see %pulsar policies --help)")
    assert_one_line_error(run("%pulsar policies tenant-p/ns --ttl -5"),
                          "%pulsar policies: argument --ttl: must be 0 or more, not -5 "
                          "(see %pulsar policies --help)")


def test_produce_line_and_cell(run, broker) -> None:
    sent = run("%pulsar produce orders hello world --key k1 --count 3 --property a=1")
    assert sent.success, sent.out
    assert len(sent.value) == 3
    assert str(sent.value[0]) == "(0,0,-1,-1)"
    assert "sent 3 messages to persistent://public/default/orders" in sent.out

    cell = run("%%pulsar produce orders\nfirst\nsecond\n\nthird\n")
    assert cell.success, cell.out
    assert len(cell.value) == 3

    got = run("%pulsar consume orders --sub s --earliest -n 10 --timeout 300")
    assert got.success
    messages = got.value
    assert isinstance(messages, list)
    assert [m["value"] for m in messages] == ["hello world"] * 3 + ["first", "second", "third"]
    assert messages[0]["key"] == "k1"
    assert messages[0]["properties"] == {"a": "1"}
    assert messages[0]["message_id"] == "(0,0,-1,-1)"
    assert messages[0]["topic"] == "persistent://public/default/orders"
    assert messages[3]["key"] is None
    assert isinstance(messages[0]["publish_time"], int)
    assert "6 messages from persistent://public/default/orders / s" in got.out
    html = messages._repr_html_()
    assert "<table>" in html and "hello world" in html
    # the table shows publish_time as a UTC time as well as the message's epoch ms
    when = datetime.datetime.fromtimestamp(messages[0]["publish_time"] / 1000,
                                           tz=datetime.UTC)
    shown = f"{when:%Y-%m-%d %H:%M:%S}.{messages[0]['publish_time'] % 1000:03d} UTC"
    assert f"{shown} ({messages[0]['publish_time']})" in got.out
    assert shown in html


def test_produce_more_than_a_producer_queue_loses_nothing(run, broker) -> None:
    # The producer's pending queue holds 1000 messages; %pulsar produce blocks on a full
    # queue (block_if_queue_full=True) instead of getting ProducerQueueIsFull.
    sent = run("%pulsar produce burst x --count 2500")
    assert sent.success, sent.out
    assert len(sent.value) == 2500 and all(m is not None for m in sent.value)
    assert run("%pulsar stats burst").value["msgInCounter"] == 2500


def test_produce_many_to_a_partitioned_topic(run, broker) -> None:
    run("%pulsar create many --partitions 2")
    sent = run("%pulsar produce many x --count 1000")
    assert sent.success
    assert len(sent.value) == 1000
    assert all(m is not None for m in sent.value)
    stats = run("%pulsar stats many").value
    assert stats["msgInCounter"] == 1000
    assert set(stats["partitions"]) == {"persistent://public/default/many-partition-0",
                                        "persistent://public/default/many-partition-1"}


def test_consume_positions_and_types(run, broker) -> None:
    run("%pulsar produce early a")
    latest = run("%pulsar consume early --sub late --timeout 200")
    assert latest.success and latest.value == []  # a new subscription starts at the latest
    assert "0 messages from" in latest.out
    for kind in ("exclusive", "shared", "failover", "key_shared"):
        # A Failover consumer reads after the failover delay (1 s), its first pick included.
        timeout = 3000 if kind == "failover" else 300
        got = run(f"%pulsar consume early --sub {kind} --type {kind} --earliest "
                  f"--timeout {timeout}")
        assert got.success, got.out
        assert [m["value"] for m in got.value] == ["a"]
    stats = run("%pulsar stats early").value
    assert stats["subscriptions"]["key_shared"]["type"] == "Key_Shared"
    assert stats["subscriptions"]["shared"]["msgBacklog"] == 0


def test_consume_stops_at_n(run, broker) -> None:
    run("%pulsar produce five x --count 5")
    first = run("%pulsar consume five --sub s --earliest -n 2")
    assert len(first.value) == 2
    rest = run("%pulsar consume five --sub s -n 10 --timeout 300")
    assert len(rest.value) == 3  # the first two were acknowledged


def test_peek_stats_subs_and_reset_cursor(run, broker) -> None:
    run("%%pulsar produce t\nm0\nm1\nm2")
    run("%pulsar consume t --sub s --earliest -n 3 --timeout 300")
    run("%pulsar consume t --sub other --earliest -n 1")

    subs = run("%pulsar subs t")
    assert subs.success and subs.value == ["other", "s"]
    assert "subscriptions of persistent://public/default/t:" in subs.out

    stats = run("%pulsar stats t")
    assert stats.success
    assert isinstance(stats.value, dict)
    assert stats.value["msgInCounter"] == 3
    assert stats.value["subscriptions"]["s"]["msgBacklog"] == 0
    assert stats.value["subscriptions"]["other"]["msgBacklog"] == 2
    assert stats.out.startswith("Out[")
    assert '"msgInCounter": 3' in stats.out  # pretty JSON

    assert run("%pulsar peek t --sub s").value == []
    ran = run("%pulsar reset-cursor t --sub s --earliest")
    assert ran.out.strip() == "reset s on persistent://public/default/t to earliest"
    peeked = run("%pulsar peek t --sub s -n 2")
    assert [m["value"] for m in peeked.value] == ["m0", "m1"]
    assert peeked.value[0]["message_id"] == "(0,0,-1,-1)"

    run("%pulsar reset-cursor t --sub s --latest")
    assert run("%pulsar peek t --sub s -n 5").value == []
    run("%pulsar reset-cursor t --sub s --time 0")
    assert len(run("%pulsar peek t --sub s -n 5").value) == 3
    future = int(time.time() * 1000) + 3_600_000
    run(f"%pulsar reset-cursor t --sub s --time {future}")
    assert run("%pulsar peek t --sub s -n 5").value == []


def test_partitioned_subs_peek_and_reset(run, broker) -> None:
    run("%pulsar create pt --partitions 2")
    run("%pulsar produce pt x --count 4")
    got = run("%pulsar consume pt --sub s --earliest --type shared -n 4 --timeout 500")
    assert len(got.value) == 4
    assert run("%pulsar subs pt").value == ["s"]
    run("%pulsar reset-cursor pt --sub s --earliest")
    assert len(run("%pulsar peek pt --sub s -n 10").value) == 4


# -- widgets ----------------------------------------------------------------------------------


def test_show_live_views(run, broker) -> None:
    pytest.importorskip("plotly")
    from pulsarlab.widgets import VIEWS, HashRangeView, LiveBinding, StatsView

    run("%pulsar produce shown a --key k")
    run("%pulsar consume shown --sub ks --type key_shared --earliest -n 1")
    ran = run("%pulsar show ranges shown --sub ks")
    assert ran.success, ran.out
    view = ran.value
    assert isinstance(view, HashRangeView)
    assert isinstance(view.source, LiveBinding)
    assert view.source.running
    assert view.source.subscription == "ks"
    assert view.source.topic == "persistent://public/default/shown"

    # TOPIC defaults to the last one used, --sub to the only subscription
    default = run("%pulsar show cursor").value
    assert isinstance(default, VIEWS["cursor"])
    assert default.source.subscription == "ks"
    assert broker.status()["live_views"] == 2

    stats = run("%pulsar show stats shown").value
    assert isinstance(stats, StatsView)

    run("%pulsar stop")  # stops the bindings with the broker
    assert not view.source.running and not default.source.running


def test_show_needs_a_subscription_choice(run, broker) -> None:
    pytest.importorskip("plotly")
    run("%pulsar consume two --sub a --timeout 50")
    run("%pulsar consume two --sub b --timeout 50")
    broker.last_subscription = None
    ran = run("%pulsar show flow two")
    assert_one_line_error(ran, "%pulsar show: pick a subscription with --sub: a, b")
    assert_one_line_error(run("%pulsar show flow missing"),
                          "%pulsar show: Topic persistent://public/default/missing not "
                          "found")
    run("%pulsar create nosubs")
    ran = run("%pulsar show flow nosubs")
    assert_one_line_error(
        ran, "%pulsar show: persistent://public/default/nosubs has no subscription yet: "
             "give one with --sub S"
    )


# -- errors: one line, failed cell --------------------------------------------------------------


def test_errors_without_a_broker(run, runtime) -> None:
    hint = "no broker: run %pulsar start (or %pulsar connect zmq://host:port) first"
    for line, sub in (("%pulsar topics", "topics"), ("%pulsar produce t x", "produce"),
                      ("%pulsar consume t --sub s", "consume"), ("%pulsar stats t", "stats"),
                      ("%pulsar show ranges t --sub s", "show")):
        assert_one_line_error(run(line), f"%pulsar {sub}: {hint}")


def test_usage_errors(run, broker) -> None:
    cases = {
        "%pulsar consume t": "%pulsar consume: the following arguments are required: --sub "
                             "(see %pulsar consume --help)",
        "%pulsar produce t x --count 0": "%pulsar produce: argument --count: must be at least "
                                         "1, not 0 (see %pulsar produce --help)",
        "%pulsar create t --partitions many": "%pulsar create: argument --partitions: not a "
                                              "number: 'many' (see %pulsar create --help)",
        "%pulsar reset-cursor t --sub s": "%pulsar reset-cursor: one of the arguments "
            "--earliest --latest --time is required (see %pulsar reset-cursor --help)",
        "%pulsar produce t": "%pulsar produce: give a VALUE (or use %%pulsar produce TOPIC with "
                             "one message per line)",
        "%pulsar produce 'unclosed": "%pulsar: cannot parse the line: No closing quotation",
        "%pulsar stats": "%pulsar stats: the following arguments are required: TOPIC "
                         "(see %pulsar stats --help)",
        "%pulsar start --set oops": "%pulsar start: argument --set: settings are NAME=VALUE, "
                                    "not 'oops' (see %pulsar start --help)",
        "%pulsar show nothing t": "%pulsar show: unknown widget 'nothing'; choose from ranges, "
                                  "ring, failover, cursor, timeline, flow, dashboard, stats, lag",
        "%pulsar spark stream status nope": "%pulsar spark: no streaming query named nope",
        "%pulsar spark stream stop nope": "%pulsar spark: no streaming query named nope",
        "%%pulsar stats t\nbody": "%%pulsar takes a cell only as 'produce TOPIC' or "
                                  "'spark TOPIC'",
        "%%pulsar produce t\n\n": "%%pulsar produce: the cell has no message (one message "
                                  "per line)",
        "%%pulsar produce t x\ny": "%%pulsar produce: give the messages either on the line "
                                   "or in the cell",
    }
    for line, expected in cases.items():
        assert_one_line_error(run(line), expected)
    # argparse words the choices differently across Python versions: check the start
    for line, start in (
        ("%pulsar bogus", "%pulsar: argument SUBCOMMAND: invalid choice: 'bogus' (choose from"),
        ("%pulsar consume t --sub s --type fancy",
         "%pulsar consume: argument --type: invalid choice: 'fancy' (choose from"),
    ):
        ran = run(line)
        assert ran.success is False
        assert ran.out.startswith(start)
        assert "\n" not in ran.out.strip() and "Traceback" not in ran.out


def test_broker_errors(run, broker) -> None:
    assert_one_line_error(run("%pulsar stats missing"),
                          "%pulsar stats: Topic persistent://public/default/missing not "
                          "found")
    run("%pulsar create dup")
    ran = run("%pulsar create dup")
    assert ran.success is False and ran.out.startswith("%pulsar create: ")
    assert "\n" not in ran.out.strip()
    run("%pulsar produce r x")
    assert_one_line_error(run("%pulsar reset-cursor r --sub nosub --earliest"),
                          "%pulsar reset-cursor: subscription 'nosub' not found on "
                          "persistent://public/default/r")
    # Peeking a subscription that does not exist makes it at the earliest message, as
    # Pulsar's broker does (checked against it in tests/conformance/test_rest_paths.py).
    assert run("%pulsar peek r --sub nosub").success
    assert_one_line_error(run("%pulsar produce ftp://x/y/z x"),
                          "%pulsar produce: invalid topic name 'ftp://x/y/z': domain must be "
                          "'persistent' or 'non-persistent', not 'ftp'")
    # Pulsar's NamedEntity characters for the topic's own name too: nothing is created
    assert_one_line_error(run("%pulsar produce 'bad topic!' x"),
                          "%pulsar produce: invalid topic name 'bad topic!': topic 'bad topic!' "
                          "may only contain letters, digits and - _ = : .")
    assert "bad topic" not in run("%pulsar topics").out


def test_start_errors(run, runtime, tmp_path) -> None:
    assert_one_line_error(run(f"%pulsar start --memory --data-dir {tmp_path}"),
                          "%pulsar start: --memory keeps nothing on disk: drop --data-dir")
    assert_one_line_error(run("%pulsar start --memory --set no_such_setting=1"),
                          "%pulsar start: unknown broker setting 'no_such_setting'")
    assert_one_line_error(run("%pulsar start --memory --set max_message_size=big"),
                          "%pulsar start: broker setting max_message_size must be an int, "
                          "not 'big'")
    assert runtime.mode is None
    with Broker(storage="memory") as other:
        port = other.port
        ran = run(f"%pulsar start --memory --port {port}")
        assert ran.success is False
        assert ran.out.startswith("%pulsar start: ") and "\n" not in ran.out.strip()
    assert runtime.mode is None
    assert_one_line_error(run("%pulsar connect zmq://127.0.0.1:1 --timeout 200"),
                          "%pulsar connect: zmq://127.0.0.1:1 is not a broker started on this "
                          "machine: give its admin REST API with --admin-url http://host:port "
                          "(the web_url `pulsarlab broker` reports)")
    ran = run("%pulsar connect zmq://127.0.0.1:1 --admin-url http://127.0.0.1:1 --timeout 200")
    assert not ran.success and "\n" not in ran.out.strip()
    assert ran.out.startswith("%pulsar connect: no admin REST API answered at http://127.0.0.1:1")
    assert_one_line_error(run("%pulsar connect http://example.org"),
                          "%pulsar connect: service URL must look like zmq://host:port, not "
                          "'http://example.org'")


def test_errors_raise_a_magic_error_with_one_line_traceback(ip, broker) -> None:
    with pytest.raises(PulsarMagicError) as info:
        ip.run_line_magic("pulsar", "stats missing")
    assert info.value._render_traceback_() == [
        "%pulsar stats: Topic persistent://public/default/missing not found"
    ]


def test_interpolation_of_python_values(ip, run, broker) -> None:
    ip.user_ns["topic_name"] = "from-python"
    assert run("%pulsar produce {topic_name} plain").success
    # JSON braces are not an expression: IPython leaves the line as it is
    assert run("%pulsar produce from-python '{\"id\": 1}'").success
    got = run("%pulsar consume $topic_name --sub s --earliest --timeout 300").value
    assert [m["value"] for m in got] == ["plain", '{"id": 1}']
    assert got[0]["topic"] == "persistent://public/default/from-python"
