"""R-WIRE: the ZeroMQ server validates every frame and keeps serving everyone."""

from __future__ import annotations

import itertools

import msgpack
import pytest
import zmq

from pulsarlab import Admin, Broker
from pulsarlab.broker import wire

from .wire_client import RawClient

_TOPICS = itertools.count()


@pytest.fixture(scope="module")
def broker():
    with Broker(storage="memory", max_message_size=64 * 1024) as b:
        yield b


@pytest.fixture
def healthy(broker):
    """A client with a producer and a Shared consumer, checked after each bad input."""
    client = RawClient(broker.service_url)
    topic = f"healthy-{next(_TOPICS)}"
    assert client.request("PRODUCER", topic=topic, producer_id=1).name == "PRODUCER_SUCCESS"
    reply = client.request("SUBSCRIBE", topic=topic, subscription="s", consumer_id=1,
                           sub_type="Shared")
    assert reply.name == "SUCCESS"
    client.send("FLOW", consumer_id=1, permits=1000)
    state = {"seq": 0}

    def check() -> None:
        seq = state["seq"]
        state["seq"] += 1
        client.send("SEND", 0, [f"m{seq}".encode()], producer_id=1, sequence_id=seq, metadata={})
        receipt = client.wait_for("SEND_RECEIPT")
        assert receipt["sequence_id"] == seq
        message = client.wait_for("MESSAGE")
        assert message.payloads[0].endswith(f"m{seq}".encode())

    check()
    yield check
    client.request("CLOSE_CONSUMER", consumer_id=1)
    client.close()


BAD_FRAMES = {
    "garbage": [b"\xde\xad\xbe\xef"],
    "truncated-msgpack": [msgpack.packb({"v": 1, "cmd": "PING", "rid": 1})[:-2]],
    "not-a-map": [msgpack.packb([1, 2, 3])],
    "wrong-version": [msgpack.packb({"v": 99, "cmd": "PING", "rid": 5})],
    "unknown-command": [msgpack.packb({"v": 1, "cmd": "LAUNCH", "rid": 6})],
    "missing-field": [msgpack.packb({"v": 1, "cmd": "FLOW", "rid": 7, "consumer_id": 1})],
    "wrong-type": [msgpack.packb({"v": 1, "cmd": "FLOW", "rid": 8, "consumer_id": "one",
                                  "permits": 1})],
    "bool-for-int": [msgpack.packb({"v": 1, "cmd": "FLOW", "rid": 9, "consumer_id": True,
                                    "permits": 1})],
    "payload-on-flow": [msgpack.packb({"v": 1, "cmd": "PING", "rid": 10}), b"extra"],
    "send-without-payload": [msgpack.packb({"v": 1, "cmd": "SEND", "rid": 11, "producer_id": 1,
                                            "sequence_id": 1, "metadata": {}})],
    "negative-rid": [msgpack.packb({"v": 1, "cmd": "PING", "rid": -4})],
    "bad-metadata-field": [msgpack.packb({"v": 1, "cmd": "SEND", "rid": 12, "producer_id": 1,
                                          "sequence_id": 1, "metadata": {"nope": 1}}), b"x"],
}


@pytest.mark.parametrize("name", sorted(BAD_FRAMES))
def test_bad_frames_get_an_error_naming_the_problem(broker, healthy, name):
    bad = RawClient(broker.service_url)
    bad.send_raw(BAD_FRAMES[name])
    reply = bad.recv()
    if name == "bad-metadata-field":
        assert reply.name in ("ERROR", "SEND_ERROR")
    else:
        assert reply.name == "ERROR"
    assert reply["message"]
    assert "\n" not in reply["message"]
    bad.close()
    healthy()


def test_commands_before_connect_are_refused(broker, healthy):
    raw = RawClient(broker.service_url, connect=False)
    reply = raw.request("PRODUCER", topic="t", producer_id=1)
    assert reply.name == "ERROR" and reply["code"] == "NotConnected"
    raw.close()
    healthy()


