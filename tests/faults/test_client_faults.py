"""Consumer and client faults: killed consumers, silent clients, producers that retry.

* A consumer process killed with SIGKILL in the middle of a batch (the producer batches
  10 messages per entry): its unacknowledged messages reach the surviving consumer
  processes, nothing is lost, and no message a survivor acknowledged comes back.
* A client that stops answering heart-beats (its process is stopped with SIGSTOP) is
  closed by the broker, and the messages it held go to the other consumer.
* With de-duplication on, a producer that retries after its sends timed out (the broker
  was killed) resends the same producer name and sequence ids to the restarted broker:
  nothing is stored twice, receipted messages keep their positions, across two restarts.
"""

from __future__ import annotations

import random
import signal
from pathlib import Path

from pulsarlab import Admin, Broker, Client, ConsumerType, InitialPosition, MessageId, Result

from .support import SESSION, BrokerProcess, Child, wait_until

WAIT_MS = 10_000


def _payload_index(payload: str) -> int:
    return int(payload.rsplit(":", 1)[1])


def test_consumer_killed_mid_batch_hands_its_messages_to_the_others(tmp_path: Path) -> None:
    SESSION.check("consumer killed mid-batch")
    total, batch = 600, 10
    topic, sub = "killed-mid-batch", "shared"
    # A killed process's ZeroMQ peer goes quiet rather than away: the broker notices it by
    # heart-beats (closed after two silent keep-alive intervals).
    broker = BrokerProcess(tmp_path / "data", {"keep_alive_interval_seconds": 1}).start()
    children: list[Child] = []
    try:
        url = broker.service_url
        doomed = Child("consume", url, topic, sub, "Shared", "--name", "doomed",
                       "--ack", "0.5", "--seed", "7", "--hold", "37", "--queue", "200")
        survivors = [
            Child("consume", url, topic, sub, "Shared", "--name", f"survivor-{i}",
                  "--queue", "50")
            for i in range(2)
        ]
        children += [doomed, *survivors]
        for child in children:
            child.wait_ready()
        producer = Child("produce", url, topic, "batcher", total, "--batch", batch)
        children.append(producer)
        doomed.wait_for(lambda lines: "HOLD" in lines, 30, "the doomed consumer to hold")
        doomed.kill()  # 37 messages in: the middle of its fourth batch
        producer.wait_for(lambda lines: "DONE" in lines, 30, "every receipt")

        def drained() -> bool:
            with Admin(broker.web_url) as admin:
                stats = admin.topics.get_stats(topic)["subscriptions"][sub]
            return stats["msgBacklog"] == 0 and stats["unackedMessages"] == 0

        wait_until(drained, 30, "the survivors to acknowledge everything", interval=0.1)
        for child in survivors:
            child.kill()
        producer.kill()

        receipts = producer.events("R")
        assert len(receipts) == total and not producer.events("E")
        assert {int(r[3]) for r in receipts} == set(range(batch)), "the producer did not batch"
        doomed_got = {_payload_index(g[3]) for g in doomed.events("G")}
        doomed_acked = {(int(a[0]), int(a[1]), int(a[2])) for a in doomed.events("A")}
        assert len(doomed_got) >= 37 and len(doomed_acked) < len(doomed_got)
        where = {(int(g[0]), int(g[1]), int(g[2])): _payload_index(g[3])
                 for g in doomed.events("G")}
        acked_by_doomed = {where[a] for a in doomed_acked}

        acked_by_survivors: list[int] = []
        for child in survivors:
            got = {(int(g[0]), int(g[1]), int(g[2])): _payload_index(g[3])
                   for g in child.events("G")}
            acked_by_survivors += [got[(int(a[0]), int(a[1]), int(a[2]))]
                                   for a in child.events("A")]
        # No message a survivor acknowledged came back to any survivor.
        assert len(acked_by_survivors) == len(set(acked_by_survivors))
        # Nothing is lost: what the doomed consumer did not acknowledge, the others did.
        assert set(range(total)) - acked_by_doomed <= set(acked_by_survivors)
        assert set(acked_by_survivors) <= set(range(total))
        assert doomed_got - acked_by_doomed, "the doomed consumer held nothing unacked"
    finally:
        for child in children:
            child.kill()
        broker.kill()


