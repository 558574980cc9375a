"""Crash safety (R-STORE durability contract): a broker killed with SIGKILL at random points.

A broker subprocess serves one topic on a data directory while a producer process sends
with receipts and a consumer process receives and acknowledges (some messages are left
unacknowledged on purpose). At a seeded random point the broker gets SIGKILL, then both
clients; the broker restarts on the same data directory and the round is checked:

* every message whose send receipt the producer got is still there, at the position the
  receipt named, unless it was acknowledged (then trimming may have deleted it);
* an earliest reader sees each producer's messages in order, each once;
* the broker never counts as acknowledged a message no consumer acknowledged;
* the subscription redelivers exactly the messages its last persisted cursor state (read
  from the metadata store after the kill) does not cover: nothing acknowledged before the
  last persisted cursor update comes back, nothing unacknowledged is lost (at-least-once);
* a kill -9 leaves at most a torn tail: no corrupt entries, and nothing in the recovery
  log but torn-tail truncations and removals of files a crash left unlisted.

The verifying consumer then acknowledges everything and the next round starts on the same
broker: restarts pile up on one data directory. The subscription type, ack ratio
(individual and cumulative), producer pipelining, receiver queue and kill point are drawn
from a seeded generator per round. Scenarios: default ledgers with cursors saved every
250 ms or on every loop (strict); and kills during ledger rollover (5 or 3 entries per
ledger) and during trimming (retention checks every 20 ms, no subscription holding data).
The rollover scenarios guard against a fixed bug: the broker used to wedge on a rollover to
an empty ledger (``test_a_caught_up_consumer_survives_a_rollover_to_an_empty_ledger`` is the
smallest case).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pulsarlab import Admin, Client, ConsumerType, InitialPosition, MessageId

from .support import (
    SESSION,
    BrokerProcess,
    Child,
    CursorState,
    Position,
    persisted_cursor,
    wait_until,
)

TOPIC = "crash-safety"
READ_TIMEOUT_MS = 10_000
SUB_TYPES = ("Shared", "Exclusive", "Failover", "Key_Shared")




@dataclass(frozen=True)
class Scenario:
    settings: dict
    audit: bool  # a subscription that never acks: nothing is ever trimmed
    rounds: int


SCENARIOS = {
    # Default ledgers (no rollover); cursors saved at most every 250 ms (rate-limited like
    # the default 1 s, short enough for rounds of a fraction of a second).
    "plain": Scenario(
        {"managed_ledger_cursor_persist_interval_ms": 250}, audit=False, rounds=12
    ),
    # Strict: cursors saved on every loop of the broker.
    "strict": Scenario(
        {"managed_ledger_cursor_persist_interval_ms": 0}, audit=False, rounds=12
    ),
    # Rollover every 5 entries, nothing trimmed (a subscription that never acks).
    "rollover": Scenario(
        {"managed_ledger_max_entries_per_ledger": 5}, audit=True, rounds=8
    ),
    # Strict cursors, rollover every 5 entries, trimming every 20 ms.
    "strict-trim": Scenario(
        {
            "managed_ledger_max_entries_per_ledger": 5,
            "managed_ledger_cursor_persist_interval_ms": 0,
            "retention_check_interval_ms": 20,
        },
        audit=False,
        rounds=8,
    ),
    # Default cursor persistence, rollover every 3 entries, trimming every 20 ms.
    "trim": Scenario(
        {"managed_ledger_max_entries_per_ledger": 3, "retention_check_interval_ms": 20},
        audit=False,
        rounds=8,
    ),
}


def _scenario_params() -> list:
    return [
        name for name in SCENARIOS
    ]


@dataclass
class Model:
    """What the clients were told, across every round on one data directory."""

    receipts: dict[Position, str] = field(default_factory=dict)  # position -> payload
    acked: set[Position] = field(default_factory=set)  # individually acknowledged
    acked_up_to: Position | None = None  # highest cumulative acknowledgement

    def was_acked(self, position: Position) -> bool:
        if position in self.acked:
            return True
        return self.acked_up_to is not None and position <= self.acked_up_to


def _position(parts: list[str]) -> Position:
    return int(parts[0]), int(parts[1])


def _run_round(broker: BrokerProcess, rng: random.Random, round_no: int, model: Model,
               tag: str) -> None:
    """Producer and consumer processes work until the broker is killed at a random point."""
    sub_type = rng.choice(SUB_TYPES)
    ack = rng.choice((1.0, 0.9, 0.6))
    cumulative = rng.choice((0.0, 0.05)) if sub_type in ("Exclusive", "Failover") else 0.0
    kill_after = rng.randint(1, 250)
    extra_delay = rng.choice((0.0, 0.0, 0.002, 0.01, 0.03))
    producer = Child("produce", broker.service_url, TOPIC, f"{tag}-p{round_no}", 1_000_000,
                     "--keys", "7", "--pending", rng.choice(("1", "16", "64")))
    consumer = Child("consume", broker.service_url, TOPIC, "work", sub_type,
                     "--ack", ack - cumulative, "--cumulative", cumulative,
                     "--seed", rng.randrange(1 << 30), "--queue", rng.choice(("10", "100")))
    try:
        producer.wait_progress("R", kill_after, stall=3.0, timeout=20.0)
        if extra_delay:
            time.sleep(extra_delay)  # where the kill lands, not a wait for a result
    finally:
        broker.kill()
        producer.kill()
        consumer.kill()
    for index, *where in producer.events("R"):
        model.receipts[_position(where)] = f"{tag}-p{round_no}:{index}"
    for where in consumer.events("A"):
        model.acked.add(_position(where))
    for where in consumer.events("C"):
        position = _position(where)
        if model.acked_up_to is None or position > model.acked_up_to:
            model.acked_up_to = position


def _verify(broker: BrokerProcess, cursor: CursorState, model: Model, audit: bool,
            label: str) -> None:
    """Check the restarted broker against what the clients were told before the kill."""
    report = broker.topic_report(TOPIC)
    entries = report["entries"]
    backlog = report["subscriptions"]["work"]
    client = Client(broker.service_url, operation_timeout_seconds=15)
    try:
        reader = client.create_reader(TOPIC, MessageId.earliest)
        stored: dict[Position, str] = {}
        order: list[Position] = []
        for _ in range(entries):
            msg = reader.read_next(READ_TIMEOUT_MS)
            position = msg.message_id().position
            stored[position] = msg.data().decode()
            order.append(position)
        reader.close()
        assert order == sorted(set(order)), f"{label}: reader order {order}"

        # In order per producer, each message once.
        last: dict[str, int] = {}
        for position in order:
            name, index = stored[position].rsplit(":", 1)
            assert int(index) > last.get(name, -1), (
                f"{label}: {stored[position]} at {position} after index {last.get(name)}"
            )
            last[name] = int(index)

        # Every receipt is honoured (an acknowledged message may have been trimmed).
        for position, payload in model.receipts.items():
            if audit or not model.was_acked(position):
                assert stored.get(position) == payload, (
                    f"{label}: receipted {payload} at {position} is "
                    f"{stored.get(position, 'missing')}"
                )

        # The broker acknowledges nothing by itself.
        for position in order:
            if cursor.acked(position):
                assert model.was_acked(position), (
                    f"{label}: {stored[position]} at {position} is acknowledged in the "
                    "persisted cursor but no consumer acknowledged it"
                )

        # Redelivered: exactly what the persisted cursor does not cover.
        expected = {p for p in order if not cursor.acked(p)}
        assert backlog == len(expected), f"{label}: backlog {backlog}, expected {len(expected)}"
        consumer = client.subscribe(
            TOPIC, "work", consumer_type=ConsumerType.Shared,
            initial_position=InitialPosition.Earliest, receiver_queue_size=200,
        )
        got: list[Position] = []
        for _ in range(backlog):
            msg = consumer.receive(READ_TIMEOUT_MS)
            got.append(msg.message_id().position)
            model.acked.add(msg.message_id().position)
            consumer.acknowledge(msg)
        assert len(got) == len(set(got)), f"{label}: duplicates in {got}"
        assert set(got) == expected, (
            f"{label}: came back but acked in the persisted cursor: "
            f"{sorted(set(got) - expected)}; lost: {sorted(expected - set(got))}"
        )
        consumer.close()

        with Admin(broker.web_url) as admin:
            internal = admin.topics.get_internal_stats(TOPIC)
        assert internal["corruptEntries"] == [], f"{label}: {internal['corruptEntries']}"
    finally:
        client.close()
    # After a kill -9 recovery may only cut torn tails and remove files a crash left
    # unlisted; anything else (corruption, an unreadable ledger, a traceback) is a failure.
    # INFO lines (the broker saying where it serves) are not findings.
    unexpected = [
        line for line in broker.log_text().splitlines()
        if line.strip() and " INFO " not in line
        and "torn tail" not in line and "removing segment file" not in line
    ]
    assert not unexpected, f"{label}: unexpected broker log lines:\n" + "\n".join(unexpected)


@pytest.mark.parametrize("name", _scenario_params())
def test_sigkill_at_random_points_loses_nothing_acknowledged_by_receipt(
    tmp_path: Path, name: str
) -> None:
    scenario = SCENARIOS[name]
    rng = random.Random(f"crash-safety-{name}")
    data_dir = tmp_path / "data"
    broker = BrokerProcess(data_dir, scenario.settings, tmp_path / "broker-0.log").start()
    try:
        with Admin(broker.web_url) as admin:
            admin.topics.create_subscription(TOPIC, "work", "earliest")
            if scenario.audit:
                admin.topics.create_subscription(TOPIC, "audit", "earliest")
        model = Model()
        for round_no in range(scenario.rounds):
            SESSION.check(f"crash safety {name}, round {round_no}", reserve=5.0)
            _run_round(broker, rng, round_no, model, name)
            cursor = CursorState(persisted_cursor(data_dir, TOPIC, "work"))
            broker = BrokerProcess(
                data_dir, scenario.settings, tmp_path / f"broker-{round_no + 1}.log"
            ).start()
            _verify(broker, cursor, model, scenario.audit, f"{name} round {round_no}")
        assert len(model.receipts) >= scenario.rounds
    finally:
        broker.kill()


def test_a_caught_up_consumer_survives_a_rollover_to_an_empty_ledger(tmp_path: Path) -> None:
    """The smallest case behind the rollover scenarios: read a full ledger to its end, let
    the broker roll over to a new (empty) ledger, then acknowledge: the broker must keep
    serving (it used to spin in the dispatcher)."""
    topic = "rollover-hang"
    broker = BrokerProcess(
        tmp_path / "data", {"managed_ledger_max_entries_per_ledger": 5}
    ).start()
    client = Client(broker.service_url, operation_timeout_seconds=5)
    try:
        consumer = client.subscribe(topic, "s", consumer_type=ConsumerType.Shared,
                                    acknowledgements_group_time_ms=0)
        producer = client.create_producer(topic, send_timeout_millis=5000)
        for i in range(5):
            producer.send(f"m{i}".encode())
        held = [consumer.receive(READ_TIMEOUT_MS) for _ in range(5)]
        with Admin(broker.web_url, timeout_seconds=5) as admin:
            wait_until(
                lambda: len(admin.topics.get_internal_stats(topic)["ledgers"]) == 2, 10,
                "the full ledger to roll over",
            )
        consumer.acknowledge(held[0])  # sent at once, ahead of the next send
        producer.send(b"after the rollover")  # a wedged broker never answers
        assert consumer.receive(READ_TIMEOUT_MS).data() == b"after the rollover"
    finally:
        client.shutdown()
        broker.kill()