def test_unknown_ids_and_rule_violations_are_errors(broker, healthy):
    c = RawClient(broker.service_url)
    assert c.request("FLOW", consumer_id=42, permits=1)["code"] == "ConsumerNotFound"
    assert c.request("SUBSCRIBE", topic="bad topic/x/y/z", subscription="s", consumer_id=1,
                     sub_type="Shared")["code"] == "InvalidTopicName"
    assert c.request("SUBSCRIBE", topic="ok-t", subscription="s", consumer_id=1,
                     sub_type="Nope")["code"] == "InvalidConfiguration"
    assert c.request("SUBSCRIBE", topic="ok-t", subscription="s", consumer_id=1,
                     sub_type="Shared").name == "SUCCESS"
    reply = c.request("ACK", consumer_id=1, positions=[[0, 0]], cumulative=True)
    # Pulsar's broker logs a cumulative ack on a Shared subscription and ignores it.
    assert reply.name == "SUCCESS"
    c.close()
    healthy()


def test_oversize_message_is_refused_with_message_too_big(broker, healthy):
    c = RawClient(broker.service_url)
    assert c.request("PRODUCER", topic="big", producer_id=1).name == "PRODUCER_SUCCESS"
    c.send("SEND", 0, [b"x" * (64 * 1024 + 1)], producer_id=1, sequence_id=0, metadata={})
    error = c.wait_for("SEND_ERROR")
    assert error["code"] == "MessageTooBig"
    c.close()
    healthy()


def test_huge_frame_drops_only_that_client(broker, healthy):
    c = RawClient(broker.service_url)
    c.send_raw([wire.encode("PING", 1)[0], b"x" * (3 << 20)])  # over the frame limit
    healthy()
    c.close()


def test_stats_use_pulsar_field_names(broker):
    c = RawClient(broker.service_url)
    c.request("PRODUCER", topic="stats-t", producer_id=1)
    c.request("SUBSCRIBE", topic="stats-t", subscription="s", consumer_id=1,
              sub_type="Key_Shared", consumer_name="ks-1")
    with Admin(broker.service_url) as admin:
        stats = admin.topics.get_stats("stats-t")
        internal = admin.topics.get_internal_stats("stats-t")
    sub = stats["subscriptions"]["s"]
    for key in ("type", "msgBacklog", "unackedMessages", "consumersAfterMarkDeletePosition",
                "consumers"):
        assert key in sub
    consumer = sub["consumers"][0]
    for key in ("consumerName", "availablePermits", "unackedMessages", "keyHashRanges"):
        assert key in consumer
    assert consumer["consumerName"] == "ks-1"
    for key in ("ledgers", "cursors", "lastConfirmedEntry"):
        assert key in internal
    for key in ("markDeletePosition", "individuallyDeletedMessages", "readPosition"):
        assert key in internal["cursors"]["s"]
    c.close()


def test_event_stream_publishes_state_changes(broker):
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(broker.events_url)
    c = RawClient(broker.service_url)
    c.request("PRODUCER", topic="events-t", producer_id=1)
    seen: list[bytes] = []
    for seq in range(200):
        c.send("SEND", 0, [b"e"], producer_id=1, sequence_id=seq, metadata={})
        c.wait_for("SEND_RECEIPT")
        if sub.poll(50):
            kind, _body = sub.recv_multipart()
            seen.append(kind)
            break
    assert seen, "no event arrived"
    sub.close()
    c.close()


def test_call_runs_on_the_broker_thread(broker):
    names = broker.call(lambda service: service.list_topics())
    assert isinstance(names, list)


def test_heartbeat_closes_a_silent_client_and_redelivers(tmp_path):
    with Broker(storage="memory", keep_alive_interval_seconds=0.2) as b:
        silent = RawClient(b.service_url)
        silent.request("PRODUCER", topic="hb", producer_id=1)
        silent.request("SUBSCRIBE", topic="hb", subscription="s", consumer_id=1,
                       sub_type="Shared")
        silent.send("FLOW", consumer_id=1, permits=100)
        for seq in range(3):
            silent.send("SEND", 0, [b"hb"], producer_id=1, sequence_id=seq, metadata={})
        got = 0
        while got < 3:
            got += len(silent.wait_for("MESSAGE")["entries"])
        silent.answer_pings = False
        other = RawClient(b.service_url)
        other.request("SUBSCRIBE", topic="hb", subscription="s", consumer_id=1,
                      sub_type="Shared")
        other.send("FLOW", consumer_id=1, permits=100)
        received = 0
        while received < 3:
            received += len(other.wait_for("MESSAGE", timeout_ms=15_000)["entries"])
        assert received == 3
        other.close()
        silent.close()