def test_a_client_that_stops_answering_heartbeats_is_closed(tmp_path: Path) -> None:
    topic, sub = "silent-client", "shared"
    with Broker(str(tmp_path / "data"), keep_alive_interval_seconds=0.3) as broker:
        client = Client(broker.service_url)
        silent = Child("consume", broker.service_url, topic, sub, "Shared", "--name", "silent",
                       "--ack", "0", "--hold", "5", "--queue", "1000")
        try:
            silent.wait_ready()
            producer = client.create_producer(topic)
            for i in range(5):
                producer.send(f"m:{i}".encode())
            silent.wait_for(lambda lines: "HOLD" in lines, 30, "the silent client to hold")
            held = sorted(_payload_index(g[3]) for g in silent.events("G"))
            assert held == list(range(5))
            other = client.subscribe(topic, sub, consumer_type=ConsumerType.Shared,
                                     consumer_name="other")
            silent.send_signal(signal.SIGSTOP)  # alive, connected, but answers nothing

            def consumers() -> list[str]:
                stats = broker.call(lambda service: service.topic_stats(topic))
                return [c["consumerName"] for c in stats["subscriptions"][sub]["consumers"]]

            wait_until(lambda: consumers() == ["other"], 15,
                       "the broker to close the silent client", interval=0.05)
            got = sorted(_payload_index(other.receive(WAIT_MS).data().decode())
                         for _ in range(5))
            assert got == held
            stats = broker.call(lambda service: service.topic_stats(topic))
            assert stats["subscriptions"][sub]["consumers"][0]["unackedMessages"] == 5
        finally:
            silent.send_signal(signal.SIGCONT)
            silent.kill()
            client.close()


def _send_all(url: str, name: str, topic: str, length: int, kill: BrokerProcess | None,
              kill_at: int, receipts: dict[int, list[tuple[int, int]]],
              highest_sent: int) -> dict[int, Result]:
    """One attempt: send indexes 0..length-1 (sequence ids 1..length) under ``name``; with
    ``kill``, SIGKILL that broker right after index ``kill_at`` was handed over."""
    client = Client(url, operation_timeout_seconds=10)
    outcomes: dict[int, Result] = {}

    def done(index: int):
        def callback(result: Result, msg_id: MessageId | None) -> None:
            if result == Result.Ok:
                receipts.setdefault(index, []).append(msg_id.position)
            outcomes[index] = result

        return callback

    try:
        producer = client.create_producer(
            topic, producer_name=name, send_timeout_millis=1500,
            block_if_queue_full=True, max_pending_messages=50,
        )
        # The broker remembers the highest sequence id it stored under this name: at least
        # every receipted one, at most the last one sent before the kill.
        if receipts:
            assert max(receipts) + 1 <= producer.last_sequence_id() <= highest_sent
        # Every sequence id again, under the same producer name (from 1: as with the
        # official client, a falsy sequence_id means "assign the next one").
        for index in range(length):
            producer.send_async(f"{name}:{index}".encode(), done(index), sequence_id=index + 1)
            if kill is not None and index == kill_at:
                wait_until(lambda: len(outcomes) >= kill_at - 30, 15, "receipts before the kill")
                kill.kill()
        wait_until(lambda: len(outcomes) == length, 30, "every send to complete")
    finally:
        client.shutdown()
    return outcomes


def test_producer_retrying_after_timeouts_with_deduplication_stores_nothing_twice(
    tmp_path: Path,
) -> None:
    name, topic = "dedup-producer", "dedup-retry"
    settings = {"broker_deduplication_enabled": True}
    rng = random.Random("dedup")
    data_dir = tmp_path / "data"
    broker = BrokerProcess(data_dir, settings, tmp_path / "broker-0.log").start()
    receipts: dict[int, list[tuple[int, int]]] = {}
    lengths = (150, 250, 300)
    highest_sent = 0
    try:
        for attempt, length in enumerate(lengths):
            SESSION.check(f"de-duplication attempt {attempt}")
            last = attempt == len(lengths) - 1
            kill_at = length - rng.randint(10, 40)
            outcomes = _send_all(broker.service_url, name, topic, length,
                                 None if last else broker, kill_at, receipts, highest_sent)
            highest_sent = kill_at + 1
            failed = sorted(i for i, r in outcomes.items() if r != Result.Ok)
            if last:
                assert failed == []
            else:
                assert failed, "the kill should leave sends without receipts"
                assert {outcomes[i] for i in failed} == {Result.Timeout}
                broker = BrokerProcess(data_dir, settings,
                                       tmp_path / f"broker-{attempt + 1}.log").start()

        with Client(broker.service_url) as client:
            reader = client.create_reader(topic, MessageId.earliest)
            stored = []
            for _ in range(lengths[-1]):
                msg = reader.read_next(WAIT_MS)
                stored.append((msg.sequence_id(), msg.data().decode(), msg.message_id().position))
            assert [s[0] for s in stored] == list(range(1, lengths[-1] + 1))
            assert [s[1] for s in stored] == [f"{name}:{i}" for i in range(lengths[-1])]
            for seq, _payload, position in stored:
                # A receipt names where the message is or, for a send the broker dropped as
                # a duplicate, -1:-1 as Pulsar's does (the first one too, when the kill lost
                # the receipt of the send that stored it).
                assert receipts[seq - 1], seq
                assert all(p in (position, (-1, -1)) for p in receipts[seq - 1]), (
                    seq, receipts[seq - 1])
            consumer = client.subscribe(topic, "check", initial_position=InitialPosition.Earliest)
            assert consumer.get_last_message_id().position == stored[-1][2], "stored twice"
    finally:
        broker.kill()
