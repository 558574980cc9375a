"""REST peek / examine-message never inflate a stored message past its declared size or
past max_message_size: a ZLIB bomb costs the broker nothing (issue: 1 GB RSS from 510 KB)."""

from __future__ import annotations

import tracemalloc
import zlib

from pulsarlab.broker.entry import MessageMetadata

BASE = "/admin/v2/persistent/public/default"
_INFLATED = 256 << 20  # what the bomb inflates to, 50 times max_message_size
_BOMB = zlib.compress(bytes(_INFLATED), 9)  # about 250 KB


def _store(broker, topic: str, declared: int) -> None:
    def append(service):
        producer = service.create_producer(f"persistent://public/default/{topic}")
        service.send(producer.producer_id,
                     MessageMetadata(compression="ZLIB", uncompressed_size=declared), _BOMB)
        service.commit()
        service.close_producer(producer.producer_id)

    broker.call(append)


def _peak_while(call) -> tuple[object, int]:
    tracemalloc.start()
    try:
        answer = call()
        return answer, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_zlib_bomb_that_lies_about_its_size_is_sent_as_stored(broker, rest):
    assert rest.put(f"{BASE}/bomb-small/subscription/s").status == 204
    _store(broker, "bomb-small", declared=1000)
    answer, peak = _peak_while(lambda: rest.get(f"{BASE}/bomb-small/subscription/s/position/1"))
    assert answer.status == 200 and answer.body == _BOMB
    assert answer.headers["X-Pulsar-compression"] == "ZLIB"
    assert peak < 16 << 20, f"peak {peak} bytes while answering"


def test_a_declared_size_over_max_message_size_is_not_inflated(broker, rest):
    _store(broker, "bomb-big", declared=_INFLATED)
    answer, peak = _peak_while(
        lambda: rest.get(f"{BASE}/bomb-big/examinemessage?initialPosition=earliest"))
    assert answer.status == 200 and answer.body == _BOMB
    assert answer.headers["X-Pulsar-uncompressed-size"] == str(_INFLATED)
    assert peak < 16 << 20, f"peak {peak} bytes while answering"