def test_failed_start_reports_and_stops_cleanly(broker):
    """A port in use: start() raises, and stop() returns instead of hanging."""
    taken = int(broker.service_url.rsplit(":", 1)[1])
    second = Broker(storage="memory", port=taken)
    with pytest.raises(zmq.ZMQError):
        second.start()
    second.stop(timeout=5)


def test_receipts_of_a_burst_arrive_once_each_in_send_order(broker):
    c = RawClient(broker.service_url)
    c.request("PRODUCER", topic=f"burst-{next(_TOPICS)}", producer_id=1)
    for seq in range(200):
        c.send("SEND", 0, [b"b"], producer_id=1, sequence_id=seq, metadata={})
    got = [c.wait_for("SEND_RECEIPT")["sequence_id"] for _ in range(200)]
    assert got == list(range(200))
    assert c.request("PING").name == "PONG"  # whatever else came before it is in pushed
    assert not [p for p in c.pushed if p.name == "SEND_RECEIPT"]  # no receipt twice
    c.close()


def test_consecutive_receipts_of_one_producer_are_packed_into_send_receipts():
    from pulsarlab.broker import BrokerService, BrokerSettings, ManualClock
    from pulsarlab.broker.actions import SendError, SendReceipt
    from pulsarlab.broker.security import Authenticator
    from pulsarlab.broker.storage import MemoryStorage
    from pulsarlab.broker.zmq_session import ServerCnx, ZmqProtocol

    settings = BrokerSettings()
    sent = []
    protocol = ZmqProtocol(
        BrokerService(MemoryStorage(), ManualClock(), settings), settings,
        Authenticator(settings),
        send=lambda conn, frames: sent.append(
            (conn.identity, wire.decode(frames, wire.BROKER_COMMANDS))
        ),
        flush=lambda: None, now_ms=lambda: 0,
    )
    a, other = ServerCnx(b"a", connected=True), ServerCnx(b"o", connected=True)
    a.producer_ids = {10: 1, 11: 2}
    other.producer_ids = {12: 1}
    protocol.connections.update({b"a": a, b"o": other})
    protocol.handle_actions([
        SendReceipt(10, a, 0, 5, 0, -1),
        SendReceipt(10, a, 1, 5, 1, -1),
        SendReceipt(11, a, 7, 6, 0, 2),  # another producer: a new message
        SendError(10, a, 2, "PersistenceError", "disk"),
        SendReceipt(10, a, 3, 5, 2, -1),  # after an error: its own message
        SendReceipt(12, other, 0, 7, 0, -1),
        SendReceipt(12, other, 1, 7, 1, -1),
    ])
    shape = [(ident, cmd.name, cmd["producer_id"]) for ident, cmd in sent]
    assert shape == [
        (b"a", "SEND_RECEIPTS", 1), (b"a", "SEND_RECEIPT", 2), (b"a", "SEND_ERROR", 1),
        (b"a", "SEND_RECEIPT", 1), (b"o", "SEND_RECEIPTS", 1),
    ]
    first = wire.split_receipts(sent[0][1])
    assert [(r["sequence_id"], r["message_id"]) for r in first] == [
        (0, [5, 0, -1, -1]), (1, [5, 1, -1, -1]),
    ]
    assert sent[1][1]["message_id"] == [6, 0, 2, -1]


@pytest.mark.parametrize("item", [[1, 2, 3], [1, 2, 3, "4"], "x", [1, 2, 3, True]])
def test_malformed_send_receipts_items_are_a_protocol_error(item):
    cmd = wire.decode(
        wire.encode("SEND_RECEIPTS", 0, producer_id=1, receipts=[[0, 1, 2, 3], item]),
        wire.BROKER_COMMANDS,
    )
    with pytest.raises(wire.ProtocolError, match="SEND_RECEIPTS items"):
        wire.split_receipts(cmd)
