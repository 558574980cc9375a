"""A slow consumer never makes the broker read (and so hold) more than its permits allow.

The entries a dispatcher reads from the durable store are counted at the storage layer:
for unbatched entries the reads never pass the permits granted; for batched entries the
overshoot is at most one read (``dispatcher_max_read_batch_size`` entries), parked in the
replay set as positions only, and a consumer without permits causes no reads however
much is published.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pulsarlab.broker import BrokerService, ManualClock, MessageMetadata, SubType
from pulsarlab.broker.actions import Deliver
from pulsarlab.broker.storage import DurableStorage
from pulsarlab.broker.storage import durable as durable_module

TOPIC = "persistent://public/default/slow"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> set[tuple[int, int]]:
    """Every position read from the durable managed ledger (cache or disk)."""
    seen: set[tuple[int, int]] = set()
    real = durable_module.DurableManagedLedger._store_read

    def counting(self, ledger_id: int, first: int, last: int):  # type: ignore[no-untyped-def]
        seen.update((ledger_id, e) for e in range(first, last + 1))
        return real(self, ledger_id, first, last)

    monkeypatch.setattr(durable_module.DurableManagedLedger, "_store_read", counting)
    return seen


def publish(core: BrokerService, producer: int, count: int, batch: int) -> None:
    meta_batch = batch if batch > 1 else None
    for _ in range(count):
        core.send(producer, MessageMetadata(num_messages_in_batch=meta_batch), b"x" * batch)
    core.commit()


def delivered(core: BrokerService) -> list[tuple[int, int]]:
    return [e.position for a in core.take_actions() if isinstance(a, Deliver) for e in a.entries]


def test_unbatched_reads_never_pass_the_permits(tmp_path: Path, reads: set) -> None:
    core = BrokerService(DurableStorage(tmp_path / "data"), ManualClock())
    producer = core.create_producer(TOPIC).producer_id
    publish(core, producer, 5_000, 1)
    consumer = core.subscribe(
        TOPIC, "s", "slow", SubType.Shared, initial_position_earliest=True
    ).consumer_id
    got = delivered(core)
    assert got == [] and len(reads) == 0  # no permits yet: nothing read

    granted = 0
    for permits in (10, 1, 37, 250):
        core.flow(consumer, permits)
        granted += permits
        got += delivered(core)
        assert len(got) == granted
        assert len(reads) <= granted
        publish(core, producer, 1_000, 1)  # more arrives while the consumer is saturated
        assert len(reads) <= granted and delivered(core) == []
    core.ack(consumer, got)
    assert len(reads) <= granted
    core.close()


def test_batched_reads_overshoot_by_at_most_one_read(tmp_path: Path, reads: set) -> None:
    core = BrokerService(DurableStorage(tmp_path / "data"), ManualClock())
    max_read = core.settings.dispatcher_max_read_batch_size
    producer = core.create_producer(TOPIC).producer_id
    publish(core, producer, 2_000, 100)  # 200k messages in 2k entries
    consumer = core.subscribe(
        TOPIC, "s", "slow", SubType.Shared, initial_position_earliest=True
    ).consumer_id
    granted = 0
    sent: list[tuple[int, int]] = []
    for _ in range(20):
        core.flow(consumer, 500)
        granted += 500
        sent += delivered(core)
        # Each delivery may pass the permits by less than one entry's messages.
        assert len(sent) * 100 < granted + 100
        assert len(reads) - len(sent) <= max_read
        publish(core, producer, 100, 100)
        assert len(reads) - len(sent) <= max_read
    core.close()
