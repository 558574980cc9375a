"""A producer's receipts: slots freed at once, callbacks in order with their message ids."""

from __future__ import annotations

import concurrent.futures
from typing import Any

from pulsarlab.broker import MessageId
from pulsarlab.broker.client.batch import OutgoingMessage
from pulsarlab.broker.client.enums import Result
from pulsarlab.broker.client.partition_producer import PartitionProducer, ProducerConfig
from pulsarlab.broker.format.batch import encode_pulsar_batch


class Conn:
    closed = False
    max_message_size = 5 << 20

    def __init__(self) -> None:
        self.posted: list[Any] = []
        self.sent: list[dict[str, Any]] = []

    def new_id(self) -> int:
        return 1

    def post(self, fn: Any) -> None:
        self.posted.append(fn)

    encode_batch = staticmethod(encode_pulsar_batch)

    def send_message(self, producer_id: int, sequence_id: int, metadata: Any, payload: bytes,
                     num_messages: int = 1, highest_sequence_id: int | None = None) -> None:
        self.sent.append({"producer_id": producer_id, "sequence_id": sequence_id})

    def schedule(self, delay_ms: float, fn: Any) -> Any:
        return None


class Executor:
    def __init__(self) -> None:
        self.tasks: list[Any] = []

    def submit(self, fn: Any, *args: Any) -> None:
        self.tasks.append(lambda: fn(*args))

    def submit_callbacks(self, result: Any, calls: list) -> None:
        self.submit(lambda: [cb(result, arg) for cb, arg in calls])

    def run(self) -> None:
        tasks, self.tasks = self.tasks, []
        for task in tasks:
            task()


class Client:
    def __init__(self) -> None:
        self._conn = Conn()
        self._executor = Executor()


def producer(batching: bool) -> tuple[PartitionProducer, Client]:
    client = Client()
    config = ProducerConfig(batching_enabled=batching, batching_max_messages=3,
                            send_timeout_millis=0)
    return PartitionProducer(client, "persistent://public/default/t", -1, config), client


def test_a_batch_receipt_runs_each_callback_in_order_with_its_id():
    p, client = producer(batching=True)
    heard: list[tuple[Result, MessageId | None, int]] = []
    for i in range(3):
        p.submit(OutgoingMessage(b"m"), (lambda r, mid, i=i: heard.append((r, mid, i)))
                 if i != 1 else None, None)
    for task in client._conn.posted:
        task()
    assert p._pending_count == 3 and len(client._conn.sent) == 1
    p.on_send_receipt({"sequence_id": 0, "message_id": [7, 9, -1]})
    assert p._pending_count == 0  # the slots are free before any callback runs
    assert heard == []
    client._executor.run()
    assert heard == [
        (Result.Ok, MessageId(-1, 7, 9, 0, 3), 0), (Result.Ok, MessageId(-1, 7, 9, 2, 3), 2)]
    assert heard[0][1].batch_size() == 3


def test_a_blocking_send_in_the_batch_gets_its_id_on_the_receipt():
    p, client = producer(batching=True)
    future: concurrent.futures.Future = concurrent.futures.Future()
    heard: list[MessageId | None] = []
    p.submit(OutgoingMessage(b"a"), lambda r, mid: heard.append(mid), None)
    p.submit(OutgoingMessage(b"b"), future, None)
    p.submit(OutgoingMessage(b"c"), None, None)
    for task in client._conn.posted:
        task()
    p.on_send_receipt({"sequence_id": 0, "message_id": [7, 9, -1]})
    assert future.result(0) == MessageId(-1, 7, 9, 1, 3)
    client._executor.run()
    assert heard == [MessageId(-1, 7, 9, 0, 3)]


def test_an_unbatched_receipt_gives_an_id_without_a_batch_index():
    p, client = producer(batching=False)
    heard: list[MessageId | None] = []
    p.submit(OutgoingMessage(b"a"), lambda r, mid: heard.append(mid), None)
    for task in client._conn.posted:
        task()
    p.on_send_receipt({"sequence_id": 0, "message_id": [7, 9, -1]})
    client._executor.run()
    assert heard == [MessageId(-1, 7, 9)] and heard[0].batch_index() == -1
